"""What Claude Code 2.1 sends with every request, through the gateway to an OpenAI-compatible
server (and passed through to the Anthropic API): the request shapes are Claude Code's own,
captured from the real CLI (tests/fixtures/claude_code/). Mid-conversation system messages, its
max_tokens of 64000, output_config (effort, structured output), thinking, and an empty text block
after tool results; each against a fake that refuses what real servers refuse."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from tests.api.gateway_support import claude_code_request, gateway, send_raw, sse
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.server import ServerThread

from almanac.gateway.refusals import context_refusal


@pytest.fixture
def openai_fake() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    with ServerThread(fake.app) as server:
        yield fake, server.url + "/v1"


def _roles(request: dict[str, Any]) -> list[str]:
    return [message["role"] for message in request["body"]["messages"]]


async def _answer(gw: Any, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """The final message of a raw request (SSE or JSON)."""
    response = await send_raw(gw, headers, body)
    assert response.status_code == 200, response.text
    if not body.get("stream"):
        return dict(response.json())
    events = sse(response.text)
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    return {"events": events, "stop": next(e for e in events if e["type"] == "message_delta")["delta"]}


# --- Mid-conversation system messages ------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_a_mid_conversation_system_message_stays_where_the_server_accepts_it(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], stream: bool
) -> None:
    fake, url = openai_fake
    headers, body = claude_code_request("main_first", stream=stream)
    async with gateway(sqlite_url, openai_base_url=url) as gw:
        await _answer(gw, body, headers)
    assert _roles(fake.requests[0]) == ["system", "user", "system"]
    assert fake.refusals == []


@pytest.mark.parametrize("stream", [True, False])
async def test_a_server_refusing_them_gets_them_folded_into_the_user_turn_from_then_on(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], stream: bool
) -> None:
    fake, url = openai_fake
    fake.system_first_only = True
    headers, body = claude_code_request("main_continuation", stream=stream)
    async with gateway(sqlite_url, openai_base_url=url) as gw:
        await _answer(gw, body, headers)
        await _answer(gw, body, headers)  # the next request is folded at once
    assert fake.refusals == ["System message must be at the beginning."]
    folded = fake.requests[1]["body"]["messages"]
    assert [m["role"] for m in folded] == ["system", "user", "assistant", "tool"]
    assert "<system-message>\nAvailable agent types for the Agent tool:" in folded[1]["content"]
    assert folded[1]["content"].index("What does notes.txt say?") < folded[1]["content"].index("<system-message>")
    assert _roles(fake.requests[2]) == ["system", "user", "assistant", "tool"]


async def test_fold_folds_from_the_start_and_keep_passes_the_refusal_on(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str]
) -> None:
    fake, url = openai_fake
    fake.system_first_only = True
    headers, body = claude_code_request("main_first", stream=False)
    async with gateway(sqlite_url, openai_base_url=url, openai_system_messages="fold") as gw:
        await _answer(gw, body, headers)
    assert fake.refusals == [] and _roles(fake.requests[0]) == ["system", "user"]
    async with gateway(sqlite_url, openai_base_url=url, openai_system_messages="keep") as gw:
        response = await send_raw(gw, headers, body)
    assert response.status_code == 400 and "System message must be at the beginning" in response.text


@pytest.mark.parametrize("stream", [True, False])
async def test_an_empty_text_block_after_tool_results_adds_no_user_message(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], stream: bool
) -> None:
    fake, url = openai_fake
    headers, body = claude_code_request("main_continuation", stream=stream)
    last = body["messages"][-1]
    body["messages"][-1] = {**last, "content": [*last["content"], {"type": "text", "text": ""}]}
    async with gateway(sqlite_url, openai_base_url=url) as gw:
        await _answer(gw, body, headers)
    sent = fake.requests[0]["body"]["messages"]
    assert sent[-1]["role"] == "tool" and not any(m["role"] == "user" and not m["content"] for m in sent)


# --- max_tokens: the client's value stands up to the model's limit --------------------------------


@pytest.mark.parametrize(
    ("settings", "upstream_max_tokens"),
    [
        ({"middle_model": "gpt-4o"}, 16_384),  # the model's known output limit
        ({"middle_model": "my-local-model"}, 64_000),  # an unknown model: the client's value
        ({"middle_model": "gpt-4o", "middle_model_max_tokens": 12_000}, 12_000),  # the tier's setting
        ({"middle_model": "my-local-model", "max_output_tokens": 4096}, 64_000),  # the chat setting is for chat
    ],
)
async def test_claude_codes_max_tokens_stands_up_to_the_models_limit(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], settings: dict[str, Any], upstream_max_tokens: int
) -> None:
    fake, url = openai_fake
    headers, body = claude_code_request("main_first", model="claude-sonnet-4-6")
    assert body["max_tokens"] == 64_000
    async with gateway(sqlite_url, openai_base_url=url, **settings) as gw:
        await _answer(gw, body, headers)
    assert fake.requests[0]["body"]["max_tokens"] == upstream_max_tokens


async def test_a_stated_output_limit_is_learned_from_the_first_refusal(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str]
) -> None:
    fake, url = openai_fake
    fake.max_output = 8192
    headers, body = claude_code_request("main_first", model="claude-sonnet-4-6")
    async with gateway(sqlite_url, openai_base_url=url, middle_model="my-local-model") as gw:
        await _answer(gw, body, headers)
        await _answer(gw, body, headers)
    assert [r["body"]["max_tokens"] for r in fake.requests] == [64_000, 8192, 8192]
    assert len(fake.refusals) == 1


@pytest.mark.parametrize("stream", [True, False])
async def test_a_prompt_that_fits_gets_the_room_left_in_the_window(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], stream: bool
) -> None:
    fake, url = openai_fake
    fake.context_window = 6000
    headers, body = claude_code_request("main_first", model="claude-sonnet-4-6", stream=stream)
    async with gateway(sqlite_url, openai_base_url=url, middle_model="my-local-model") as gw:
        await _answer(gw, body, headers)
    assert fake.refused_too_long == 1
    retried = fake.requests[1]["body"]["max_tokens"]
    assert retried + fake.prompt_tokens[-1] == 6000


# --- Prompt too long, in Anthropic's words ---------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_a_prompt_over_the_window_is_refused_in_anthropics_words(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], stream: bool
) -> None:
    fake, url = openai_fake
    fake.context_window = 500
    async with gateway(sqlite_url, openai_base_url=url, middle_model="my-local-model") as gw:
        with pytest.raises(anthropic.BadRequestError) as raised:
            kwargs: dict[str, Any] = {
                "model": "claude-sonnet-4-6",
                "max_tokens": 64_000,
                "messages": [{"role": "user", "content": "tell me everything " * 400}],
            }
            if stream:
                async with gw.client.messages.stream(**kwargs) as events:
                    await events.get_final_message()
            else:
                await gw.client.messages.create(**kwargs)
    error = raised.value.body["error"]  # type: ignore[index]
    prompt = fake.prompt_tokens[0]
    assert error["type"] == "invalid_request_error"
    assert error["message"] == f"prompt is too long: {prompt} tokens > 500 maximum"
    # …which is what Claude Code matches to compact its conversation (its own pattern):
    assert context_refusal(error["message"]) is not None
    assert len(fake.requests) == 1  # no retry can help


# --- output_config, thinking ------------------------------------------------------------------------


async def test_effort_becomes_reasoning_effort_and_is_left_out_where_refused(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str]
) -> None:
    fake, url = openai_fake
    headers, body = claude_code_request("main_first", model="claude-sonnet-4-6")
    assert body["output_config"] == {"effort": "high"}
    async with gateway(sqlite_url, openai_base_url=url, middle_model="reasoner") as gw:
        await _answer(gw, body, headers)
        fake.unsupported = {"reasoning_effort"}
        async with gateway(sqlite_url, openai_base_url=url, middle_model="gpt-4o") as plain:
            await _answer(plain, body, headers)
            await _answer(plain, body, headers)
    efforts = [r["body"].get("reasoning_effort") for r in fake.requests]
    assert efforts == ["high", "high", None, None] and len(fake.refusals) == 1
    assert "context_management" not in fake.requests[0]["body"] and "thinking" not in fake.requests[0]["body"]


async def test_structured_output_becomes_a_json_schema_response_format(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str]
) -> None:
    fake, url = openai_fake
    fake.enqueue(Reply(text='{"title": "Read the notes file"}'))
    headers, body = claude_code_request("title", model="claude-haiku-4-5")
    async with gateway(sqlite_url, openai_base_url=url) as gw:
        answer = await _answer(gw, body, headers)
    assert answer["stop"]["stop_reason"] == "end_turn"
    sent = fake.requests[0]["body"]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == body["output_config"]["format"]["schema"]


@pytest.mark.parametrize("stream", [True, False])
async def test_reasoning_comes_back_as_a_signed_thinking_block(
    sqlite_url: str, openai_fake: tuple[FakeOpenAI, str], stream: bool
) -> None:
    fake, url = openai_fake
    fake.enqueue(Reply(text="The file says 42.", reasoning="The user wants the file read."))
    async with gateway(sqlite_url, openai_base_url=url) as gw:
        kwargs: dict[str, Any] = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 2000,
            "messages": [{"role": "user", "content": "what does it say?"}],
            "thinking": {"type": "adaptive"},
        }
        if stream:
            async with gw.client.messages.stream(**kwargs) as events:
                message = await events.get_final_message()
        else:
            message = await gw.client.messages.create(**kwargs)
    thinking, text = message.content
    assert thinking.type == "thinking" and thinking.thinking.strip() == "The user wants the file read."
    assert thinking.signature and text.type == "text" and text.text.strip() == "The file says 42."


async def test_reasoning_is_dropped_when_thinking_is_off(sqlite_url: str, openai_fake: tuple[FakeOpenAI, str]) -> None:
    fake, url = openai_fake
    fake.enqueue(Reply(text="42.", reasoning="hidden"), Reply(text="42.", reasoning="hidden"))
    async with gateway(sqlite_url, openai_base_url=url) as gw:
        for stream in (False, True):
            kwargs: dict[str, Any] = {
                "model": "claude-sonnet-4-6",
                "max_tokens": 50,
                "messages": [{"role": "user", "content": "?"}],
            }
            if stream:
                async with gw.client.messages.stream(**kwargs) as events:
                    message = await events.get_final_message()
            else:
                message = await gw.client.messages.create(**kwargs)
            assert [block.type for block in message.content] == ["text"]


async def test_an_anthropic_upstream_gets_everything_passed_through(sqlite_url: str) -> None:
    fake = FakeAnthropic()
    headers, body = claude_code_request("main_continuation")
    with ServerThread(fake.app) as server:
        settings = {"anthropic_api_key": "k", "anthropic_base_url": server.url, "gateway_upstream": "anthropic"}
        async with gateway(sqlite_url, **settings) as gw:
            fake.validate = False  # the fake knows no system-role messages; the real API (with the beta) does
            await _answer(gw, body, headers)
    sent = fake.requests[0]
    for key in ("thinking", "output_config", "context_management", "max_tokens", "messages", "metadata"):
        assert sent["body"][key] == body[key]
    assert "mid-conversation-system-2026-04-07" in sent["headers"]["anthropic-beta"]
