"""The text tool protocol as a Model wrapper: manifest in, calls parsed out, earlier tool blocks as
text; the adaptive switch when a server refuses tools; and `build_model` wiring it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.fakes.openai_server import Failure, FakeOpenAI, Reply
from tests.fakes.server import ServerThread

from almanac.llm.base import ModelBadRequest, complete
from almanac.llm.events import StreamEnd, TextDelta, ToolCallReady
from almanac.llm.fake import ScriptedModel, reply
from almanac.llm.messages import Message, ModelRequest, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock
from almanac.llm.providers import ProviderConfig, build_model
from almanac.llm.render import ToolFormat
from almanac.llm.text_tools import AdaptiveToolModel, TextToolModel, text_request, with_text_tools

LOOKUP = ToolSpec("lookup", "Look something up", {"type": "object", "properties": {"q": {"type": "string"}}})


def request(*messages: Message, tool_choice: str = "auto") -> ModelRequest:
    return ModelRequest("Be helpful.", messages or (Message.user("find x"),), (LOOKUP,), tool_choice=tool_choice)  # type: ignore[arg-type]


def test_the_inner_request_has_the_manifest_and_no_tools_parameter() -> None:
    converted = text_request(request())
    assert converted.tools == ()
    assert converted.system.startswith("Be helpful.\n\n# Tools") and "**lookup**" in converted.system
    assert "```tool" in converted.system


def test_earlier_calls_and_results_become_text() -> None:
    history = (
        Message.user("find x"),
        Message("assistant", (TextBlock("Looking."), ToolUseBlock("t1", "lookup", {"q": "x"}))),
        Message("user", (ToolResultBlock("t1", "x is 42", False),)),
    )
    converted = text_request(request(*history), ToolFormat.QWEN_XML)
    assistant, result = converted.messages[1].text, converted.messages[2].text
    assert assistant == 'Looking.\n\n<tool_call>\n{"name": "lookup", "arguments": {"q": "x"}}\n</tool_call>'
    assert result == '<tool_result name="lookup" status="result">\nx is 42\n</tool_result>'


def test_tool_choice_none_sends_no_manifest() -> None:
    converted = text_request(request(tool_choice="none"))
    assert "# Tools" not in converted.system and "do not write any tool call" in converted.system


async def test_with_tool_choice_none_a_call_the_model_writes_anyway_does_not_come_out() -> None:
    inner = ScriptedModel([reply('Sure.\n```tool\n{"name": "lookup", "arguments": {"q": "x"}}\n```')])
    events = [event async for event in TextToolModel(inner).stream(request(tool_choice="none"))]
    assert not any(isinstance(e, ToolCallReady) for e in events)
    assert events[-1] == StreamEnd("end_turn")


async def test_calls_in_the_reply_become_tool_call_events_and_prose_streams() -> None:
    inner = ScriptedModel(
        [reply('Let me check.\n```tool\n{"name": "lookup", "arguments": {"q": "x"}}\n```\nResult: 42')]
    )
    model = TextToolModel(inner)
    events = [event async for event in model.stream(request())]
    calls = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert [(c.name, dict(c.input), c.parse_error) for c in calls] == [("lookup", {"q": "x"}, None)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)).strip() == "Let me check."
    assert inner.requests[0].tools == ()
    assert (await complete(TextToolModel(ScriptedModel([reply("plain answer")])), request())).stop_reason == "end_turn"


async def test_a_call_that_cannot_be_understood_carries_a_parse_error() -> None:
    model = TextToolModel(ScriptedModel([reply('```tool\n{"name": "lookup", "arguments": [1]}\n```')]))
    response = await complete(model, request())
    assert response.stop_reason == "tool_use"
    assert response.tool_calls[0].name == "lookup" and "JSON object" in (response.tool_calls[0].parse_error or "")


async def test_adaptive_model_switches_to_text_when_tools_are_refused() -> None:
    inner = ScriptedModel(
        [
            ModelBadRequest("the model server rejected the request (400: llama3 does not support tools)"),
            reply('{"name": "lookup", "arguments": {"q": "y"}}'),
            reply('{"name": "lookup", "arguments": {"q": "z"}}'),
        ]
    )
    model = AdaptiveToolModel(inner)
    first = await complete(model, request())
    assert first.tool_calls[0].input == {"q": "y"} and not model.native
    await complete(model, request())
    assert inner.requests[1].tools == () and inner.requests[2].tools == ()


async def test_adaptive_model_keeps_other_errors() -> None:
    model = AdaptiveToolModel(ScriptedModel([ModelBadRequest("max_tokens is too large")]))
    with pytest.raises(ModelBadRequest):
        await complete(model, request())
    assert model.native


def test_modes() -> None:
    native = ScriptedModel()
    assert with_text_tools(native, "true") is native
    assert isinstance(with_text_tools(native, "false"), TextToolModel)
    assert isinstance(with_text_tools(native, "auto"), AdaptiveToolModel)
    native.supports_tools = False  # type: ignore[misc]
    assert isinstance(with_text_tools(native, "auto"), TextToolModel)


@pytest.fixture
def fake() -> Iterator[tuple[FakeOpenAI, str]]:
    server = FakeOpenAI()
    with ServerThread(server.app) as thread:
        yield server, thread.url + "/v1"


async def test_build_model_with_native_tools_off_speaks_the_text_protocol(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.enqueue(Reply(text='<tool_call>{"name": "lookup", "arguments": {"q": "w"}}</tool_call>'))
    model = build_model(ProviderConfig("openai", "llama", None, url, native_tools="false"))
    response = await complete(model, request())
    assert response.tool_calls[0].input == {"q": "w"}
    assert "tools" not in server.requests[0]["body"]


async def test_build_model_auto_falls_back_when_the_server_refuses_tools(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.enqueue(Failure(400, "registry.ollama.ai/library/gemma:2b does not support tools"), Reply(text="plain"))
    model = build_model(ProviderConfig("openai", "gemma", None, url, max_retries=0, native_tools="auto"))
    assert (await complete(model, request())).text.strip() == "plain"
    assert "tools" in server.requests[0]["body"] and "tools" not in server.requests[1]["body"]
