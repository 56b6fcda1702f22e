"""Ranking between search and reranking: the exact symbol first, public before private, the libraries people
use, a named library as a hint, and no near-copies among the passages shown."""

from almanac.rag.chunking import Chunk
from almanac.rag.ranking import (
    RankingConfig,
    arrange,
    asks_whether,
    code_names,
    fix_first,
    is_adapter,
    is_namesake,
    is_predicate,
    is_private,
    library_words,
    name_match,
    names_an_api_as_code,
    parameters_of,
    passage_api,
    question_terms,
    reported_errors,
    symbol_of,
)


def api(symbol: str, text: str, library: str = "/pypi/toolkit", owner: str | None = None) -> Chunk:
    """A chunk as the local index writes an API's documentation (module > [class >] signature)."""
    module = symbol.rsplit(".", 2 if owner else 1)[0]
    path = [f"Module `{module}`"]
    if owner:
        path.append(f"class `{module}.{owner}`")
    path.append(f"`{symbol}(self, *args)`")
    heading = f"## `{symbol}(self, *args)`"
    return Chunk(symbol, f"{heading}\n\n{text}", " > ".join(path), None, library, 0, 10)


FILLER = Chunk("filler", "Unrelated text.", "Changelog", None, "/pypi/toolkit", 0, 3)


def order(question: str, chunks: list[Chunk], scores: list[float], **options: object) -> list[str]:
    """The symbols in their final order; a weak unrelated candidate (fused score 0) sets the scale's floor,
    as the long tail of a real candidate list does."""
    ranked = arrange(question, [*chunks, FILLER], [*scores, 0.0], **options)  # type: ignore[arg-type]
    return [symbol_of(chunks[c.index]) for c in ranked if c.index < len(chunks)]


def test_the_symbol_of_a_passage_is_its_last_heading_and_a_constructor_is_its_class() -> None:
    chunk = Chunk(
        "c", "", "Module `net` > class `net.Client(Base)` > `net.Client.__init__(self, headers=None)`", None, None, 0, 1
    )
    assert symbol_of(chunk) == "net.Client"
    assert symbol_of(Chunk("c", "", "Module `net` > `async net.fetch(url)`", None, None, 0, 1)) == "net.fetch"
    assert symbol_of(Chunk("c", "", "Getting started", None, None, 0, 1)) == ""


def test_a_name_matches_by_the_share_of_its_parts_in_the_question() -> None:
    terms = question_terms("how do I create a temporary directory?")
    assert name_match("TemporaryDirectory", terms) == 1.0
    assert name_match("temporary_file", terms) == 0.5
    assert name_match("flatten", terms) == 0.0
    assert name_match("deepcopy", question_terms("make a deep copy of a nested list")) == 1.0  # words run together


def test_a_little_word_in_a_name_is_a_part_the_question_does_not_ask_for() -> None:
    # `with_suffix` returns a path with its suffix changed, `validator_for` finds a validator: more than the word asked
    terms = question_terms("get the file suffix of a path with pathlib")
    assert name_match("suffix", terms) == 1.0
    assert name_match("with_suffix", terms) == 0.5
    assert name_match("validator_for", question_terms("validate a json schema")) == 0.5
    assert name_match("validate", question_terms("validate a json schema")) == 1.0


def test_a_name_for_what_does_it_matches_the_verb_the_question_asks_for() -> None:
    # a reader reads, a parser parses, a formatter formats, a validator validates
    assert name_match("DictReader", question_terms("read a CSV file into dictionaries")) == 0.5
    assert name_match("ConfigParser", question_terms("parse a config file")) == 1.0
    assert name_match("Formatter", question_terms("format log records")) == 1.0
    assert name_match("Validator", question_terms("validate a document")) == 1.0
    assert name_match("Counter", question_terms("count the items of a list")) == 1.0
    assert name_match("Reader", question_terms("write a file")) == 0.0


