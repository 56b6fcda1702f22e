"""The OpenAI-compatible provider against a local server speaking Chat Completions streaming."""

from collections.abc import Iterator

import pytest
from tests.fakes.openai_server import Failure, FakeOpenAI, Reply
from tests.fakes.server import ServerThread

from almanac.llm.base import ModelAuthError, ModelBadRequest, ModelTimeout, ModelUnavailable, complete
from almanac.llm.events import StreamEnd, TextDelta, UsageReport
from almanac.llm.messages import Message, ModelRequest, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock, Usage
from almanac.llm.providers.openai_compat import OpenAICompatModel

KEY = "sk-openai-test-secret"
SPEC = ToolSpec("lookup", "Look up", {"type": "object", "properties": {"q": {"type": "string"}}})


@pytest.fixture
def fake() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    with ServerThread(fake.app) as server:
        yield fake, server.url + "/v1"


def model(url: str, **kwargs: object) -> OpenAICompatModel:
    return OpenAICompatModel(model="llama3.2", api_key=KEY, base_url=url, **kwargs)  # type: ignore[arg-type]


def request(**kwargs: object) -> ModelRequest:
    return ModelRequest("You are helpful.", (Message.user("hello"),), **kwargs)  # type: ignore[arg-type]


async def test_streams_text_and_usage(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.enqueue(Reply(text="Hi from a local model", prompt_tokens=17, completion_tokens=5))
    events = [e async for e in model(url).stream(request())]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)).strip() == "Hi from a local model"
    assert next(e.usage for e in events if isinstance(e, UsageReport)).input_tokens == 17
    assert events[-1] == StreamEnd("end_turn")
    assert server.requests[0]["body"]["stream_options"] == {"include_usage": True}


async def test_tool_call_fragments_are_joined_by_index(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.enqueue(
        Reply(tool_calls=[("call_a", "lookup", {"q": "vLLM tool calling"}), ("call_b", "lookup", {"q": "b"})])
    )
    response = await complete(model(url), request(tools=(SPEC,)))
    assert response.tool_calls == (
        ToolUseBlock("call_a", "lookup", {"q": "vLLM tool calling"}),
        ToolUseBlock("call_b", "lookup", {"q": "b"}),
    )
    assert response.stop_reason == "tool_use"


async def test_invalid_arguments_become_a_parse_error(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.enqueue(Reply(tool_calls=[("call_a", "lookup", {})], raw_arguments="{'q': single quotes}"))
    response = await complete(model(url), request(tools=(SPEC,)))
    assert response.tool_calls[0].parse_error and response.tool_calls[0].input == {}


async def test_the_request_uses_the_wire_format(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    conversation = (
        Message.user("[ID:q1] find x"),
        Message("assistant", (TextBlock("Checking."), ToolUseBlock("call_1", "lookup", {"q": "x"}))),
        Message("user", (ToolResultBlock("call_1", "[ID:q1-t1] found", False), TextBlock("Answer now."))),
    )
    await complete(model(url), ModelRequest("sys", conversation, (SPEC,), 99, tool_choice="none"))
    sent = server.requests[0]
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"
    body = sent["body"]
    assert (body["model"], body["max_tokens"], body["stream"], body["tool_choice"]) == ("llama3.2", 99, True, "none")
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "lookup", "description": "Look up", "parameters": dict(SPEC.input_schema)},
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "[ID:q1] find x"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "[ID:q1-t1] found"},
        {"role": "user", "content": "Answer now."},
    ]


async def test_no_key_is_needed_for_local_servers(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    await complete(OpenAICompatModel(model="m", base_url=url), request())
    assert server.requests[0]["headers"]["authorization"] == "Bearer not-needed"


async def test_retries_honour_retry_after_then_succeed(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.enqueue(
        Failure(429, "rate limited", headers={"retry-after": "3"}),
        Failure(503, "busy", headers={"retry-after-ms": "5"}),
        Reply(text="ok now"),
    )
    response = await complete(model(url, max_retries=3), request())
    assert response.text.strip() == "ok now" and len(server.requests) == 3
    # The SDK's own first backoff is under a second: only Retry-After makes the client wait 3 s.
    assert server.requests[1]["at"] - server.requests[0]["at"] >= 2.9


async def test_errors_map_to_our_errors_without_the_key(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.enqueue(Failure(401, "bad key"))
    with pytest.raises(ModelAuthError) as auth:
        await complete(model(url, max_retries=2), request())
    server.enqueue(Failure(400, "context length exceeded"))
    with pytest.raises(ModelBadRequest, match="context length exceeded"):
        await complete(model(url, max_retries=2), request())
    server.enqueue(*[Failure(500, "boom", headers={"retry-after-ms": "5"})] * 2)
    with pytest.raises(ModelUnavailable):
        await complete(model(url, max_retries=1), request())
    assert len(server.requests) == 4 and KEY not in str(auth.value)


async def test_a_silent_server_times_out(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.enqueue(Reply(text="slow words here", chunk_delay_s=1.0))
    with pytest.raises(ModelTimeout):
        await complete(model(url, timeout_s=0.3, max_retries=0), request())


async def test_a_llama_cpp_stream_without_usage_gets_estimated_usage(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.usage = "llama.cpp"  # llama-cpp-python ignores stream_options.include_usage
    server.enqueue(Reply(text="Hi from a local model"))
    events = [e async for e in model(url).stream(request())]
    reports = [e.usage for e in events if isinstance(e, UsageReport)]
    assert len(reports) == 1 and reports[0].estimated
    assert reports[0].input_tokens > 0 and reports[0].output_tokens > 0
    assert events[-1] == StreamEnd("end_turn")


async def test_a_server_that_reports_usage_is_not_estimated(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.enqueue(Reply(text="Hi", prompt_tokens=17, completion_tokens=5))
    response = await complete(model(url), request())
    assert response.usage == Usage(17, 5, estimated=False)
