"""Step 1: a documentation request → library and topic, by rules or by the chat model."""

import pytest

from almanac.llm.base import ModelUnavailable
from almanac.llm.fake import ScriptedModel, reply
from almanac.rag.query import (
    ModelQueryParser,
    RuleQueryParser,
    clean_library,
    excluded_libraries,
    parse_json_object,
    request_of,
    rule_libraries,
    rule_library,
    topic_of,
)

KNOWN = [
    "FastAPI",
    "fastapi",
    "SQLAlchemy",
    "sqlalchemy",
    "asyncio",
    "pydantic",
    "pydantic-settings",
    "json",
    "jsonschema",
    "string",
]


@pytest.mark.parametrize(
    ("query", "library"),
    [
        ("How do I declare dependencies in FastAPI?", "FastAPI"),
        ("sqlalchemy async session example", "sqlalchemy"),
        ("What does pydantic-settings read from .env?", "pydantic-settings"),
        ("Use /vercel/next.js@v14.3.0 middleware", "/vercel/next.js@v14.3.0"),
        ("how to cancel a task with `trio`", "trio"),
        ("How does Flask's blueprint registration work?", "Flask"),
        ("from httpx import AsyncClient — how do timeouts work", "httpx"),
        ("explain the django library settings", "django"),
        ("how do I do it?", None),
    ],
)
def test_rules_find_the_library(query: str, library: str | None) -> None:
    assert rule_library(query, KNOWN) == library


def test_two_words_making_one_library_name_are_that_library_not_their_parts() -> None:
    assert rule_libraries("validate a document against a json schema", KNOWN) == ["jsonschema"]
    assert rule_libraries("read pydantic settings from the environment", KNOWN) == ["pydantic-settings"]
    assert rule_libraries("validate json with pydantic", KNOWN) == ["pydantic", "json"]


def test_two_words_apart_or_reversed_spell_a_distributions_name_but_not_a_standard_modules() -> None:
    known = [*KNOWN, "filelock", "readline", "gettext", "re"]
    assert rule_libraries("validate a JSON document against a schema", known) == ["jsonschema"]
    assert rule_libraries("lock a file so two processes do not write it at once", known) == ["filelock"]
    assert rule_libraries("read a file line by line", known) == []  # no `readline`: a verb and its object
    assert rule_libraries("regex to get all text outside of brackets", known) == ["re"]  # nor `gettext`
    # too far apart to be one name
    assert rule_libraries("parse json from the response and check it with a schema", known) == ["json"]


def test_a_word_for_a_standard_modules_subject_names_that_module_not_the_package_of_the_same_name() -> None:
    known = ["re", "regex", "string"]
    assert rule_libraries("Python regex - ignore parenthesis", known) == ["re"]
    assert rule_libraries("match dates with regular expressions", known) == ["re"]
    # the package itself, named as a package or as code
    assert rule_libraries("fuzzy matching with the regex module", known) == ["regex"]
    assert rule_libraries("does `regex` support fuzzy matching", known) == ["regex"]


async def test_every_library_a_question_names_is_kept_for_the_pipeline_to_choose() -> None:
    parsed = await RuleQueryParser(lambda: KNOWN).parse("parse a JSON string into a dict")
    assert (parsed.library, parsed.others) == ("string", ("JSON",))  # longest first; the pipeline weighs them


def test_the_topic_drops_the_library_and_boilerplate() -> None:
    assert topic_of("How do I declare dependencies in FastAPI?", "FastAPI") == "declare dependencies"
    assert topic_of("??", None) == ""  # nothing left: the pipeline searches with the whole request


# Possessives and requests to consult the documentation never reach the topic; the library is still found.
FILLER_CASES = [
    ("How do I configure sqlalchemy's connection pool?", "sqlalchemy", "configure connection pool"),
    ("sqlalchemy’s async session", "sqlalchemy", "async session"),
    ("check the sqlalchemy docs for session events", "sqlalchemy", "session events"),
    ("Check the SQLAlchemy documentation on eager loading", "SQLAlchemy", "eager loading"),
    ("look it up in the documentation: how to retry with tenacity", "tenacity", "retry"),
    ("Can you look up pydantic's field validators in the docs?", "pydantic", "field validators"),
    ("search the asyncio documentation for TaskGroup", "asyncio", "TaskGroup"),
    ("according to the httpx docs, how are timeouts set?", "httpx", "timeouts set"),
    ("What does FastAPI's Depends do? Consult the official docs.", "FastAPI", "Depends"),
    ("Please refer to the pydantic-settings reference for .env files", "pydantic-settings", ".env files"),
    ("look it up in the documentation", None, ""),
]


