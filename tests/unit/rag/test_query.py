"""Step 1: a documentation request → library and topic, by rules or by the chat model."""

import pytest

from almanac.llm.base import ModelUnavailable
from almanac.llm.fake import ScriptedModel, reply
from almanac.rag.query import ModelQueryParser, RuleQueryParser, parse_json_object, rule_library, topic_of

KNOWN = ["FastAPI", "fastapi", "SQLAlchemy", "sqlalchemy", "asyncio", "pydantic", "pydantic-settings"]


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


def test_the_topic_drops_the_library_and_boilerplate() -> None:
    assert topic_of("How do I declare dependencies in FastAPI?", "FastAPI") == "declare dependencies"
    assert topic_of("??", None) == "??"


async def test_rule_parser() -> None:
    parsed = await RuleQueryParser(lambda: KNOWN).parse("How do I use asyncio TaskGroup?")
    assert (parsed.library, parsed.topic) == ("asyncio", "TaskGroup")


async def test_the_model_parser_reads_json_amid_chatter() -> None:
    model = ScriptedModel([reply('Sure!\n```json\n{"library": "Next.js", "topic": "app router caching"}\n```')])
    parsed = await ModelQueryParser(model).parse("how does caching work in the next app router")
    assert (parsed.library, parsed.topic) == ("Next.js", "app router caching")
    assert model.requests[0].purpose == "utility"


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
