"""Between search and reranking: order the fused candidates the way a developer asking about an API wants
them. Pure functions over chunks and their fused scores.

Each candidate's fused score is scaled to the candidates' range (0–1) and adjusted:

- **the exact symbol first** — a passage documenting an API (not a module page) whose name is a word of the question
  (`gather` in "gather the results of several coroutines"), or two of its words run together (`deepcopy`
  in "make a deep copy"), or a word the documentation uses for one of the question's (`synonyms.py`: `shuffle`
  for "randomize", `suffix` for "extension"), gains `symbol_bonus` (in proportion to the share of the name's parts the
  question has: `TemporaryDirectory` → "temporary", "directory"; a little word, `with_suffix`'s `with`, is a part no
  question asks for; each word weighed by how rare it is among the
  passages, so that a common word such as "path" or "random" says little for `pathlib.Path` or `random.Random`),
  and a little more when its class is named too (`AsyncClient` for `AsyncClient.stream`);
- **a name written as code** — an API whose name the question writes as code (`model_validate`, `loads` in
  `json.loads`: with an underscore, a digit or an inner capital, or dotted; `code_names`) gains `code_bonus`: the
  exact name, where the exact-symbol bonus matches stems (`model_validator` and `model_validate` alike); a library's
  name is none, however written ("JSON" in "not JSON serializable" is `json`, not sqlalchemy's `JSON` type), when the
  question writes it as a word of its own and a candidate is from that library (`api_names_written`); a question
  naming a candidate so is precise, and the dense reorder after this order weighs similarity less for it
  (`names_an_api_as_code`);
- **a library hint** — passages of the library the question names gain `library_bonus` when the search
  ran over every library (a name that is an ordinary word is a hint, never a filter); a distinctive library
  name is no word of another library's API name (`from_tiktoken_encoder` for "count tokens with tiktoken" refers
  to the library asked about, it is not the API asked for);
- **the libraries people use** — with several libraries searched, passages of the everyday standard
  library and the most-used packages (`priority.MOST_ASKED`) gain `popular_bonus`, other standard-library
  modules `stdlib_bonus`: an unnamed library is far more often `re` or `httpx` than a vendored internal;
- **the APIs code uses** — given the index's `Popularity`, a passage documenting an API gains
  `usage_bonus` × how widely installed code uses it (0–1): of the many passages sharing a question's words,
  the one every program calls (`shutil.rmtree`) is far more often meant than a vendor SDK's `delete`; outside the
  library asked about, by other packages' code only (`foreign`: langchain_core's calls of its own
  `gather_with_concurrency` are no sign that developers use it);
- **the centre of the library asked about** — for the passages of the library the question is about (`focus`:
  the one named, or the only one searched), the usage above is at least how many of its other APIs call the API
  in their documentation (`mentions.Mentions`: `create_engine` in SQLAlchemy's, `model_dump` in pydantic's),
  which knows the packages that little installed code calls;
- **the APIs the chat model expects** — with a chat model, the query parser names the APIs it expects to
  answer the question (`ParsedQuery.apis`); a passage documenting one of them gains `expected_bonus`;
- **a parameter the question names** — an API whose signature has a parameter named by the question's words
  (`follow_redirects` for "follow redirects with httpx", `timeout` for "kill a subprocess that runs longer than a
  timeout") gains `parameter_bonus` × that match (weighed by rarity like the symbol's; the words of the library's
  own name, `fail_fast` for "FastAPI", do not count);
- **asked whether** — a question asking whether something holds ("check if a path exists", `asks_whether`) gives
  `predicate_bonus` to an API whose documentation opens by saying it answers yes or no ("Return True if…",
  "Whether…", `is_predicate`, read from its gist: `FieldIndex.gist`);
- **the error reported is not the API asked for** — an exception class the question names as what went wrong
  ("KeyError when reading…", "httpx.ReadTimeout on a slow server", `reported_errors`; not "catch a KeyError")
  gains nothing for its name: the developer asks for the fix; and whatever the order after it (a reorder by
  similarity finds the error's own passage, which repeats its message), it comes after the first passage that
  is no reported error (`fix_first`);
- **public before private, current before deprecated** — an API with a `_private` part in its dotted name (or a
  method of a private class) loses `private_penalty`; one its source deprecates (`deprecation.py`: pydantic's
  `BaseModel.dict` for `model_dump`) loses `deprecated_penalty`;
- **diversity** — exact repeats of a passage are dropped, and the order is chosen greedily, each next
  passage by its score less `diversity` × its word overlap (Jaccard) with the most similar passage
  already chosen, so six near-copies (six signatures of one client's methods) do not fill the answer; another
  piece of an API already chosen comes after every other API (`passage_api`: the members of two classes are two
  APIs, `datetime.date.fromisoformat` and `datetime.datetime.fromisoformat`, whatever their classes' case).

The symbol of a passage is the name in the last heading of its title, as the local index writes them
(`Module `httpx` > class `httpx.AsyncClient(BaseClient)` > `async httpx.AsyncClient.get(...)``), so
passages from sources without such headings are only scaled, deduplicated and diversified.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from almanac.rag.bm25 import tokenize
from almanac.rag.chunking import Chunk, is_deprecated_title
from almanac.rag.popularity import api_key
from almanac.rag.priority import MOST_ASKED, library_name

_SYMBOL = re.compile(r"`(?:class |async )*([A-Za-z_][\w.]*)")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RAW = re.compile(r"[a-z0-9]+")
_CODE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_BARE = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?![\w.])")  # a word not part of a dotted name
# An error as a traceback prints it ("TypeError: Object of type datetime is not JSON serializable"): what went
# wrong, quoted, not an API the question asks to use
_RAISED = re.compile(r"\b[\w.]*(?:Error|Exception|Warning)(?=:\s)")
# The verbs that make an exception the question names its object ("catch a TypeError", "raise a ValueError"): asked
# about, not reported as what went wrong
_HANDLED = frozenset(
    {"catch", "catching", "handle", "handling", "raise", "raising", "throw", "throwing", "except", "define", "subclass"}
)
_CAPITALS = re.compile(r"\b[A-Z][A-Z0-9]+\b")  # an acronym ("YAML", "URL", "HTTP2")
_EXCEPTION = re.compile(r"(?:Error|Exception|Warning|Timeout|Exit)\b")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_LITTLE = frozenset({"with", "as", "to", "from", "for", "of", "in", "on", "by", "into", "is", "at"})
_POPULAR = frozenset(library_name(name) for name in MOST_ASKED)
# A question asking whether something holds ("check if a path exists", "test whether a string is numeric")
_WHETHER = re.compile(r"\bwhether\b|\b(?:check|test|determin|tell|see|verif|know|detect|find out)\w*\s+if\b", re.I)
# An API whose documentation opens by saying it answers yes or no ("Return True if …", "Whether this path exists.")
_PREDICATE = re.compile(
    r"(?:Returns? (?:`?true`?|whether|a bool(?:ean)?)|Tests? (?:if|whether)|Checks?(?: to see)? (?:if|whether)"
    r"|Whether|Determines? (?:if|whether)|True if|Is)\b",
    re.I,
)


@dataclass(frozen=True, slots=True)
class RankingConfig:
    """Weights, in units of the scaled fused score (the best candidate has 1, the worst 0)."""

    symbol_bonus: float = 0.5
    owner_bonus: float = 0.1
    library_bonus: float = 0.3
    private_penalty: float = 0.3
    diversity: float = 0.5
    popular_bonus: float = 0.2  # a library developers most often ask about (`priority.MOST_ASKED`)
    stdlib_bonus: float = 0.1  # any other standard-library module
    usage_bonus: float = 0.6  # an API all the indexed code uses (`popularity.Popularity.score` 1)
    expected_bonus: float = 0.6  # an API the chat model expects to answer it (`ParsedQuery.apis`); chosen on dev
    code_bonus: float = 1.0  # an API whose name the question writes as code (`model_validate`, `json.loads`)
    parameter_bonus: float = 0.2  # a parameter named by the question's words (`follow_redirects`); chosen on dev
    deprecated_penalty: float = 0.3  # an API its source deprecates (`deprecation.py`), as much as a private one
    predicate_bonus: float = 0.2  # a yes-or-no API (`is_predicate`) for a question asking whether
    # another package's module named after the library asked about (`is_adapter`), whatever that name's hint weighs:
    # as much as the hint's full bonus (half of it, as an ordinary word's hint weighs, was worse on dev)
    adapter_penalty: float = 0.3


@dataclass(frozen=True, slots=True)
class Candidate:
    """A candidate in the final order: its position in the input and its adjusted score."""

    index: int
    score: float


def symbol_of(chunk: Chunk) -> str:
    """The dotted name a passage documents (from its title's last heading); a constructor is its class."""
    match = _SYMBOL.search(chunk.title.rsplit(" > ", 1)[-1])
    return re.sub(r"\.__init__$", "", match.group(1)) if match else ""


def passage_api(chunk: Chunk) -> str:
    """What identifies the API a passage documents among the candidates: `popularity.api_key` of its symbol, with
    its class kept whenever its heading says the owner is a class — a lower-case one included, which a dotted
    name alone cannot tell from a module (`datetime.date.fromisoformat` and `datetime.datetime.fromisoformat`
    are two APIs, `asyncio.tasks.gather` and `asyncio.gather` one)."""
    symbol = symbol_of(chunk)
    parts = symbol.split(".")
    if len(parts) > 2 and owned_by_class(chunk):
        return f"{parts[0]}.{parts[-2]}.{parts[-1]}"
    return api_key(symbol)


def owned_by_class(chunk: Chunk) -> bool:
    """Whether the API a passage documents is a class's member, as the heading above its own says (`class
    `datetime.date`` above `datetime.date.fromisoformat`), whatever the class's name looks like."""
    headings = chunk.title.split(" > ")
    owner = symbol_of(chunk).rpartition(".")[0]
    return bool(owner) and len(headings) > 1 and headings[-2].startswith((f"class `{owner}`", f"class `{owner}("))


def same_api(symbol: str, name: str) -> bool:
    """Whether a passage's symbol is the API `name`: the same dotted name, or the same package and last name
    with the name's other parts in the symbol in order — the path users import it by, where it is defined
    deeper (`asyncio.tasks.gather` is `asyncio.gather`, `httpx._client.AsyncClient.get` is
    `httpx.AsyncClient.get`, `sqlalchemy.orm.session.Session.commit` is `sqlalchemy.orm.Session.commit`)."""
    if not symbol or not name:
        return False
    if symbol == name:
        return True
    wanted, parts = name.split("."), symbol.split(".")
    if len(wanted) < 2 or parts[0] != wanted[0] or parts[-1] != wanted[-1]:
        return False
    inner = iter(parts[1:-1])
    return all(part in inner for part in wanted[1:-1])  # in order: each found after the one before


def run_together(question: str) -> set[str]:
    """Each two consecutive words of a question run together, lower-case: how a name such as `deepcopy`
    ("a deep copy") or `extractall` ("extract all members") is asked for."""
    words = _RAW.findall(question.lower())
    return {a + b for a, b in itertools.pairwise(words)}


def code_names(question: str) -> frozenset[str]:
    """The API names a question writes as code, lower-case: an identifier with an underscore, a digit or a capital
    inside it (`model_validate`, `sha256`, `BaseModel`), and the last part of a dotted name (`json.loads` →
    loads) — exact names, where a question's words match a name only by their stems (`model_validator` shares
    `model_validate`'s)."""
    names = set()
    for token in _CODE.findall(_RAISED.sub(" ", question)):
        name = token.rsplit(".", 1)[-1]
        coded = "." in token or "_" in name or any(c.isdigit() or c.isupper() for c in name[1:])
        if coded and len(name) > 1:
            names.add(name.lower())
    return frozenset(names)


def reported_errors(question: str) -> frozenset[str]:
    """The names, lower-case, a question may report as what went wrong: each name written as code ("KeyError when
    reading a key", "httpx.ReadTimeout on a slow server", "RecursionError: maximum recursion depth") unless a
    verb before it makes it the question's object ("catch a KeyError", "raise a custom ValueError"). Only an
    exception's passage is matched against them (`is_exception`): the error a developer pastes says what failed,
    the fix they ask for is another API."""
    words = re.findall(r"[\w.]+", question)
    reported = set()
    for position, token in enumerate(words):
        name = token.rsplit(".", 1)[-1]
        coded = "." in token or any(c.isupper() for c in name[1:])
        if coded and not any(word.lower() in _HANDLED for word in words[max(0, position - 3) : position]):
            reported.add(name.lower())
    return frozenset(reported)


def asks_whether(question: str) -> bool:
    """Whether a question asks if something holds ("check if a path exists", "python logging check if handler
    exist", "test whether a number is prime"): what answers it is an API that says yes or no (`is_predicate`)."""
    return bool(_WHETHER.search(question))


def is_predicate(gist: str) -> bool:
    """Whether an API's gist (`FieldIndex.gist`: its dotted name, a colon, the first sentence of its documentation)
    says it answers yes or no: "Return True if path refers to an existing path", "Whether this path exists.",
    "Checks to see if this logger has any handlers configured"."""
    _, colon, summary = gist.partition(": ")
    return bool(colon) and bool(_PREDICATE.match(summary))


def fix_first(question: str, chunks: Sequence[Chunk]) -> list[int]:
    """The order of `chunks` (best first) with the exceptions the question reports as what went wrong
    (`reported_errors`, `is_exception`) after the first passage that is none: a developer pasting
    "RecursionError: maximum recursion depth exceeded" asks for the fix (`sys.setrecursionlimit`); the error's own
    documentation, which repeats its message word for word, comes next."""
    reported = reported_errors(question)
    order = list(range(len(chunks)))
    if not reported:
        return order
    failed = [is_exception(chunk) and symbol_of(chunk).rsplit(".", 1)[-1].lower() in reported for chunk in chunks]
    fix = next((i for i in order if not failed[i]), None)
    if fix is None or fix == 0:
        return order
    return [fix, *(i for i in order if i != fix)]


def is_exception(chunk: Chunk) -> bool:
    """Whether a passage documents an exception or warning class: its name or a base class in its heading ends
    like one (`KeyError`, `httpx.ReadTimeout(TimeoutException)`)."""
    heading = chunk.title.rsplit(" > ", 1)[-1]
    return heading.startswith("class ") and bool(_EXCEPTION.search(heading))


_PARAMETER = re.compile(r"[(,]\s*\**([A-Za-z_]\w*)\s*(?=[:=,)])")
_UNNAMED = frozenset({"self", "cls", "args", "kwargs", "kwds", "kw"})


def parameters_of(chunk: Chunk) -> list[str]:
    """The parameter names in the signature a passage's heading shows (`subprocess.run(*popenargs, input=None,
    timeout=None, check=False)` → input, timeout, check); none for a class heading, whose parentheses hold its
    bases, nor for `self`, `cls`, `*args`, `**kwargs`."""
    heading = chunk.title.rsplit(" > ", 1)[-1]
    if heading.startswith("class ") or "(" not in heading:
        return []
    signature = heading[heading.index("(") :]
    return [name for name in _PARAMETER.findall(signature) if name not in _UNNAMED]


def library_words(question: str, library: str) -> frozenset[str]:
    """The stems the question's writing of a library's name makes (`FastAPI` → fastapi, fast, api; `PyJWT` →
    pyjwt, py, jwt): in an API's parameter they name the library, not what is asked."""
    wanted = library.replace("-", "").replace("_", "").lower()
    found = {
        stem
        for word in re.findall(r"[\w-]+", question)
        if word.replace("-", "").replace("_", "").lower() == wanted
        for stem in tokenize(word)
    }
    return frozenset(found | set(name_stems(library)))


def question_terms(question: str) -> frozenset[str]:
    """The stemmed words of a question, identifiers also split into their parts (as BM25 tokenises), and
    the stems of its words run together (`run_together`)."""
    joined = (stem for word in run_together(question) for stem in tokenize(word)[:1])
    return frozenset([*tokenize(question), *joined])


def name_stems(name: str) -> list[str]:
    """The stemmed words of a name's parts, as a question's terms are stemmed (`basicConfig` → basic,
    config); stopword parts (`as`, `all`) drop out."""
    return [stem for part in _PART.findall(name) for stem in tokenize(part)[:1]]


def name_match(name: str, terms: frozenset[str], rarity: Callable[[str], float] | None = None) -> float:
    """The share (0–1) of a name's parts that are words of the question: `gather` 1, `get_close_matches`
    for "closest matching word" 1/3, each part weighed by `rarity` when given (a common word such as `path`
    in `Path` counts less). A little word in a name (`with_suffix`, `validator_for`, `as_uri`: `_LITTLE`) is a part
    the question does not ask for, whatever it says: it makes the name something more than its other words
    (a path with its suffix changed). Stopword-only names never match."""
    stems = name_stems(name)
    if not stems:
        return 0.0
    weigh = rarity or (lambda stem: 1.0)
    whole = tokenize(name)[:1]
    if whole and whole[0] in terms:
        return weigh(whole[0])
    parts = _PART.findall(name)
    doers = {stem for part in parts for stem in tokenize(part)[:1] if doer_of(part.lower()) & terms}
    little = sum(1 for part in parts if part.lower() in _LITTLE)
    return sum(weigh(stem) for stem in stems if stem in terms or stem in doers) / (len(stems) + little)


def doer_of(stem: str) -> frozenset[str]:
    """The verb an agent noun is made of, stemmed: `reader` → read, `parser` → pars(e), `formatter` → format,
    `validator` → valid(ate); a question asks to read, parse or validate what a `DictReader`, a `ConfigParser`
    or a `Validator` does. Empty for any other word."""
    if len(stem) < 5 or stem[-2:] not in ("er", "or"):
        return frozenset()
    base = stem[:-2]
    verbs = {base, base + "e", stem[:-1]}
    if len(base) > 2 and base[-1] == base[-2]:
        verbs.add(base[:-1])  # formatter → format, runner → run
    if stem.endswith("ator"):
        verbs.add(stem[:-3] + "e")  # validator → validate
    return frozenset(found for verb in verbs for found in tokenize(verb)[:1])


def prior(library: str, config: RankingConfig = RankingConfig()) -> float:
    """The bonus of a library's passages when several libraries compete (see the module docstring)."""
    if library_name(library) in _POPULAR:
        return config.popular_bonus
    return config.stdlib_bonus if library.startswith("/python/") else 0.0


# Namespaces inside a package that its users do not import from: a kept copy of an old major version
# (`pydantic.v1`), compatibility shims, vendored copies, type-checker plugins, the package's own tests.
_ASIDE = frozenset({"v1", "compat", "vendor", "vendored", "mypy", "tests", "conftest", "legacy", "deprecated"})


def is_private(symbol: str) -> bool:
    """Whether a dotted name has a private part (`_name`, not a dunder such as `__call__`) or lies in a
    namespace set aside from the package's API (`pydantic.v1.…`, `….compat.…`, `….mypy.…`)."""
    parts = symbol.split(".")
    return any(part.startswith("_") and not part.endswith("__") for part in parts) or is_aside(".".join(parts[:-1]))


def is_aside(module: str) -> bool:
    """Whether a dotted module name lies in a namespace set aside from its package's API (`pydantic.v1`,
    `….compat.…`, `….tests.…`)."""
    return any(part in _ASIDE for part in module.split(".")[1:])


def arrange(
    question: str,
    chunks: Sequence[Chunk],
    scores: Sequence[float],
    *,
    hint: str | None = None,
    config: RankingConfig = RankingConfig(),
    limit: int | None = None,
    usage: Callable[[str], float] | None = None,
    expected: Sequence[str] = (),
    rarity: Callable[[str], float] | None = None,
    focus: str | None = None,
    mentions: Callable[[str], float] | None = None,
    distinctive: bool = False,
    synonyms: Sequence[str] = (),
    gist: Callable[[Chunk], str] | None = None,
    foreign: Callable[[str], float] | None = None,
) -> list[Candidate]:
    """The candidates (`chunks` with their fused `scores`, best first) in their final order, at most
    `limit`; `hint` is the library ID whose passages gain `library_bonus`, `usage` how widely code uses an
    API, 0–1, `expected` the APIs the chat model named, `rarity` how telling each (stemmed) question word is
    in an API's name, 0–1, `focus` the library the question is about and `mentions` how central an API is in
    its library's documentation, 0–1, `distinctive` whether the hint's name is a word only that library's
    passages use, `synonyms` the documentation's words for the question's and `gist` what each candidate's API is
    for, in a line (`FieldIndex.gist`) (see the module docstring)."""
    if not chunks:
        return []
    # the documentation's words for the question's (`synonyms.expansion`) name an API as the question's own do
    terms = question_terms(question) | frozenset(stem for word in synonyms for stem in tokenize(word)[:1])
    # a distinctive library's name names that library: in another library's API name (`from_tiktoken_encoder`
    # for "count tokens with tiktoken") it is a reference to it, not the API asked for
    elsewhere = terms - set(name_stems(library_name(hint))) if hint is not None and distinctive else terms
    written = api_names_written(question, chunks, hint)  # a library's name, however written, is none
    reported = reported_errors(question)
    # a parameter named like the library asked about (`fail_fast` for "FastAPI") is no word of the question's ask
    about = hint or focus
    named = terms - library_words(question, library_name(about)) if about else terms
    matched: dict[str, float] = {}  # candidates share most parameter names (`timeout`, `headers`): each matched once

    def parameter(name: str) -> float:
        if name not in matched:
            matched[name] = name_match(name, named, rarity)
        return matched[name]

    whether = asks_whether(question)
    several = len({chunk.library for chunk in chunks}) > 1
    best, worst = max(scores), min(scores)
    spread = best - worst
    adjusted: list[float] = []
    for chunk, score in zip(chunks, scores, strict=True):
        value = (score - worst) / spread if spread > 0 else 1.0
        symbol = symbol_of(chunk)
        if symbol and not chunk.title.rsplit(" > ", 1)[-1].startswith("Module "):  # a module is no API name
            *owners, name = symbol.split(".")
            words = terms if hint is None or within(chunk.library, hint) else elsewhere
            # the error the question reports is what went wrong, not the API it asks for: its name earns nothing
            failed = name.lower() in reported and is_exception(chunk)
            value += 0.0 if failed else config.symbol_bonus * name_match(name, words, rarity)
            if name.lower() in written and not failed:
                value += config.code_bonus
            value += config.parameter_bonus * max((parameter(p) for p in parameters_of(chunk)), default=0.0)
            if owners and (owners[-1][:1].isupper() or owned_by_class(chunk)):
                value += config.owner_bonus * name_match(owners[-1], words, rarity)
            if is_private(symbol):
                value -= config.private_penalty
            if is_deprecated_title(chunk.title):
                value -= config.deprecated_penalty
            asked = focus is not None and within(chunk.library, focus)
            used = (usage if asked or foreign is None else foreign)(symbol) if usage is not None else 0.0
            if mentions is not None and asked:
                used = max(used, mentions(symbol))
            value += config.usage_bonus * used
            if any(same_api(symbol, name) for name in expected):
                value += config.expected_bonus
            if gist is not None and whether and is_predicate(gist(chunk)):
                value += config.predicate_bonus
        if hint is not None and within(chunk.library, hint):
            value += config.library_bonus
        elif hint is not None and is_adapter(symbol, hint):
            value -= config.adapter_penalty
        if several and chunk.library:
            value += prior(chunk.library, config)
        adjusted.append(value)
    return diversify(chunks, adjusted, config.diversity, len(chunks) if limit is None else limit)


def api_names_written(question: str, chunks: Sequence[Chunk], hint: str | None = None) -> frozenset[str]:
    """The API names the question writes as code (`code_names`) that are no library's name: the library asked about
    (`hint`: "a JSON string" asks about `json`), and a candidate's library the question names as a word of its own
    ("not JSON serializable" named sqlalchemy's `JSON` type; a dotted `datetime.time` is an API)."""
    libraries = {library_name(chunk.library).replace("-", "") for chunk in chunks if chunk.library}
    named_libraries = libraries & {word.lower() for word in _BARE.findall(question)}
    return code_names(question) - named_libraries - ({library_name(hint).replace("-", "")} if hint else set())


def names_an_api_as_code(question: str, chunks: Sequence[Chunk], hint: str | None = None) -> bool:
    """Whether the question writes a candidate's exact name as code (`api_names_written`: `AsyncClient`,
    `json.loads`) — not an acronym in capitals ("YAML", "URL": a word as much as a name), nor an exception it
    reports as what went wrong (`reported_errors`). Such a question names what it asks about precisely: the
    question's embedding reorders its candidates as it does within the one library a caller asked for."""
    written = api_names_written(question, chunks, hint) - {word.lower() for word in _CAPITALS.findall(question)}
    reported = reported_errors(question)
    for chunk in chunks:
        name = symbol_of(chunk).rsplit(".", 1)[-1].lower()
        if name in written and not (name in reported and is_exception(chunk)):
            return True
    return False


def is_adapter(symbol: str, library: str) -> bool:
    """Whether an API of another package lives in a module named after `library` (`websockets.asyncio.client…`,
    a package's `….redis` backend): that package's adapter for the library, which matches the library's name in a
    question as well as the library's own passages do, but is not what a question about the library asks for."""
    return library_name(library) in {part.lower().replace("_", "-") for part in symbol.split(".")[1:-1]}


def is_namesake(chunk: Chunk) -> bool:
    """Whether a passage's API bears its library's name (`fastapi.FastAPI`, `flask.Flask`, `random.random`): a
    question naming the library matches that API's name by the library's word alone."""
    name = symbol_of(chunk).rsplit(".", 1)[-1].lower().replace("_", "")
    return bool(name and chunk.library) and name == library_name(chunk.library or "").replace("-", "")


def within(library: str | None, wanted: str) -> bool:
    """Whether a passage's library is `wanted` or one of its modules documented as a library of its own
    (`/python/os.path` within `/python/os`; a standard-library module only: distributions such as
    `jaraco.classes` and `jaraco.functools` are packages of their own)."""
    if library is None or library == wanted:
        return library is not None
    return wanted.startswith("/python/") and library.startswith(wanted + ".")


def diversify(chunks: Sequence[Chunk], scores: Sequence[float], weight: float, limit: int) -> list[Candidate]:
    """Greedy selection by score less `weight` × the word overlap (Jaccard) with the most similar chosen passage;
    another piece of an API already chosen comes after every other API, however well it scores (it shows no API
    the reader has not seen; the same API under another module path, `asyncio.tasks.Task` for `asyncio.Task`,
    included); exact repeats of a chosen passage's text are dropped."""
    ranked = sorted(range(len(chunks)), key=lambda i: -scores[i])  # stable: fused order on ties
    keys = {i: passage_api(chunks[i]) for i in ranked}
    # the pool: the best passage of each API first, other pieces only to fill it (one long class's twenty
    # pieces outscoring the rest must not crowd every other API out before the choice)
    firsts: dict[str, int] = {}
    for i in ranked:
        firsts.setdefault(keys[i] or f"#{i}", i)
    leading = set(itertools.islice(firsts.values(), 2 * limit))
    remaining = [*(i for i in ranked if i in leading), *(i for i in ranked if i not in leading)][: 2 * limit]
    words = {i: frozenset(_WORD.findall(chunks[i].text.lower())) for i in remaining}
    symbols = {i: keys[i] for i in remaining}
    seen_texts: set[str] = set()
    shown: set[str] = set()  # the APIs chosen so far
    chosen: list[Candidate] = []
    overlap = dict.fromkeys(remaining, 0.0)
    while remaining and len(chosen) < limit:
        # new APIs first, then by score less overlap; the first of equals wins
        pick = max(remaining, key=lambda i: (symbols[i] not in shown, scores[i] - weight * overlap[i]))
        remaining.remove(pick)
        text = " ".join(chunks[pick].text.split())
        if text in seen_texts:
            continue
        seen_texts.add(text)
        chosen.append(Candidate(pick, scores[pick]))
        if symbols[pick]:
            shown.add(symbols[pick])
        for i in remaining:
            overlap[i] = max(overlap[i], _jaccard(words[i], words[pick]))
    return chosen


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