# The same verbs are the subject when the documentation is not their object.
SUBJECT_CASES = [
    ("How do I check if a value is a string type?", "check if value string type"),
    ("read a CSV file into dictionaries", "read CSV file into dictionaries"),
    ("search a string for the first match of a pattern", "search string first match pattern"),
    ("find the full path of an executable on PATH", "find full path executable PATH"),
    ("see whether a key is in a dict", "see whether key dict"),
    ("round a float up to the nearest integer", "round float up to nearest integer"),  # "look it up" aside
]


@pytest.mark.parametrize(("query", "topic"), SUBJECT_CASES)
def test_a_verb_that_asks_to_consult_the_docs_elsewhere_is_the_subject(query: str, topic: str) -> None:
    assert topic_of(query, None) == topic


@pytest.mark.parametrize(("query", "library", "topic"), FILLER_CASES)
async def test_rules_keep_possessives_and_filler_out_of_the_topic(query: str, library: str | None, topic: str) -> None:
    parsed = await RuleQueryParser(lambda: [*KNOWN, "tenacity", "httpx"]).parse(query)
    assert (parsed.library, parsed.topic) == (library, topic)


@pytest.mark.parametrize(("query", "library", "topic"), [case for case in FILLER_CASES if case[1]])
async def test_rules_find_the_library_in_filler_without_knowing_it(query: str, library: str, topic: str) -> None:
    parsed = await RuleQueryParser().parse(query)
    assert parsed.library is not None and parsed.library.lower() == library.lower()


@pytest.mark.parametrize(
    ("answer", "library", "topic"),
    [
        ('{"library": "sqlalchemy\'s", "topic": "check the sqlalchemy docs for connection pooling"}', "sqlalchemy",
         "connection pooling"),
        ('{"library": "the httpx docs", "topic": "look it up: httpx\'s timeout configuration"}', "httpx",
         "timeout configuration"),
        ('{"library": "Pydantic library", "topic": "Pydantic\'s field validators"}', "Pydantic", "field validators"),
    ],
)  # fmt: skip
async def test_the_model_answer_is_cleaned_the_same_way(answer: str, library: str, topic: str) -> None:
    model = ScriptedModel([reply(answer)])
    parsed = await ModelQueryParser(model).parse("whatever the user asked")
    assert (parsed.library, parsed.topic) == (library, topic)
    assert "possessives" in model.requests[0].system and "look it up" in model.requests[0].system


def test_clean_library() -> None:
    assert clean_library("SQLAlchemy's docs") == "SQLAlchemy"
    assert clean_library("`httpx`") == "httpx"
    assert clean_library("next.js") == "next.js"
    # as a model passes it: a pip requirement's version part is no part of the name; a Context7 ID keeps its own
    assert clean_library("fastapi==0.110") == "fastapi" and clean_library("pydantic>=2,<3") == "pydantic"
    assert clean_library("numpy ~= 1.26") == "numpy" and clean_library("pydantic's") == "pydantic"
    assert clean_library("/vercel/next.js@v14.3.0") == "/vercel/next.js@v14.3.0"


async def test_rule_parser() -> None:
    parsed = await RuleQueryParser(lambda: KNOWN).parse("How do I use asyncio TaskGroup?")
    assert (parsed.library, parsed.topic) == ("asyncio", "TaskGroup")


async def test_the_model_parser_reads_json_amid_chatter() -> None:
    model = ScriptedModel([reply('Sure!\n```json\n{"library": "Next.js", "topic": "app router caching"}\n```')])
    parsed = await ModelQueryParser(model).parse("how does caching work in the next app router")
    assert (parsed.library, parsed.topic) == ("Next.js", "app router caching")
    assert model.requests[0].purpose == "utility"


async def test_the_model_names_the_apis_it_expects_and_only_well_formed_names_are_kept() -> None:
    answer = (
        '{"library": null, "topic": "executable path", '
        '"apis": ["shutil.which", "`os.get_exec_path()`", "rm -rf /", 42, "shutil.which", "a.b", "c.d"]}'
    )
    model = ScriptedModel([reply(answer)])
    parsed = await ModelQueryParser(model).parse("find the full path of an executable on PATH")
    assert parsed.apis == ("shutil.which", "os.get_exec_path", "a.b")  # no command, no number, no repeat; 3 at most
    assert '"apis"' in model.requests[0].system
    plain = await ModelQueryParser(ScriptedModel([reply('{"library": "httpx", "topic": "timeouts"}')])).parse("q")
    assert plain.apis == ()


