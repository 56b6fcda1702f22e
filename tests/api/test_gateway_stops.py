"""Stop sequences through the gateway, as Anthropic's API reports them: the output ends before the
sequence, `stop_reason` is "stop_sequence" and `stop_sequence` names the one that matched — stream
and not, from an OpenAI-compatible server (which would not say which one matched, so the gateway
watches the text itself) and from a model speaking the text tool protocol."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.api.gateway_support import gateway
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.server import ServerThread


@pytest.fixture
def openai_fake() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    with ServerThread(fake.app) as server:
        yield fake, server.url + "/v1"


async def _ask(gw: Any, *, stream: bool, stop: list[str], tools: bool = False) -> Any:
    kwargs: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 200,
        "messages": [{"role": "user", "content": "list them"}],
        "stop_sequences": stop,
    }
    if tools:
        kwargs["tools"] = [{"name": "noop", "description": "nothing", "input_schema": {"type": "object"}}]
    if stream:
        async with gw.client.messages.stream(**kwargs) as events:
            return await events.get_final_message()
    return await gw.client.messages.create(**kwargs)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("native_tools", ["true", "false"])
async def test_a_stop_sequence_ends_the_output_and_is_reported(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], stream: bool, native_tools: str
) -> None:
    fake, url = openai_fake
    fake.enqueue(Reply(text="1. apples 2. pears ### 3. plums and more text after it", chunk_delay_s=0.01))
    async with gateway(sqlite_url, openai_base_url=url, openai_native_tools=native_tools) as gw:
        message = await _ask(gw, stream=stream, stop=["STOP", "###"], tools=native_tools == "false")
    assert message.content[0].text == "1. apples 2. pears "  # type: ignore[union-attr]
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "###")
    assert message.usage.output_tokens > 0
    assert "stop" not in fake.requests[0]["body"]


@pytest.mark.parametrize("stream", [False, True])
async def test_without_a_match_the_answer_ends_as_usual(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], stream: bool
) -> None:
    fake, url = openai_fake
    fake.enqueue(Reply(text="all ## fine here #", completion_tokens=5))
    async with gateway(sqlite_url, openai_base_url=url) as gw:
        message = await _ask(gw, stream=stream, stop=["###"])
    assert message.content[0].text.strip() == "all ## fine here #"  # type: ignore[union-attr]
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)
    assert message.usage.output_tokens == 5