def test_the_passage_whose_symbol_the_question_names_comes_first() -> None:
    # The helper shares more words with the question; the function the question names must still lead.
    helper = api("toolkit.walk.deep_walk", "Walk nested lists of lists and yield every item of the nested lists.")
    named = api("toolkit.flatten", "Return one list with the items of the given iterables.")
    ranked = order("how do I flatten nested lists of lists", [helper, named], [12.0, 7.0])
    assert ranked[0] == "toolkit.flatten"


def test_an_api_named_by_the_documentations_word_for_a_question_word_counts_as_named() -> None:
    chunks = [api("toolkit.sample", "Some items of a list."), api("toolkit.shuffle", "Shuffle a list in place.")]
    assert order("randomize the items of a list", chunks, [1.0, 0.7]) == ["toolkit.sample", "toolkit.shuffle"]
    # "randomize" is "shuffle" in the documentation's words (`synonyms.expansion`)
    shuffled = order("randomize the items of a list", chunks, [1.0, 0.7], synonyms=["shuffle"])
    assert shuffled == ["toolkit.shuffle", "toolkit.sample"]


def test_public_apis_come_before_private_helpers_of_the_same_module() -> None:
    private = api("toolkit._pool.PoolHelper.open_connection", "Open a pooled connection.", owner="PoolHelper")
    public = api("toolkit.Connection.open_connection", "Open a connection.", owner="Connection")
    ranked = order("open a connection", [private, public], [10.0, 9.0])
    assert ranked == ["toolkit.Connection.open_connection", "toolkit._pool.PoolHelper.open_connection"]
    assert is_private("a._b.c") and is_private("a._B.c") and not is_private("a.B.__call__")


def test_a_kept_old_version_or_a_plugin_namespace_comes_after_the_current_api() -> None:
    legacy = api("toolkit.v1.main.validate_model", "Validate data against a model.")
    plugin = api("toolkit.mypy.ModelField.validate", "Validate a model field.", owner="ModelField")
    current = api("toolkit.main.Model.model_validate", "Validate data into a model.", owner="Model")
    ranked = order("validate a dict into a model", [legacy, plugin, current], [10.0, 10.0, 9.0])
    assert ranked[0] == "toolkit.main.Model.model_validate"
    assert is_private("pydantic.v1.fields.ModelField") and is_private("six.compat.text_type")
    assert not is_private("compat.text") and not is_private("api.v1")  # a package or an API so named is its own


def test_near_copies_give_way_to_a_different_passage() -> None:
    # Six method signatures that differ in one word outscore the constructor that documents the headers.
    params = "params headers cookies auth follow_redirects timeout extensions url self send request response"
    copies = [
        api(f"net.Client.{verb}", f"Send a `{verb.upper()}` request. {params}", owner="Client")
        for verb in ("get", "put", "post", "patch", "delete", "head")
    ]
    constructor = api("net.Client.__init__", "Default headers sent with every request of this client.", owner="Client")
    ranked = order("which headers are sent by default", [*copies, constructor], [9, 9, 9, 9, 9, 9, 7], limit=6)
    assert "net.Client" in ranked


def test_more_pieces_of_one_apis_documentation_give_way_to_other_apis() -> None:
    # A long docstring split into parts: the parts share few words, yet all document the same API.
    pieces = [
        api("toolkit.serializer", text)
        for text in (
            "Serialize a model to a dict with the chosen mode.",
            "Wrapping: the function receives a handler to call.",
            "Return types are inferred from annotations.",
            "When used on a field, applies to that field only.",
            "The info argument carries context.",
        )
    ]
    to_dict = api("toolkit.Model.to_dict", "Return the model's fields.", owner="Model")
    ranked = order("serialize a model to a dict", [*pieces, to_dict], [9, 9, 9, 9, 9, 6], limit=3)
    assert ranked[:2] == ["toolkit.serializer", "toolkit.Model.to_dict"]
    # however far ahead its pieces score: bonuses (the exact name written as code, its use) lift every piece
    used = {"toolkit.serializer": 1.0}.get
    ranked = order("toolkit.serializer", [*pieces, to_dict], [9, 9, 9, 9, 9, 1], usage=lambda s: used(s, 0.0))
    assert ranked[:2] == ["toolkit.serializer", "toolkit.Model.to_dict"]