async def test_the_model_parser_falls_back_to_rules() -> None:
    for step in (reply("I think it's about FastAPI"), reply('{"library": null, "topic": ""}'), ModelUnavailable("x")):
        parsed = await ModelQueryParser(ScriptedModel([step]), RuleQueryParser(lambda: KNOWN)).parse(
            "dependencies in FastAPI?"
        )
        assert parsed.library in ("FastAPI", None)
        assert parsed.topic


def test_parse_json_object() -> None:
    assert parse_json_object('x {"a": {"b": 1}} y') == {"a": {"b": 1}}
    assert parse_json_object("no json") is None
    assert parse_json_object('[{"a": 1}]') == {"a": 1}


# A follow-up question opens with a connective and talks to the assistant; neither is what to look up.
CONVERSATIONAL_CASES = [
    ("And how do I use redis's pipelines? Check the redis docs.", "redis", "pipelines"),
    ("So, can you tell me how httpx handles redirects? Thanks!", "httpx", "handles redirects"),
    ("OK. Now I want to know how pydantic validates emails.", "pydantic", "validates emails"),
    ("Then, please show me an example of fastapi middleware", "fastapi", "middleware"),
    # a greeting or an announcement opens the question ("Hi", "Quick question:"), not its subject
    ("Hi! Quick question: how do I stream a response with httpx?", "httpx", "stream response"),
    ("Hey there, one more thing: how does redis expire keys?", "redis", "expire keys"),
]

# ... but the same words inside a subject are its words
SUBJECT_CASES = [
    ("question answering with transformers", "question answering transformers"),
    ("hi-res image resize with pillow", "hi-res image resize pillow"),
    ("hello world flask app", "hello world flask app"),
]


@pytest.mark.parametrize(("query", "topic"), SUBJECT_CASES)
def test_a_greetings_words_inside_the_subject_stay_in_the_topic(query: str, topic: str) -> None:
    assert topic_of(query, None) == topic


@pytest.mark.parametrize(("query", "library", "topic"), CONVERSATIONAL_CASES)
async def test_connectives_and_requests_to_the_assistant_stay_out_of_the_topic(
    query: str, library: str, topic: str
) -> None:
    parsed = await RuleQueryParser(lambda: [*KNOWN, "redis", "httpx"]).parse(query)
    assert (parsed.library, parsed.topic) == (library, topic)


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("How do I limit how many coroutines run at the same time?", []),
        ("process items one at a time with asyncio", ["asyncio"]),
        ("run a check every time the app starts", []),
        # the word itself still names the module
        ("measure the time a function takes", ["time"]),
        ("format a time with the time module", ["time"]),
        # a compound noun whose word is a module's name: the stack trace is not the `trace` module's, nor a
        # stream "chunk by chunk" the `chunk` module's
        ("get the full stack trace as a string", ["string"]),
        ("convert a datetime to another time zone", ["datetime"]),
        ("stream a large CSV chunk by chunk from a starlette route", ["starlette"]),
        ("read a big file in chunks", []),
        ("show the reply token by token", []),
        ("count the lines a trace of the program covers", ["trace"]),
    ],
)
def test_a_librarys_word_in_an_idiom_names_no_library(query: str, named: list[str]) -> None:
    known = ["time", "asyncio", "trace", "string", "datetime", "chunk", "token", "starlette"]
    assert rule_libraries(query, known) == named


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("show Claude's reply token by token as it's generated", ["anthropic"]),
        ("stream a claude-3-5-sonnet response", ["anthropic"]),
        ("ask GPT-4o to summarise a text in python", ["openai"]),
        ("call chatgpt from a script", ["openai"]),
        ("count tokens for gpt-4 with tiktoken", ["tiktoken", "openai"]),
        ("load a gptq quantized model", []),  # a word that only begins like a model's name
    ],
)
def test_a_model_named_in_the_question_names_the_sdk_that_calls_it(query: str, named: list[str]) -> None:
    assert rule_libraries(query, ["anthropic", "openai", "tiktoken", "token"]) == named


