"""The gateway in front of an OpenAI-compatible server whose model cannot call tools natively: the
client's tools reach the model as a text manifest, and the calls it writes come back to the
official anthropic SDK as ordinary `tool_use` blocks (OPENAI_NATIVE_TOOLS=false, or `auto` once
the server refuses tools)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.api.gateway_support import gateway
from tests.fakes.openai_server import Failure, FakeOpenAI, Reply
from tests.fakes.server import ServerThread

WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
ASK = [{"role": "user", "content": "Weather in Oslo?"}]
CALL_AS_TEXT = 'I will look it up.\n```tool\n{"name": "get_weather", "arguments": {"city": "Oslo",}}\n```'


@pytest.fixture
def openai_fake() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    with ServerThread(fake.app) as server:
        yield fake, server.url + "/v1"


async def _ask(gw: Any, messages: list[dict[str, Any]], *, stream: bool) -> Any:
    kwargs: dict[str, Any] = {"model": "claude-sonnet-4-6", "max_tokens": 300, "tools": [WEATHER]}
    if stream:
        async with gw.client.messages.stream(messages=messages, **kwargs) as events:
            async for _ in events:
                pass
            return await events.get_final_message()
    return await gw.client.messages.create(messages=messages, **kwargs)


def _system(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


@pytest.mark.parametrize("stream", [False, True])
async def test_tools_travel_as_text_and_calls_come_back_as_tool_use_blocks(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], stream: bool
) -> None:
    fake, url = openai_fake
    fake.enqueue(Reply(text=CALL_AS_TEXT), Reply(text="Oslo is sunny."))
    async with gateway(sqlite_url, openai_base_url=url, openai_native_tools="false") as gw:
        first = await _ask(gw, ASK, stream=stream)
        assert first.stop_reason == "tool_use"
        [call] = [block for block in first.content if block.type == "tool_use"]
        assert (call.name, call.input) == ("get_weather", {"city": "Oslo"})  # the trailing comma repaired
        assert "```tool" not in "".join(b.text for b in first.content if b.type == "text")

        sent = fake.requests[0]["body"]
        assert "tools" not in sent and "get_weather" in _system(sent)

        follow_up = [
            *ASK,
            {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "sunny, 21 C"}]},
        ]
        answer = await _ask(gw, follow_up, stream=stream)
        assert answer.stop_reason == "end_turn" and answer.content[0].text.strip() == "Oslo is sunny."
    replayed = fake.requests[1]["body"]
    assert "tools" not in replayed and all(m["role"] != "tool" for m in replayed["messages"])
    assert "sunny, 21 C" in str(replayed["messages"])  # the result, written out as text


async def test_auto_switches_a_model_to_text_once_the_server_refuses_its_tools(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str]
) -> None:
    fake, url = openai_fake
    fake.enqueue(
        Failure(400, "registry.ollama.ai/library/gemma3:4b does not support tools"),
        Reply(text=CALL_AS_TEXT),
        Reply(text=CALL_AS_TEXT),
    )
    async with gateway(sqlite_url, openai_base_url=url, openai_native_tools="auto") as gw:
        first = await _ask(gw, ASK, stream=True)
        assert [b.name for b in first.content if b.type == "tool_use"] == ["get_weather"]
        assert [("tools" in r["body"]) for r in fake.requests] == [True, False]
        again = await _ask(gw, ASK, stream=False)  # remembered: no second refusal
        assert [b.name for b in again.content if b.type == "tool_use"] == ["get_weather"]
        assert [("tools" in r["body"]) for r in fake.requests] == [True, False, False]


async def test_other_refusals_are_not_mistaken_for_missing_tool_support(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str]
) -> None:
    fake, url = openai_fake
    fake.enqueue(Failure(400, "max_tokens is too large"))
    async with gateway(sqlite_url, openai_base_url=url, openai_native_tools="auto") as gw:
        response = await gw.http.post(
            "/v1/messages",
            headers={"x-api-key": gw.key, "anthropic-version": "2023-06-01"},
            json={"model": "claude-sonnet-4-6", "max_tokens": 300, "tools": [WEATHER], "messages": ASK},
        )
    assert response.status_code == 400 and "max_tokens is too large" in response.json()["error"]["message"]
    assert len(fake.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_choice_none_lets_no_call_out_even_if_the_model_writes_one(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], stream: bool
) -> None:
    fake, url = openai_fake
    fake.enqueue(Reply(text=CALL_AS_TEXT))
    async with gateway(sqlite_url, openai_base_url=url, openai_native_tools="false") as gw:
        kwargs: dict[str, Any] = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 300,
            "tools": [WEATHER],
            "tool_choice": {"type": "none"},
            "messages": ASK,
        }
        if stream:
            async with gw.client.messages.stream(**kwargs) as events:
                message = await events.get_final_message()
        else:
            message = await gw.client.messages.create(**kwargs)
    assert all(block.type == "text" for block in message.content) and message.stop_reason == "end_turn"
    assert "Tools are not available for this answer" in _system(fake.requests[0]["body"])
