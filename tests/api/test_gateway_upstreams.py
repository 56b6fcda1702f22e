"""The gateway in front of real-wire fake upstreams, with the official anthropic SDK as client:
an OpenAI-compatible server (converted both ways, streaming included) and the Anthropic API
(passed through)."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import pytest
from tests.api.gateway_support import gateway
from tests.fakes.anthropic_server import Failure as AnthropicFailure
from tests.fakes.anthropic_server import FakeAnthropic, Turn
from tests.fakes.openai_server import Failure, FakeOpenAI, Reply
from tests.fakes.server import ServerThread

WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


@pytest.fixture
def openai_fake() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    with ServerThread(fake.app) as server:
        yield fake, server.url + "/v1"


@pytest.fixture
def anthropic_fake() -> Iterator[tuple[FakeAnthropic, str]]:
    fake = FakeAnthropic()
    with ServerThread(fake.app) as server:
        yield fake, server.url


@pytest.mark.parametrize(
    ("requested", "upstream_model"),
    [("claude-opus-4-6", "big-m"), ("claude-sonnet-4-6", "mid-m"), ("claude-haiku-4-5", "small-m"), ("qwen3", "qwen3")],
)
async def test_tiers_map_model_names_to_the_configured_models(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], requested: str, upstream_model: str
) -> None:
    fake, url = openai_fake
    fake.enqueue(Reply(text="Hello there", prompt_tokens=21, completion_tokens=3))
    settings = {"openai_base_url": url, "big_model": "big-m", "middle_model": "mid-m", "small_model": "small-m"}
    async with gateway(sqlite_url, **settings) as gw:
        message = await gw.client.messages.create(
            model=requested, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )
        assert message.model == requested
        assert message.content[0].text.strip() == "Hello there"  # type: ignore[union-attr]
        assert (message.usage.input_tokens, message.usage.output_tokens) == (21, 3)
        assert fake.requests[0]["body"]["model"] == upstream_model
        rows = await gw.usage()
        assert (rows[0].upstream, rows[0].upstream_model, rows[0].input_tokens) == ("openai", upstream_model, 21)


async def test_request_conversion_system_images_tools_tool_choice_and_results(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str]
) -> None:
    fake, url = openai_fake
    fake.enqueue(Reply(text="It is sunny."))
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather in Oslo? Here is a map."},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "sunny"}]}
            ],
        },
    ]
    async with gateway(sqlite_url, openai_base_url=url) as gw:
        await gw.client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=300,
            system=[{"type": "text", "text": "Be brief."}],
            messages=messages,  # type: ignore[arg-type]
            tools=[WEATHER],  # type: ignore[list-item]
            tool_choice={"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
            stop_sequences=["STOP"],
        )
    body = fake.requests[0]["body"]
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    }
    assistant = body["messages"][2]
    assert assistant["content"] == "Checking."
    assert assistant["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city":"Oslo"}'}
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"}
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["parallel_tool_calls"] is False and body["max_tokens"] == 300
    assert "stop" not in body  # the gateway applies stop sequences itself (see test_gateway_stops.py)


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_use_round_trip_through_an_openai_upstream(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], stream: bool
) -> None:
    fake, url = openai_fake
    fake.enqueue(
        Reply(
            text="Let me check.",
            tool_calls=[("call_1", "get_weather", {"city": "Oslo"}), ("call_2", "get_weather", {"city": "Rome"})],
        ),
        Reply(text="Oslo is sunny, Rome is warm."),
    )
    async with gateway(sqlite_url, openai_base_url=url) as gw:
        ask = [{"role": "user", "content": "Weather in Oslo and Rome?"}]
        kwargs = {"model": "claude-sonnet-4-6", "max_tokens": 200, "tools": [WEATHER]}
        if stream:
            async with gw.client.messages.stream(messages=ask, **kwargs) as events:  # type: ignore[arg-type]
                kinds = [(e.type, getattr(getattr(e, "delta", None), "type", None)) async for e in events]
                first = await events.get_final_message()
            assert ("content_block_delta", "input_json_delta") in kinds
        else:
            first = await gw.client.messages.create(messages=ask, **kwargs)  # type: ignore[arg-type]
        assert first.stop_reason == "tool_use"
        assert first.content[0].text.strip() == "Let me check."  # type: ignore[union-attr]
        calls = [block for block in first.content if block.type == "tool_use"]
        assert [(c.id, c.name, c.input) for c in calls] == [
            ("call_1", "get_weather", {"city": "Oslo"}),
            ("call_2", "get_weather", {"city": "Rome"}),
        ]
        follow_up = [
            *ask,
            {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
                    {"type": "tool_result", "tool_use_id": "call_2", "content": "warm", "is_error": False},
                ],
            },
        ]
        answer = await gw.client.messages.create(messages=follow_up, **kwargs)  # type: ignore[arg-type]
        assert answer.stop_reason == "end_turn" and "sunny" in answer.content[0].text  # type: ignore[union-attr]
    tool_messages = [m for m in fake.requests[1]["body"]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1", "call_2"]


@pytest.mark.parametrize("stream", [True])  # (the fake sends broken arguments only when streaming; see unit tests)
async def test_broken_tool_arguments_from_the_upstream_are_repaired(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], stream: bool
) -> None:
    fake, url = openai_fake
    fake.enqueue(Reply(tool_calls=[("call_1", "get_weather", {})], raw_arguments="{'city': 'Oslo',}"))
    async with gateway(sqlite_url, openai_base_url=url) as gw:
        kwargs = {
            "model": "claude-haiku-4-5",
            "max_tokens": 50,
            "tools": [WEATHER],
            "messages": [{"role": "user", "content": "x"}],
        }
        if stream:
            async with gw.client.messages.stream(**kwargs) as events:  # type: ignore[arg-type]
                message = await events.get_final_message()
        else:
            message = await gw.client.messages.create(**kwargs)  # type: ignore[arg-type]
        assert message.content[0].input == {"city": "Oslo"}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("failure", "error", "kind"),
    [
        (Failure(500, "boom"), anthropic.InternalServerError, "api_error"),
        (Failure(429, "slow down", {"retry-after": "7"}), anthropic.RateLimitError, "rate_limit_error"),
        (Failure(401, "bad key"), anthropic.InternalServerError, "api_error"),
        (Failure(404, "no such model"), anthropic.NotFoundError, "not_found_error"),
        (Failure(400, "bad request"), anthropic.BadRequestError, "invalid_request_error"),
        (Failure(503, "unavailable", {"retry-after": "2"}), anthropic.OverloadedError, "overloaded_error"),
        (Failure(529, "overloaded"), anthropic.OverloadedError, "overloaded_error"),
        (Failure(408, "request timeout"), anthropic.GatewayTimeoutError, "timeout_error"),
        (Failure(504, "gateway timeout"), anthropic.GatewayTimeoutError, "timeout_error"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_upstream_failures_become_anthropic_errors(
    sqlite_url: str,
    openai_fake: tuple[FakeOpenAI, str],
    failure: Failure,
    error: type[Exception],
    kind: str,
    stream: bool,
) -> None:
    fake, url = openai_fake
    fake.enqueue(failure)
    async with gateway(sqlite_url, openai_base_url=url) as gw:
        with pytest.raises(error) as raised:
            kwargs = {"model": "claude-haiku-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
            if stream:
                async with gw.client.messages.stream(**kwargs) as events:  # type: ignore[arg-type]
                    await events.get_final_message()
            else:
                await gw.client.messages.create(**kwargs)  # type: ignore[arg-type]
        assert raised.value.body["error"]["type"] == kind  # type: ignore[attr-defined]
        if "retry-after" in failure.headers:
            assert raised.value.response.headers["retry-after"] == failure.headers["retry-after"]  # type: ignore[attr-defined]
        rows = await gw.usage()
        assert rows[0].error_type == kind


async def test_an_unreachable_upstream_is_an_api_error(sqlite_url: str) -> None:
    async with gateway(sqlite_url, openai_base_url="http://127.0.0.1:9/v1") as gw:
        with pytest.raises(anthropic.InternalServerError) as raised:
            await gw.client.messages.create(
                model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        assert "could not reach" in raised.value.body["error"]["message"]  # type: ignore[index]


async def test_an_anthropic_upstream_is_passed_through(
    sqlite_url: str, anthropic_fake: tuple[FakeAnthropic, str]
) -> None:
    fake, url = anthropic_fake
    fake.enqueue(
        Turn(text="Hi from Claude", input_tokens=40, output_tokens=4),
        Turn(text="Calling.", tool_calls=[("toolu_9", "get_weather", {"city": "Paris"})]),
    )
    settings = {"anthropic_api_key": "sk-ant-upstream", "anthropic_base_url": url, "gateway_upstream": "anthropic"}
    async with gateway(sqlite_url, **settings) as gw:
        message = await gw.client.messages.create(
            model="claude-opus-4-6",
            max_tokens=20,
            messages=[{"role": "user", "content": "hi"}],
            extra_body={"top_k": 5},
        )
        assert message.content[0].text == "Hi from Claude"  # type: ignore[union-attr]
        assert (message.usage.input_tokens, message.usage.output_tokens) == (40, 4)
        async with gw.client.messages.stream(
            model="claude-opus-4-6",
            max_tokens=20,
            messages=[{"role": "user", "content": "weather?"}],
            tools=[WEATHER],  # type: ignore[list-item]
        ) as events:
            streamed = await events.get_final_message()
        assert streamed.content[1].input == {"city": "Paris"}  # type: ignore[union-attr]
        assert streamed.model == "claude-opus-4-6"
    first = fake.requests[0]
    assert first["body"]["model"] == "claude-opus-4-6" and first["body"]["top_k"] == 5
    assert first["headers"]["x-api-key"] == "sk-ant-upstream"


async def test_the_callers_beta_header_reaches_an_anthropic_upstream(
    sqlite_url: str, anthropic_fake: tuple[FakeAnthropic, str]
) -> None:
    fake, url = anthropic_fake
    settings = {"anthropic_api_key": "k", "anthropic_base_url": url, "gateway_upstream": "anthropic"}
    async with gateway(sqlite_url, **settings) as gw:
        await gw.client.messages.create(
            model="claude-opus-4-6",
            max_tokens=20,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"anthropic-beta": "context-management-2025-06-27"},
        )
    assert fake.requests[0]["headers"]["anthropic-beta"] == "context-management-2025-06-27"


async def test_an_error_event_mid_stream_reaches_the_client_as_an_error_event(
    sqlite_url: str, anthropic_fake: tuple[FakeAnthropic, str]
) -> None:
    fake, url = anthropic_fake
    fake.enqueue(AnthropicFailure(error_type="overloaded_error", message="Overloaded", after_events=4))
    settings = {"anthropic_api_key": "k", "anthropic_base_url": url, "gateway_upstream": "anthropic"}
    async with gateway(sqlite_url, **settings) as gw:
        with pytest.raises(anthropic.APIStatusError) as raised:
            async with gw.client.messages.stream(
                model="claude-opus-4-6", max_tokens=20, messages=[{"role": "user", "content": "x"}]
            ) as events:
                await events.get_final_message()
        assert raised.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        (
            AnthropicFailure(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
            anthropic.BadRequestError,
        ),
        (AnthropicFailure(529, "overloaded_error", "Overloaded", {"retry-after": "4"}), anthropic.OverloadedError),
        (
            AnthropicFailure(413, "request_too_large", "Request exceeds the maximum size"),
            anthropic.ContentTooLargeError,
        ),
    ],
)
async def test_an_anthropic_upstreams_refusal_reaches_the_client_word_for_word(
    sqlite_url: str, anthropic_fake: tuple[FakeAnthropic, str], failure: AnthropicFailure, error: type[Exception]
) -> None:
    fake, url = anthropic_fake
    fake.enqueue(failure)
    settings = {"anthropic_api_key": "k", "anthropic_base_url": url, "gateway_upstream": "anthropic"}
    async with gateway(sqlite_url, **settings) as gw:
        with pytest.raises(error) as raised:
            await gw.client.messages.create(
                model="claude-opus-4-6", max_tokens=20, messages=[{"role": "user", "content": "x"}]
            )
    body = raised.value.body["error"]  # type: ignore[attr-defined]
    assert (body["type"], body["message"]) == (failure.error_type, failure.message)
    assert raised.value.status_code == failure.status  # type: ignore[attr-defined]
    if failure.headers:
        assert raised.value.response.headers["retry-after"] == "4"  # type: ignore[attr-defined]


async def test_an_upstreams_fractional_retry_after_is_rounded_up(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str]
) -> None:
    """An upstream asking for 35.4 s (not a valid HTTP value) is passed on as 36, never 35."""
    fake, url = openai_fake
    fake.enqueue(Failure(429, "slow down", {"retry-after": "35.4"}))
    async with gateway(sqlite_url, openai_base_url=url) as gw:
        with pytest.raises(anthropic.RateLimitError) as raised:
            await gw.client.messages.create(
                model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
    assert raised.value.response.headers["retry-after"] == "36"