@pytest.mark.parametrize(
    ("query", "excluded", "library", "topic"),
    [
        ("read command line arguments without argparse", ("argparse",), None, "read command line arguments"),
        ("fetch a page with httpx instead of the requests library", ("requests",), "httpx", "fetch page"),
        ("parse json rather than using pydantic", ("pydantic",), "json", "parse"),
        # a verb or an unknown word after "without" is how to do it, not a library to do without
        ("sleep without blocking the event loop in asyncio", (), "asyncio", "sleep without blocking event loop"),
    ],
)
async def test_a_library_to_do_without_is_neither_the_library_nor_the_topic(
    query: str, excluded: tuple[str, ...], library: str | None, topic: str
) -> None:
    known = [*KNOWN, "argparse", "requests", "httpx"]
    assert excluded_libraries(query, known) == excluded
    parsed = await RuleQueryParser(lambda: known).parse(query)
    assert (parsed.library, parsed.topic, parsed.excluded) == (library, topic, excluded)


async def test_the_model_parser_never_takes_a_library_to_do_without_for_the_one_asked_about() -> None:
    answer = reply('{"library": "argparse", "topic": "command line arguments"}')
    parsed = await ModelQueryParser(ScriptedModel([answer]), RuleQueryParser(lambda: ["argparse"])).parse(
        "read command line arguments without argparse"
    )
    assert (parsed.library, parsed.excluded) == (None, ("argparse",))


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("What's the best way to split a url into its parts in Python?", "split a url into its parts?"),
        ("I'm trying to parse a date but I'm not sure which function to use", "parse a date"),
        ("Which function should I call to read a file line by line?", "to read a file line by line?"),
        ("Is it possible to retry a request with httpx?", "retry a request with httpx?"),
        ("Is there a function to flatten a list?", "flatten a list?"),
        ("Need to merge two dicts, any suggestions?", "merge two dicts?"),
        ("pls help: sort a dict by value", "sort a dict by value"),
        ("Help! my list of dicts will not sort by a key, pls help", "my list of dicts will not sort by a key"),
        ("I want to hash a password. What should I use?", "hash a password?"),
        ("And what is the most pythonic way to reverse a string?", "reverse a string?"),
        ("In my project I have to parse a date, how?", "parse a date"),
        # the asker's situation, told first, is no part of the ask; a name in it stays
        ("I'm writing a small script for work. I need to gzip a file.", "gzip a file."),
        ("We are building an internal tool. How do I retry with httpx?", "How do I retry with httpx?"),
        ("I'm building a flask app. How do I add CORS?", "flask. How do I add CORS?"),
        # and so is frustration that names nothing
        ("Sort a list? I tried a few things but nothing worked.", "Sort a list."),
        ("I've been stuck on this for hours: merge two dicts", "merge two dicts"),
        # capitals say nothing when the whole question is written in them
        ("HOW DO I PARSE A JSON STRING?", "how do i parse a json string?"),
    ],
)
def test_how_a_question_is_framed_is_no_part_of_what_it_asks(question: str, asked: str) -> None:
    assert request_of(question) == asked


@pytest.mark.parametrize(
    "question",
    [
        # the same words as the subject's own stay
        "call a function with a timeout",
        "show the help text of a click command",
        "show default values in the argparse help",
        "add a description to the --help of a click command",
        "find the best match for a word in a list",
        "which is faster, a list or a tuple?",
        "run pytest in python 3.12 mode",
        "write a script that renames files",  # what is to be built, when it is the ask
        "build a project with setuptools",
        "I'm writing a script that renames files",
        "I tried json.dumps but it failed",  # an attempt that names what was tried
        "why does nothing work in my for loop",
        "send an HTTP GET with httpx and read the JSON",  # a few capitals among words: acronyms, as written
        "why does json.dumps(datetime.now()) fail?",  # a full stop in code opens no sentence: `now` stays
        # nothing but framing: the question as it was
        "any ideas?",
    ],
)
def test_words_of_the_subject_are_kept(question: str) -> None:
    assert request_of(question) == question


def test_a_pasted_traceback_is_its_code_its_error_and_the_packages_it_went_through() -> None:
    # the header and each frame's file and line are no words of the question — "Traceback" once took the
    # `traceback` module for the library asked about; a frame in an installed package names that package
    pasted = (
        "Traceback (most recent call last):\n"
        '  File "/app/main.py", line 12, in <module>\n'
        "    r = httpx.get(url, timeout=1)\n"
        '  File "/usr/lib/python3.11/site-packages/httpx/_api.py", line 195, in get\n'
        "    return request(\n"
        "During handling of the above exception, another exception occurred:\n"
        '  File "C:\\Python311\\Lib\\json\\encoder.py", line 199\n'
        "httpx.ReadTimeout: The read operation timed out"
    )
    assert " ".join(request_of(pasted).split()) == (
        "r = httpx.get(url, timeout=1) httpx return request( json httpx.ReadTimeout: The read operation timed out"
    )