def test_a_name_written_as_code_is_matched_exactly_not_by_its_stem() -> None:
    # `model_validator` and `model_validate` share their stems; the question writes one of them
    validator = api("toolkit.model_validator", "Decorate a method that validates the whole model.")
    validate = api("toolkit.Model.model_validate", "Validate an object against the model.", owner="Model")
    used = {"toolkit.model_validator": 1.0}.get  # and code uses the decorator more
    for question in ("model_validate", "how do I call Model.model_validate on a dict?"):
        ranked = order(question, [validator, validate], [9.0, 7.0], usage=lambda s: used(s, 0.0))
        assert ranked[0] == "toolkit.Model.model_validate", question
    assert order("validate a model", [validator, validate], [9.0, 7.0])[0] == "toolkit.model_validator"
    assert code_names("use json.loads or model_dump, e.g. with sha256 on a BaseModel") == {
        "loads",
        "model_dump",
        "sha256",
        "basemodel",
    }
    assert code_names("gather the results of several coroutines") == frozenset()


def test_a_library_written_in_capitals_is_no_api_name_written_as_code() -> None:
    # "JSON" is the `json` library here, not the name of another package's `Json` class — whether the question
    # was routed to it or, as "not JSON serializable" was (to `datetime`), not
    other = api("toolkit.Json", "A field holding a JSON document.")
    loads = api("json.loads", "Deserialize a str holding a JSON document to a Python object.", library="/python/json")
    question, used = "parse a JSON string into a dict", {"json.loads": 1.0}.get
    for hint in ("/python/json", None):
        ranked = order(question, [other, loads], [9.0, 8.0], hint=hint, usage=lambda s: used(s, 0.0))
        assert ranked[0] == "json.loads", hint
    # with no passage of a library of that name among the candidates, it is a name written as code
    parse = api("toolkit.parse", "Parse a string into a dict.")
    assert order(question, [parse, other], [9.0, 8.0])[0] == "toolkit.Json"
    # and a dotted name is an API whatever its last part names: `datetime.time` is no `time` library
    clock = api("toolkit.clock", "A clock object for the day.")
    kind = api("datetime.time", "An idealized time, independent of any particular day.", library="/python/datetime")
    sleep = api("time.sleep", "Suspend execution for the given number of seconds.", library="/python/time")
    assert order("make a datetime.time object", [clock, kind, sleep], [20.0, 5.0, 1.0])[0] == "datetime.time"


def test_an_error_quoted_as_a_traceback_prints_it_is_what_went_wrong_not_a_name_asked_for() -> None:
    assert code_names("TypeError: Object of type datetime is not serializable") == frozenset()
    assert code_names("json.decoder.JSONDecodeError: Expecting value, from json.loads") == {"loads"}
    assert code_names("catch a TypeError raised by int()") == {"typeerror"}  # named, not quoted: asked about


def test_a_common_word_in_an_apis_name_says_less_than_a_rare_one() -> None:
    # "path" names a class, yet says little: every third passage has the word (rarity 0.1 here)
    which = api("shutil.which", "Return the path to an executable which would be run.")
    path = api("pathlib.Path", "A filesystem path; its methods read and write files.")
    question = "find the full path of an executable"
    assert order(question, [which, path], [9.0, 8.5]) == ["pathlib.Path", "shutil.which"]
    rarity = {"path": 0.1}
    ranked = order(question, [which, path], [9.0, 8.5], rarity=lambda stem: rarity.get(stem, 1.0))
    assert ranked == ["shutil.which", "pathlib.Path"]
    # a rare word keeps its full weight: the API the question names still leads
    gather = api("asyncio.gather", "Run awaitables concurrently.")
    staggered = api("asyncio.staggered_race", "Run coroutines with staggered start times and results.")
    ranked = order("gather the results of coroutines", [staggered, gather], [9.0, 7.0], rarity=lambda stem: 1.0)
    assert ranked[0] == "asyncio.gather"


