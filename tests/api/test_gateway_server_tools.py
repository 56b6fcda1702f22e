"""Anthropic's web search server tool on an OpenAI-compatible upstream: with a search provider
configured the gateway runs the search (a fake Brave Search) and answers with `server_tool_use` and
`web_search_tool_result` blocks as Anthropic's API does; without one, or for a server tool it cannot
run, the client is told with a 400. The request is Claude Code's own WebSearch request (captured)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from tests.api.gateway_support import claude_code_request, gateway
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.search_server import KEY, PATH, FakeSearch, result
from tests.fakes.server import ServerThread

QUERY = "python 3.14 release date"
RESULTS = [
    result("Python 3.14.0", "https://www.python.org/downloads/release/python-3140/", "Python 3.14.0 is out."),
    result("What's new", "https://docs.python.org/3.14/whatsnew/3.14.html", "What's new in <strong>3.14</strong>"),
    result("Some blog", "https://blog.example.com/py314", "A blog post."),
]
SEARCHES = Reply(tool_calls=[("call_s1", "web_search", {"query": QUERY})])
ANSWERS = Reply(text="Python 3.14 was released on 7 October 2025.")


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAI, str, FakeSearch, str]]:
    model, search = FakeOpenAI(), FakeSearch(results={QUERY: RESULTS})
    with ServerThread(model.app) as m, ServerThread(search.app()) as s:
        yield model, m.url + "/v1", search, s.url + PATH


def _settings(servers: tuple[FakeOpenAI, str, FakeSearch, str], **extra: Any) -> dict[str, Any]:
    _, model_url, _, search_url = servers
    return {"openai_base_url": model_url, "web_search_api_key": KEY, "web_search_url": search_url, **extra}


async def _ask(gw: Any, body: dict[str, Any], *, stream: bool) -> anthropic.types.Message:
    kwargs = {
        k: v for k, v in body.items() if k in ("model", "max_tokens", "messages", "system", "tools", "tool_choice")
    }
    if stream:
        async with gw.client.messages.stream(**kwargs) as events:
            return await events.get_final_message()
    return await gw.client.messages.create(**kwargs)


@pytest.mark.parametrize("stream", [True, False])
async def test_claude_codes_web_search_is_run_by_the_gateway(
    sqlite_url: str, servers: tuple[FakeOpenAI, str, FakeSearch, str], stream: bool
) -> None:
    model, _, search, _ = servers
    model.enqueue(SEARCHES, ANSWERS)
    _, body = claude_code_request("web_search", model="claude-haiku-4-5")
    assert body["tools"] == [{"type": "web_search_20250305", "name": "web_search", "max_uses": 8}]
    async with gateway(sqlite_url, **_settings(servers)) as gw:
        message = await _ask(gw, body, stream=stream)
    kinds = [block.type for block in message.content]
    assert kinds == ["server_tool_use", "web_search_tool_result", "text"]
    call, found, text = message.content
    assert call.name == "web_search" and call.input == {"query": QUERY} and call.id.startswith("srvtoolu_")  # type: ignore[union-attr]
    assert found.tool_use_id == call.id  # type: ignore[union-attr]
    assert [(r.title, r.url) for r in found.content] == [(r["title"], r["url"]) for r in RESULTS]  # type: ignore[union-attr]
    assert text.text.strip() == "Python 3.14 was released on 7 October 2025."  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn" and message.usage.server_tool_use.web_search_requests == 1  # type: ignore[union-attr]
    assert search.requests[0]["params"]["q"] == QUERY
    first, second = (r["body"] for r in model.requests)
    assert first["tools"][0]["function"]["name"] == "web_search"
    assert first["tool_choice"] == {
        "type": "function",
        "function": {"name": "web_search"},
    }  # forced, as Claude Code asks
    assert "tool_choice" not in second or second["tool_choice"] == "auto"  # forced once only
    assert "Python 3.14.0 <https://www.python.org/downloads/release/python-3140/>" in second["messages"][-1]["content"]


async def test_domains_filter_the_results_and_max_uses_is_kept(
    sqlite_url: str, servers: tuple[FakeOpenAI, str, FakeSearch, str]
) -> None:
    model, _, search, _ = servers
    twice = Reply(
        tool_calls=[("call_s1", "web_search", {"query": QUERY}), ("call_s2", "web_search", {"query": "more"})]
    )
    model.enqueue(twice, ANSWERS)
    tool = {"type": "web_search_20250305", "name": "web_search", "max_uses": 1, "allowed_domains": ["python.org"]}
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 300,
        "messages": [{"role": "user", "content": "3.14?"}],
        "tools": [tool],
    }
    async with gateway(sqlite_url, **_settings(servers)) as gw:
        message = await _ask(gw, body, stream=True)
    results = [block for block in message.content if block.type == "web_search_tool_result"]
    assert [r.url for r in results[0].content] == [RESULTS[0]["url"], RESULTS[1]["url"]]  # type: ignore[union-attr]
    assert results[1].content.error_code == "max_uses_exceeded"  # type: ignore[union-attr]
    assert len(search.requests) == 1 and message.usage.server_tool_use.web_search_requests == 1  # type: ignore[union-attr]
    assert model.requests[1]["body"]["tool_choice"] == "none"  # no searches left: the model answers


async def test_searches_are_billed_like_the_chat_tool(
    sqlite_url: str, servers: tuple[FakeOpenAI, str, FakeSearch, str]
) -> None:
    model, _, _, _ = servers
    model.enqueue(SEARCHES, ANSWERS)
    _, body = claude_code_request("web_search", model="claude-haiku-4-5")
    async with gateway(sqlite_url, **_settings(servers, gateway_credits_per_1k_tokens=0.001)) as gw:
        before = await gw.services.credits.balance(user_id=gw.user_id)
        await _ask(gw, body, stream=False)
        await gw.usage()  # flushes the token billing too
        after = await gw.services.credits.balance(user_id=gw.user_id)
    assert before - after == 2 + 1  # the search (as the chat's web_search tool) + the tokens, rounded up


async def test_without_a_search_provider_the_client_is_told(
    sqlite_url: str, servers: tuple[FakeOpenAI, str, FakeSearch, str]
) -> None:
    model, model_url, _, _ = servers
    _, body = claude_code_request("web_search", model="claude-haiku-4-5")
    async with gateway(sqlite_url, openai_base_url=model_url) as gw:
        with pytest.raises(anthropic.BadRequestError) as raised:
            await _ask(gw, body, stream=True)
    message = raised.value.body["error"]["message"]  # type: ignore[index]
    assert "tools.0: web_search_20250305 is not available" in message and "WEB_SEARCH_API_KEY" in message
    assert model.requests == []


@pytest.mark.parametrize("kind", ["web_fetch_20250910", "code_execution_20250825", "bash_20250124"])
async def test_other_server_and_anthropic_defined_tools_are_refused_by_name(
    sqlite_url: str, servers: tuple[FakeOpenAI, str, FakeSearch, str], kind: str
) -> None:
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "x"}],
        "tools": [{"name": "ok", "input_schema": {"type": "object"}}, {"type": kind, "name": kind.split("_2")[0]}],
    }
    async with gateway(sqlite_url, **_settings(servers)) as gw:
        response = await gw.http.post("/v1/messages", json=body, headers={"x-api-key": gw.key})
    assert response.status_code == 400 and f"tools.1: {kind} is not available" in response.json()["error"]["message"]
