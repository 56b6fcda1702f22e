"""A question's words, and the words documentation uses for them."""

from almanac.rag.synonyms import THESAURUS, expansion


def test_a_word_brings_the_documentations_words_for_it() -> None:
    assert expansion("python randomize items in a list") == ["shuffle"]
    assert expansion("get the file extension of a path") == ["suffix", "ext"]


def test_a_phrase_matches_word_by_word_in_order_across_hyphens_and_plurals() -> None:
    assert "cors" in expansion("allow cross-origin requests")
    assert "traceback" in expansion("print the stack traces of all threads")
    assert "traceback" not in expansion("trace the stack of calls")  # the words, not in order


def test_a_verbs_forms_and_a_nouns_plural_match_it() -> None:
    assert expansion("URL encoding of a query") == ["quote", "urlencode"]
    assert expansion("deleted files come back") == ["remove", "unlink", "rmtree"]
    assert expansion("get yesterday's date") == ["timedelta", "today"]


def test_words_match_as_written_not_by_stem() -> None:
    # "settings", "executes" and "random" share stems with other entries' words ("set", "executable", "randomize")
    assert expansion("set an expiry time on a key") == []
    assert expansion("executes a query") == []
    assert expansion("pick a random colour from a palette") == []


def test_words_the_question_already_has_are_not_added_again() -> None:
    assert expansion("parse a JSON string") == ["deserialize", "decode", "load", "loads"]
    assert expansion("parse a JSON string with loads") == ["deserialize", "decode"]  # "load" by its stem too


def test_a_question_in_the_documentations_own_words_gains_nothing() -> None:
    assert expansion("shutil.rmtree a directory tree") == []


def test_the_table_goes_one_way_from_asked_words_to_documented_ones() -> None:
    for asked, documented in THESAURUS.items():
        assert asked == asked.lower() and documented, asked
        assert all(word and word == word.strip() for word in documented), asked


def test_everyday_phrasings_of_types_dates_and_forms_bring_the_apis_for_them() -> None:
    assert expansion("check if a value is a string type") == ["str", "isinstance"]
    assert expansion("add 30 days to a date") == ["timedelta"]
    assert expansion("send form data with httpx") == ["post", "urlencoded"]
    assert expansion("round a Decimal to two decimal places") == ["quantize"]  # "round" it has


def test_an_http_status_by_its_number_brings_the_exception_that_carries_it() -> None:
    assert expansion("return a 404 error from an endpoint") == ["http", "exception", "status_code"]
    assert expansion("retry up to 4 times") == []


def test_a_name_written_as_code_is_no_words_of_the_question() -> None:
    # "parse_obj" asks for that API, not for parsing (it brought `json.loads`)
    assert expansion("how do I use parse_obj in pydantic") == []
    assert expansion("use json.loads to parse a string") == ["deserialize", "decode"]  # "parse" itself still counts
    assert "isnan" in expansion("which values of an array are NaN")  # a word in capitals is still a word


def test_everyday_phrasings_of_structures_concurrency_databases_and_services_bring_their_apis() -> None:
    assert expansion("a queue you can append to and pop from both ends") == ["deque"]
    assert expansion("remove duplicate lines but keep order")[-2:] == ["fromkeys", "ordereddict"]
    assert expansion("run it in a thread pool")[:1] == ["threadpoolexecutor"]
    assert expansion("declare a foreign key column") == ["foreignkey"]
    assert expansion("run code on startup of the app") == ["lifespan", "on_event"]
    assert expansion("convert a datetime to UTC") == ["timezone", "astimezone"]
    assert expansion("share a counter between threads safely") == ["lock"]
    assert expansion("replace a method with a fake in a test")[-2:] == ["mock", "patch"]
    assert expansion("compare two strings for a similarity score") == ["ratio", "close", "sequencematcher"]


def test_a_phrase_matches_across_the_questions_articles_and_possessives() -> None:
    assert expansion("copy a directory to another place") == ["copytree"]
    assert expansion("copy the folder with its files") == ["directory", "dir", "copytree"]
    assert expansion("convert the bytes to a string") == ["decode"]


def test_within_a_subject_the_questions_verb_names_that_subjects_operation() -> None:
    # a regular expression removes, deletes or inserts by substituting, and extracts by finding every match
    assert "sub" in expansion("Regex for removing data in parenthesis")
    assert "sub" in expansion("Delete digits in Python (Regex)")
    assert "sub" in expansion("How can I remove text within parentheses with a regular expression?")
    assert "findall" in expansion("extract all urls with regular expressions")
    # the same verbs about anything else are no substitution
    assert "sub" not in expansion("remove a file")
    assert "sub" not in expansion("delete a key from a dict")
    assert "findall" not in expansion("extract a zip archive")


def test_a_phrase_matches_with_a_few_other_words_between_its_words() -> None:
    assert "itemgetter" in expansion("Sort a Python dictionary by value")  # "sort by"
    assert "ceil" in expansion("round a float up to the nearest integer")  # "round up"
    assert "strftime" in expansion("format the current time as hours and minutes")  # "format time"
    # in order only, and not across a whole clause
    assert "itemgetter" not in expansion("sort out which of my many users signed up by email")
    assert "traceback" not in expansion("trace the stack of calls")


def test_converting_between_bytes_and_numbers_brings_struct_and_the_int_methods() -> None:
    assert {"from_bytes", "unpack"} <= set(expansion("Shortest way to convert these bytes to int in python?"))
    assert {"to_bytes", "pack"} <= set(expansion("convert an int to bytes"))
    assert "unpack" in expansion("How can I convert a binary to a float number")


def test_how_developers_describe_a_goal_brings_the_words_of_the_api_for_it() -> None:
    assert expansion("get the 10 biggest values from a huge list") == ["largest", "max", "nlargest"]
    assert expansion("make my function remember results it already computed")[:2] == ["cache", "lru_cache"]
    assert expansion("offer 'did you mean ...?' for a mistyped command") == ["close", "get_close_matches"]
    assert "lock" in expansion("two threads increment a counter and I'm losing updates")
    assert expansion("a client I can await") == ["async"]
    assert expansion("call a synchronous function from a worker") == ["sync"]
    assert expansion("create a scratch directory for a test")[:2] == ["temporary", "temp"]
    assert expansion("test my app's endpoints without actually starting a server") == ["testclient"]
    assert expansion("insert thousands of rows in one call") == ["executemany", "bulk"]
    assert expansion("show the reply token by token") == ["stream"]
    assert "postgresql" in expansion("postgres upsert with SQLAlchemy")
    assert expansion("throw an exception if the status is 4xx") == ["raise"]
    assert {"struct", "unpack"} <= set(expansion("read two little-endian ints"))


def test_how_developers_name_signals_timeouts_tolerances_and_attachments_brings_the_apis_for_them() -> None:
    assert expansion("catch SIGTERM and shut down cleanly") == ["signal"]
    assert expansion("give up on a coroutine after 5 seconds") == ["timeout", "wait_for"]
    assert expansion("check whether ffmpeg is on the PATH") == ["which"]
    assert "compare_digest" in expansion("compare signatures without being open to timing attacks")
    assert expansion("compare floats with a tolerance") == ["isclose"]
    assert expansion("attach a PDF to an email") == ["add_attachment"]
    assert expansion("my option should only accept dev or prod") == ["choice", "choices"]
    assert expansion("the JSON uses camelCase keys") == ["alias", "alias_generator"]