def test_one_api_documented_under_two_module_paths_is_one_api() -> None:
    # `asyncio.Task` is documented where users import it and where it is defined (`asyncio.tasks.Task`).
    where_defined = api("toolkit.tasks.Task", "A future wrapping a running coroutine; cancel it with cancel().")
    where_imported = api("toolkit.Task", "A Future-like object that runs a coroutine; cancellation requests stop it.")
    group = api("toolkit.TaskGroup", "An asynchronous context manager holding a group of tasks.")
    ranked = order("cancel a task group", [where_defined, where_imported, group], [9, 9, 7], limit=2)
    assert ranked == ["toolkit.tasks.Task", "toolkit.TaskGroup"]


def test_exact_repeats_of_a_passage_are_dropped() -> None:
    one = api("toolkit.flatten", "Return one list.")
    again = Chunk("other", one.text, one.title, None, one.library, 1, 10)
    assert len(arrange("flatten", [one, again], [2.0, 1.0])) == 1


def test_a_hinted_library_gains_but_does_not_exclude_the_others() -> None:
    mine = api("strutil.capitalise", "Capitalise words of a string.", library="/python/strutil")
    other = api("regex.split", "Split a string by the occurrences of a pattern.", library="/python/regex")
    scores = [5.0, 5.0]
    assert order("split a string", [mine, other], scores, hint="/python/strutil")[0] == "regex.split"
    tie = [api("strutil.a", "x", library="/python/strutil"), api("regex.b", "x", library="/python/regex")]
    assert order("x", tie[::-1], [1.0, 1.0], hint="/python/strutil")[0] == "strutil.a"
    # a module of the library documented as a library of its own is the library's (`os.path` of `os`)
    inner = api("strutil.path.b", "x", library="/python/strutil.path")
    assert order("x", [tie[1], inner], [1.0, 1.0], hint="/python/strutil")[0] == "strutil.path.b"
    apart = api("strutilx.b", "x", library="/python/strutilx")
    assert order("x", [tie[1], apart], [1.0, 1.0], hint="/python/strutil")[0] == "regex.b"
    # distributions with dotted names are packages of their own (`jaraco.classes` is no part of `jaraco`)
    dotted = api("jaraco.classes.b", "x", library="/pypi/jaraco.classes")
    assert order("x", [tie[1], dotted], [1.0, 1.0], hint="/pypi/jaraco")[0] == "regex.b"


def test_another_packages_adapter_for_the_library_named_is_not_that_library() -> None:
    # "open a tcp connection with aionet": `sockets.aionet.client.open_tcp_connection` lives in a module named after
    # aionet, so the question's words match it as well as aionet's own function, which it is not
    adapter = api("sockets.aionet.client.open_tcp_connection", "Open a TCP connection.", library="/pypi/sockets")
    own = api("aionet.open_connection", "Open a network connection.", library="/python/aionet")
    question = "open a tcp connection with aionet"
    assert order(question, [adapter, own], [2.0, 1.0], hint="/python/aionet") == [own.id, adapter.id]
    # a module of another name is no adapter: the lexical lead stands
    other = api("sockets.client.open_tcp_connection", "Open a TCP connection.", library="/pypi/sockets")
    assert order(question, [other, own], [2.0, 1.0], hint="/python/aionet") == [other.id, own.id]
    assert is_adapter("redis_helpers.Aio_Net.backoff", "/pypi/aio-net")  # written as the module is named
    assert not is_adapter("aionet.streams.open", "/python/aionet")


