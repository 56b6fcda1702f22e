"""The Anthropic provider against a local server speaking the Messages API wire format."""

from collections.abc import Iterator

import pytest
from tests.fakes.anthropic_server import Failure, FakeAnthropic, Turn
from tests.fakes.server import ServerThread

from almanac.llm.base import ModelAuthError, ModelRateLimited, ModelTimeout, ModelUnavailable, complete
from almanac.llm.events import StreamEnd, TextDelta, ToolCallReady, UsageReport
from almanac.llm.messages import Message, ModelRequest, ToolResultBlock, ToolSpec, ToolUseBlock
from almanac.llm.providers.anthropic import AnthropicModel

KEY = "sk-ant-test-secret-key"
SPEC = ToolSpec("lookup", "Look up", {"type": "object", "properties": {"q": {"type": "string"}}})


@pytest.fixture
def fake() -> Iterator[tuple[FakeAnthropic, str]]:
    fake = FakeAnthropic()
    with ServerThread(fake.app) as server:
        yield fake, server.url


def model(url: str, **kwargs: object) -> AnthropicModel:
    return AnthropicModel(api_key=KEY, model="claude-haiku-4-5", base_url=url, **kwargs)  # type: ignore[arg-type]


def request(**kwargs: object) -> ModelRequest:
    return ModelRequest("You are helpful.", (Message.user("hello"),), **kwargs)  # type: ignore[arg-type]


async def test_streams_text_and_usage(fake: tuple[FakeAnthropic, str]) -> None:
    server, url = fake
    server.enqueue(Turn(text="Hello there, friend", input_tokens=40, output_tokens=6))
    events = [e async for e in model(url).stream(request())]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there, friend"
    assert len([e for e in events if isinstance(e, TextDelta)]) == 3
    usage = [e.usage for e in events if isinstance(e, UsageReport)]
    assert sum(u.input_tokens for u in usage) == 40 and sum(u.output_tokens for u in usage) == 6
    assert not any(u.estimated for u in usage)  # Anthropic always reports: nothing is estimated
    assert events[-1] == StreamEnd("end_turn")


async def test_tool_calls_arrive_whole_from_fragmented_json(fake: tuple[FakeAnthropic, str]) -> None:
    server, url = fake
    server.enqueue(
        Turn(
            text="Let me check.",
            tool_calls=[("toolu_1", "lookup", {"q": "asyncio TaskGroup", "n": 3}), ("toolu_2", "lookup", {})],
        )
    )
    response = await complete(model(url), request(tools=(SPEC,)))
    assert response.text == "Let me check."
    assert response.tool_calls == (
        ToolUseBlock("toolu_1", "lookup", {"q": "asyncio TaskGroup", "n": 3}),
        ToolUseBlock("toolu_2", "lookup", {}),
    )
    assert response.stop_reason == "tool_use"


async def test_invalid_tool_json_becomes_a_parse_error(fake: tuple[FakeAnthropic, str]) -> None:
    server, url = fake
    server.enqueue(Turn(tool_calls=[("toolu_1", "lookup", {})], raw_tool_json='{"q": "unterminated'))
    events = [e async for e in model(url).stream(request(tools=(SPEC,)))]
    call = next(e.call for e in events if isinstance(e, ToolCallReady))
    assert call.parse_error and call.input == {}


async def test_the_request_uses_the_wire_format(fake: tuple[FakeAnthropic, str]) -> None:
    server, url = fake
    conversation = (
        Message.user("[ID:q1] find x"),
        Message("assistant", (ToolUseBlock("toolu_1", "lookup", {"q": "x"}),)),
        Message("user", (ToolResultBlock("toolu_1", "[ID:q1-t1] found", False),)),
    )
    await complete(model(url), ModelRequest("sys", conversation, (SPEC,), 321, tool_choice="none"))
    sent = server.requests[0]
    body, headers = sent["body"], sent["headers"]
    assert headers.get("authorization") == f"Bearer {KEY}" or headers.get("x-api-key") == KEY
    assert "anthropic-version" in headers
    assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] == 321 and body["stream"] is True
    assert body["system"] == "sys"
    assert body["tools"] == [{"name": "lookup", "description": "Look up", "input_schema": dict(SPEC.input_schema)}]
    assert body["tool_choice"] == {"type": "none"}
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "[ID:q1] find x"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "[ID:q1-t1] found", "is_error": False}
            ],
        },
    ]


async def test_rate_limits_are_retried_honouring_retry_after(fake: tuple[FakeAnthropic, str]) -> None:
    server, url = fake
    server.enqueue(Failure(429, "rate_limit_error", "slow down", headers={"retry-after": "3"}), Turn(text="finally"))
    response = await complete(model(url, max_retries=2), request())
    assert response.text == "finally" and len(server.requests) == 2
    # The SDK's own first backoff is under a second: only Retry-After makes the client wait 3 s.
    assert server.requests[1]["at"] - server.requests[0]["at"] >= 2.9


async def test_server_errors_are_retried_then_reported(fake: tuple[FakeAnthropic, str]) -> None:
    server, url = fake
    server.enqueue(*[Failure(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "5"})] * 3)
    with pytest.raises(ModelUnavailable) as error:
        await complete(model(url, max_retries=2), request())
    assert len(server.requests) == 3 and KEY not in str(error.value)


async def test_persistent_rate_limiting_is_reported_as_such(fake: tuple[FakeAnthropic, str]) -> None:
    server, url = fake
    server.enqueue(*[Failure(429, "rate_limit_error", "slow", headers={"retry-after-ms": "5"})] * 2)
    with pytest.raises(ModelRateLimited):
        await complete(model(url, max_retries=1), request())


async def test_bad_credentials_are_not_retried(fake: tuple[FakeAnthropic, str]) -> None:
    server, url = fake
    server.enqueue(Failure(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(ModelAuthError) as error:
        await complete(model(url, max_retries=3), request())
    assert len(server.requests) == 1 and KEY not in str(error.value)


async def test_an_error_event_mid_stream_is_an_error(fake: tuple[FakeAnthropic, str]) -> None:
    server, url = fake
    server.enqueue(Failure(500, "overloaded_error", "Overloaded", after_events=4))
    with pytest.raises(ModelUnavailable):
        [e async for e in model(url, max_retries=0).stream(request())]


async def test_a_silent_server_times_out(fake: tuple[FakeAnthropic, str]) -> None:
    server, url = fake
    server.enqueue(Turn(text="too slow to matter", chunk_delay_s=1.0))
    with pytest.raises(ModelTimeout):
        await complete(model(url, timeout_s=0.3, max_retries=0), request())
