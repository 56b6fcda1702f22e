"""The whole service on a "real" model: the Anthropic and OpenAI-compatible providers configured
by settings, talking to local servers that speak each vendor's wire format. The model calls
retrieve_full_context, the summariser model writes the summaries."""

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.fakes import anthropic_server as anthropic_fake
from tests.fakes import openai_server as openai_fake
from tests.fakes.server import ServerThread
from tests.support import api_client, make_user

LONG_ANSWER = "Use tenacity's AsyncRetrying with wait_exponential_jitter. " * 30
SUMMARY_MARK = "summaries for a conversation's memory"


def _is_summary(system: Any) -> bool:
    return SUMMARY_MARK in str(system)


@pytest.fixture
def anthropic() -> Iterator[tuple[anthropic_fake.FakeAnthropic, str]]:
    fake = anthropic_fake.FakeAnthropic()
    fake.route = lambda body: (
        anthropic_fake.Turn(text="Summary: retries with jitter.") if _is_summary(body.get("system")) else None
    )
    with ServerThread(fake.app) as server:
        yield fake, server.url


@pytest.fixture
def openai() -> Iterator[tuple[openai_fake.FakeOpenAI, str]]:
    fake = openai_fake.FakeOpenAI()
    fake.route = lambda body: (
        openai_fake.Reply(text="Summary: retries with jitter.") if _is_summary(body["messages"][0]["content"]) else None
    )
    with ServerThread(fake.app) as server:
        yield fake, server.url + "/v1"


async def converse(http: httpx.AsyncClient, services: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two questions; the first answer's summary is written in the background (the JSON answer
    returns before it), so the second waits for it, then sees it in the history."""
    first = (await http.post("/api/chat", json={"message": "How do I retry with backoff?"})).json()
    await services.summaries.drain(timeout_s=10)
    stored = await http.get(f"/api/conversations/{first['conversation_id']}/items/q1-r-sum")
    first["summary"] = first["summary"] or stored.json()["content"]
    second = await http.post(
        "/api/chat", json={"message": "Quote your earlier answer exactly", "conversation_id": first["conversation_id"]}
    )
    return first, second.json()


async def test_the_service_on_anthropic(
    sqlite_url: str, build: Any, anthropic: tuple[anthropic_fake.FakeAnthropic, str]
) -> None:
    fake, url = anthropic
    fake.enqueue(
        anthropic_fake.Turn(text=LONG_ANSWER),
        anthropic_fake.Turn(text="Let me fetch it.", tool_calls=[("toolu_9", "retrieve_full_context", {"id": "q1-r"})]),
        anthropic_fake.Turn(text="Here it is, verbatim."),
    )
    user = await make_user(build(sqlite_url)[0])
    services, settings = build(
        sqlite_url,
        chat_provider="auto",
        anthropic_api_key="sk-ant-fake",
        anthropic_base_url=url,
        summariser_model="claude-haiku-4-5-summary",
    )
    assert (services.model.provider, services.model.name) == ("anthropic", "claude-haiku-4-5")
    async with api_client(services, settings, user.api_key) as http:
        first, second = await converse(http, services)
    assert first["summary"] == "Summary: retries with jitter."
    assert second["tools_used"] == ["retrieve_full_context"] and second["credits_used"] == 7
    assert second["response"] == "Let me fetch it.Here it is, verbatim."
    chat_calls = [r["body"] for r in fake.requests if not _is_summary(r["body"].get("system"))]
    assert chat_calls[1]["messages"][1]["content"][0]["text"] == (
        '[ID:q1-r-sum, ref:q1-r] My answer:\n<data source="q1-r-sum">\nSummary: retries with jitter.\n</data>'
    )
    tool_result = chat_calls[2]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == "toolu_9"
    assert tool_result["content"].startswith('[ID:q2-t1] <data source="q2-t1 retrieve_full_context">\n[ID:q1-r] Full')
    assert LONG_ANSWER in tool_result["content"]
    summary_calls = [r["body"] for r in fake.requests if _is_summary(r["body"].get("system"))]
    assert {c["model"] for c in summary_calls} == {"claude-haiku-4-5-summary"}


async def test_the_service_on_an_openai_compatible_server(
    sqlite_url: str, build: Any, openai: tuple[openai_fake.FakeOpenAI, str]
) -> None:
    fake, url = openai
    fake.enqueue(
        openai_fake.Reply(text=LONG_ANSWER),
        openai_fake.Reply(tool_calls=[("call_1", "retrieve_full_context", {"id": "q1-r"})]),
        openai_fake.Reply(text="Here it is."),
    )
    user = await make_user(build(sqlite_url)[0])
    services, settings = build(sqlite_url, chat_provider="auto", openai_base_url=url, openai_model="qwen2.5")
    assert (services.model.provider, services.model.name) == ("openai", "qwen2.5")
    async with api_client(services, settings, user.api_key) as http:
        first, second = await converse(http, services)
    assert first["summary"] == "Summary: retries with jitter."
    assert second["tools_used"] == ["retrieve_full_context"]
    chat_calls = [r["body"] for r in fake.requests if not _is_summary(r["body"]["messages"][0]["content"])]
    tool_message = next(m for m in chat_calls[2]["messages"] if m["role"] == "tool")
    assert tool_message["tool_call_id"] == "call_1"
    assert "credit limit" in chat_calls[2]["messages"][-1]["content"]  # the budget note follows the results
    assert LONG_ANSWER in tool_message["content"]