def test_an_api_named_as_its_library_is_is_that_librarys_namesake() -> None:
    assert is_namesake(api("weaver.Weaver", "The application.", library="/pypi/weaver"))
    assert is_namesake(api("rand.rand", "A random float.", library="/python/rand"))
    assert is_namesake(api("web_kit.applications.WebKit", "The app.", library="/pypi/web-kit"))  # written apart
    assert not is_namesake(api("weaver.Loom", "A loom.", library="/pypi/weaver"))
    assert not is_namesake(api("weaver.Weaver", "Another package's.", library="/pypi/looms"))


def test_a_distinctive_library_name_in_another_librarys_api_name_is_no_match_for_the_api_asked() -> None:
    # "count tokens with tokkit": `from_tokkit_encoder` of another package only refers to the library asked about
    theirs = api("splitters.TextSplitter.from_tokkit_encoder", "Build a splitter counting tokens.", "/pypi/splitters")
    mine = api("tokkit.encoding_for_model", "Return the encoding used by a model.", "/pypi/tokkit")
    question = "count tokens for a model with tokkit"
    config = RankingConfig(library_bonus=0.0, usage_bonus=0.0)
    both, scores = [theirs, mine], [1.0, 0.9]
    assert order(question, both, scores, hint="/pypi/tokkit", distinctive=True, config=config)[0] == mine.id
    # an ordinary word naming a library ("copy a file", `copy`) still names the APIs that do it elsewhere
    assert order(question, both, scores, hint="/pypi/tokkit", config=config)[0] == theirs.id


def test_with_several_libraries_the_ones_people_use_come_first() -> None:
    vendored = api("vendored.tasks.gather_all", "Gather results.", library="/pypi/vendored-internals")
    stdlib = api("asyncio.tasks.gather_all", "Gather results.", library="/python/asyncio")
    assert order("gather results", [vendored, stdlib], [1.0, 0.95])[0] == "asyncio.tasks.gather_all"
    without = RankingConfig(popular_bonus=0.0, stdlib_bonus=0.0)
    assert order("gather results", [vendored, stdlib], [1.0, 0.95], config=without)[0] == "vendored.tasks.gather_all"


def test_a_module_named_in_the_question_is_not_taken_for_the_api_asked_about() -> None:
    module = Chunk("m", "# Module `toolkit`\n\nHelpers for lists.", "Module `toolkit`", None, "/pypi/toolkit", 0, 5)
    named = api("toolkit.flatten", "Return one list with the items of the given iterables.")
    assert order("how do I flatten lists with toolkit", [module, named], [10.0, 8.0])[0] == "toolkit.flatten"


def test_of_passages_sharing_the_words_the_api_code_uses_most_comes_first() -> None:
    # "delete a directory": the SDK's `delete` matches as well lexically; code everywhere calls `rmtree`.
    sdk = api("vendor.memory.Tool.delete", "Delete a directory of the memory store.", "/pypi/vendor", "Tool")
    rmtree = api("shutil.rmtree", "Recursively delete a directory tree.", "/python/shutil")
    used = {"shutil.rmtree": 1.0}.get
    question = "delete a directory and everything inside it"
    assert order(question, [sdk, rmtree], [9.0, 8.0])[0] == "vendor.memory.Tool.delete"
    assert order(question, [sdk, rmtree], [9.0, 8.0], usage=lambda s: used(s, 0.0))[0] == "shutil.rmtree"


def test_a_packages_own_use_of_a_helper_is_no_sign_developers_use_it_unless_the_package_is_asked_about() -> None:
    # "gather the results": the vendor's helper matches better lexically and the vendor's own modules call it; no
    # other package does, while code everywhere calls `asyncio.gather`
    helper = api("vendor.utils.gather_results", "Gather the results of coroutines.", "/pypi/vendor")
    gather = api("asyncio.tasks.gather", "Return a future aggregating results.", "/python/asyncio")
    every = {"vendor.utils.gather_results": 1.0, "asyncio.tasks.gather": 0.6}.get
    others = {"asyncio.tasks.gather": 0.6}.get
    usage, foreign = (lambda s: every(s, 0.0)), (lambda s: others(s, 0.0))
    question = "gather the results of coroutines"
    assert order(question, [helper, gather], [9.0, 8.0], usage=usage)[0] == "vendor.utils.gather_results"
    assert order(question, [helper, gather], [9.0, 8.0], usage=usage, foreign=foreign)[0] == "asyncio.tasks.gather"
    # within the package asked about, its own use says how central the helper is to it
    asked = order(question, [helper, gather], [9.0, 8.0], usage=usage, foreign=foreign, focus="/pypi/vendor")
    assert asked[0] == "vendor.utils.gather_results"


def test_an_api_the_chat_model_expects_comes_first_wherever_it_is_defined() -> None:
    which = api("shutil.which", "Given a command, return the path which conforms to the given mode.", "/python/shutil")
    finder = api("toolkit.locate_binary", "Find the full path of an executable on the PATH.")
    question = "find the full path of an executable on PATH"
    assert order(question, [finder, which], [9.0, 7.0])[0] == "toolkit.locate_binary"
    assert order(question, [finder, which], [9.0, 7.0], expected=["shutil.which"])[0] == "shutil.which"
    # the name where it is used matches the symbol where it is defined
    gather = api("asyncio.tasks.gather", "Return a future aggregating results.", "/python/asyncio")
    assert order("run them together", [finder, gather], [9.0, 7.0], expected=["asyncio.gather"])[0] == (
        "asyncio.tasks.gather"
    )
    # the path users import it by, where the module defining it is one level deeper (`sqlalchemy.orm.Session` is
    # `sqlalchemy.orm.session.Session`)
    commit = api("db.orm.session.Session.commit", "Flush pending changes and commit.", "/pypi/db", "Session")
    other = api("db.orm.session.SessionTransaction.commit", "Commit it.", "/pypi/db", "SessionTransaction")
    first = order("save my changes", [other, commit], [9.0, 7.0], expected=["db.orm.Session.commit"])[0]
    assert first == "db.orm.session.Session.commit"
    first = order("save my changes", [other, commit], [9.0, 7.0], expected=["db.sql.Session.commit"])[0]
    assert first == "db.orm.session.SessionTransaction.commit"  # another module's


def test_in_the_library_asked_about_the_api_its_documentation_calls_most_comes_first() -> None:
    # "create a database engine from a url": the URL class matches as well; the docs everywhere call create_engine
    url = api("orm.engine.url.URL", "The components of a URL used to connect to a database engine.", "/pypi/orm")
    create = api("orm.engine.create_engine", "Create a new Engine instance from a database URL.", "/pypi/orm")
    central = {"orm.engine.create_engine": 1.0}.get
    question = "create a database engine from a url"
    assert order(question, [url, create], [9.0, 8.0])[0] == "orm.engine.url.URL"
    options = {"mentions": lambda s: central(s, 0.0)}
    assert order(question, [url, create], [9.0, 8.0], focus="/pypi/orm", **options)[0] == "orm.engine.create_engine"
    # only for the library the question is about: centrality is not comparable across libraries
    assert order(question, [url, create], [9.0, 8.0], focus="/pypi/other", **options)[0] == "orm.engine.url.URL"
    assert order(question, [url, create], [9.0, 8.0], **options)[0] == "orm.engine.url.URL"


def test_one_apis_many_pieces_do_not_crowd_the_others_out_of_the_pool() -> None:
    # A long class's forty pieces all outscore the exception the question is after.
    pieces = [api("web.App", f"Part {n} of the application's documentation.") for n in range(40)]
    error = api("web.HTTPException", "Raise it to return an error response with a status code.")
    ranked = order("return a 404 error", [*pieces, error], [*[9.0] * 40, 5.0], limit=6)
    assert ranked[:2] == ["web.App", "web.HTTPException"]


def signature(heading: str, text: str, library: str = "/pypi/toolkit") -> Chunk:
    """A chunk whose last heading is `heading` as written (a signature with its parameters, a class with its
    bases), under its module's heading."""
    name = symbol_of(Chunk("", "", heading, None, None, 0, 1))
    title = f"Module `{name.rsplit('.', 1)[0]}` > {heading}" if "." in name else f"Module `builtins` > {heading}"
    return Chunk(name + heading, f"## {heading}\n\n{text}", title, None, library, 0, 10)


def test_an_error_the_question_reports_gains_nothing_for_its_name_and_the_fix_comes_first() -> None:
    error = signature("class `KeyError(LookupError)`", "Mapping key not found.", library="/python/builtins")
    fix = signature("`toolkit.lookup(mapping, key, default=None)`", "Return the value for key, else default.")
    assert reported_errors("KeyError when reading a key that may be missing") == {"keyerror"}
    assert order("KeyError when reading a key that may be missing", [fix, error], [9.0, 7.0])[0] == "toolkit.lookup"
    # caught, raised or handled, the error is what the question asks about
    assert reported_errors("how do I catch a KeyError from a lookup") == frozenset()
    assert order("how do I catch a KeyError from a lookup", [fix, error], [9.0, 7.0])[0] == "KeyError"


def test_an_api_with_a_parameter_the_question_names_comes_first() -> None:
    head = signature("`toolkit.head(url, headers=None)`", "Send a HEAD request.")
    fetch = signature("`toolkit.fetch(url, *, follow_redirects=False, **kwargs)`", "Fetch a resource.")
    assert parameters_of(fetch) == ["url", "follow_redirects"]
    assert parameters_of(signature("class `toolkit.Client(Base)`", "A client.")) == []  # bases are no parameters
    assert order("how do I follow redirects", [head, fetch], [9.0, 8.0])[0] == "toolkit.fetch"


def test_a_parameter_named_like_the_library_asked_about_is_no_match() -> None:
    # "FastAPI" is the library: `fail_fast` shares its word `fast`, not what the question asks
    websocket = signature("`fastapi.websocket(path)`", "Declare a websocket route.", library="/pypi/fastapi")
    route = signature("`fastapi.route(path, fail_fast=None)`", "Declare a route.", library="/pypi/fastapi")
    assert library_words("use FastAPI", "fastapi") >= {"fastapi", "fast", "api"}
    ranked = order("use FastAPI for this", [websocket, route], [9.0, 8.5], hint="/pypi/fastapi")
    assert ranked[0] == "fastapi.websocket"


def test_the_members_of_two_lower_case_classes_are_two_apis() -> None:
    date = api("datetime.date.fromisoformat", "Construct a date from an ISO string.", "/python/datetime", "date")
    again = api("datetime.date.fromisoformat", "Raises ValueError for a malformed one.", "/python/datetime", "date")
    moment = api("datetime.datetime.fromisoformat", "Build a datetime from ISO text.", "/python/datetime", "datetime")
    assert passage_api(date) == "datetime.date.fromisoformat" != passage_api(moment)
    assert passage_api(api("asyncio.tasks.gather", "Run awaitables.")) == "asyncio.gather"  # a module is no class
    ranked = order("fromisoformat", [date, again, moment], [9.0, 8.9, 8.0])
    assert ranked == ["datetime.date.fromisoformat", "datetime.datetime.fromisoformat", "datetime.date.fromisoformat"]


def test_a_deprecated_api_comes_after_the_current_one() -> None:
    old = signature("`toolkit.Model.json(self)` (deprecated)", "**Deprecated.** Use `model_dump_json` instead.")
    new = signature("`toolkit.Model.model_dump_json(self, *, indent=None)`", "Serialise the model to JSON.")
    assert order("serialize the model to a json string", [old, new], [9.0, 8.5])[0] == "toolkit.Model.model_dump_json"


def test_a_lower_case_class_the_question_names_counts_as_its_members_owner() -> None:
    time = api("datetime.time.replace", "Return a time with new values.", "/python/datetime", "time")
    moment = api("datetime.datetime.replace", "Return a datetime with new values.", "/python/datetime", "datetime")
    assert (
        order("replace the tzinfo of a datetime object", [time, moment], [9.0, 9.0])[0] == "datetime.datetime.replace"
    )


def test_a_question_asking_whether_something_holds_is_answered_first_by_an_api_that_says_yes_or_no() -> None:
    handler = api("toolkit.log.Handler", "Dispatch records to a destination.")
    has = api("toolkit.log.Logger.hasHandlers", "Checks to see if this logger has any handlers.", owner="Logger")
    gists = {
        "toolkit.log.Handler": "toolkit.log.Handler: Handler instances dispatch records to a destination.",
        "toolkit.log.Logger.hasHandlers": "toolkit.log.Logger.hasHandlers: Checks to see if this logger has handlers.",
    }

    def gist(chunk: Chunk) -> str:
        return gists.get(symbol_of(chunk), "")

    assert asks_whether("python logging check if handler exist") and asks_whether("test whether a file is empty")
    assert not asks_whether("add a handler to a logger")
    assert is_predicate("os.path.exists: Return `True` if path refers to an existing path.")
    assert is_predicate("pathlib.Path.exists: Whether this path exists.")
    assert not is_predicate("re.match: If zero or more characters at the beginning of string match the pattern…")
    asked = "python logging check if handler exist"
    assert order(asked, [handler, has], [9.0, 8.8], gist=gist)[0] == "toolkit.log.Logger.hasHandlers"
    # asked to do something, not whether it holds: the predicate gains nothing
    assert order("add a handler to a logger", [handler, has], [9.0, 8.8], gist=gist)[0] == "toolkit.log.Handler"


def test_an_error_the_question_reports_comes_after_the_first_passage_that_may_fix_it() -> None:
    error = signature("class `toolkit.ReadTimeout(TimeoutException)`", "The read timed out on a slow server.")
    fix = signature("class `toolkit.Timeout(timeout=5.0)`", "Timeout configuration: how long to wait.")
    other = signature("class `toolkit.PoolTimeout(TimeoutException)`", "No connection from the pool in time.")
    asked = "toolkit.ReadTimeout on a slow server, how do I wait longer"
    assert fix_first(asked, [error, other, fix]) == [1, 0, 2]  # the first passage that is not the error reported
    assert fix_first(asked, [fix, error]) == [0, 1]
    assert fix_first("how do I catch toolkit.ReadTimeout", [error, fix]) == [0, 1]  # caught: it is what is asked
    assert fix_first("wait longer on a slow server", [error, fix]) == [0, 1]  # no error reported


def test_a_question_naming_a_candidate_as_code_names_it_precisely_unless_an_acronym_or_a_reported_error() -> None:
    client = api("toolkit.AsyncClient", "An asynchronous HTTP client.")
    head = api("toolkit.AsyncClient.head", "Send a `HEAD` request.", owner="AsyncClient")
    timeout = signature("class `toolkit.ReadTimeout(TimeoutException)`", "The read timed out.")
    loader = api("yamlkit.YAML", "A YAML loader.", "/pypi/yamlkit")
    assert names_an_api_as_code("set default headers on a toolkit AsyncClient", [head, client])
    assert not names_an_api_as_code("set default headers on a toolkit client", [head, client])
    assert not names_an_api_as_code("toolkit.ReadTimeout on a slow server", [timeout, head])  # what went wrong
    assert not names_an_api_as_code("read a YAML file", [loader])
    assert not names_an_api_as_code("use toolkit", [client], hint="/pypi/toolkit")  # the library's own name
