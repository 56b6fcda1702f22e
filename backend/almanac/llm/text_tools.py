"""Tool calling for models that lack it natively: a `Model` wrapper speaking a text protocol.

`TextToolModel(inner)` is a model with `supports_tools = True` whose inner model never receives a
`tools` parameter. Instead the system prompt carries a text manifest (`render.text_tool_prompt`),
earlier tool calls and results in the conversation are written out as text, and the inner model's
reply is searched for calls (`parse.CallSpotter`): prose streams as it comes, a possible call is
held back until the reply ends, and each call found becomes a `ToolCallReady` (with `parse_error`
set when it could not be understood, so the turn loop tells the model what was wrong).

`AdaptiveToolModel(inner)` uses native tool calling until the server rejects a request for having
tools (e.g. Ollama's "does not support tools"), then switches to the text protocol for good.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace

from almanac.llm.base import Model, ModelBadRequest
from almanac.llm.events import ModelEvent, StreamEnd, TextDelta, ToolCallReady
from almanac.llm.messages import Message, ModelRequest, TextBlock, ToolResultBlock, ToolUseBlock
from almanac.llm.parse import CallSpotter
from almanac.llm.render import ToolFormat, call_as_text, text_tool_prompt

NO_TOOLS_NOW = "Tools are not available for this answer: do not write any tool call; answer with what you have."


def text_request(request: ModelRequest, fmt: ToolFormat = ToolFormat.CONCISE) -> ModelRequest:
    """`request` for a model without native tools: manifest in the system prompt, tool blocks as
    text, no `tools` parameter (pure)."""
    names = {block.id: block.name for m in request.messages for block in m.content if isinstance(block, ToolUseBlock)}
    messages = tuple(_as_text(message, names, fmt) for message in request.messages)
    system = request.system
    if request.tools and request.tool_choice != "none":
        system = (
            f"{system}\n\n{text_tool_prompt(request.tools, fmt)}" if system else text_tool_prompt(request.tools, fmt)
        )
    elif request.tools:
        system = f"{system}\n\n{NO_TOOLS_NOW}" if system else NO_TOOLS_NOW
    return replace(request, system=system, messages=messages, tools=())


def _as_text(message: Message, names: dict[str, str], fmt: ToolFormat) -> Message:
    if not any(isinstance(block, ToolUseBlock | ToolResultBlock) for block in message.content):
        return message
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            parts.append(call_as_text(block.name, block.input, fmt))
        elif isinstance(block, ToolResultBlock):
            name = names.get(block.tool_use_id, "tool")
            status = "error" if block.is_error else "result"
            parts.append(f'<tool_result name="{name}" status="{status}">\n{block.content}\n</tool_result>')
    return Message(message.role, (TextBlock("\n\n".join(part for part in parts if part)),))


class TextToolModel:
    """Any model, given tools through the text protocol (see the module docstring)."""

    supports_tools = True

    def __init__(self, inner: Model, *, fmt: ToolFormat = ToolFormat.CONCISE) -> None:
        self.inner = inner
        self.fmt = fmt
        self.provider = inner.provider
        self.name = inner.name
        self.supports_streaming = inner.supports_streaming

    def __getattr__(self, attribute: str) -> object:
        # Capabilities the wrapped model has beyond the protocol (e.g. the offline model's add_rule).
        return getattr(self.inner, attribute)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        spotter = CallSpotter({spec.name for spec in request.tools})
        calls = 0
        async for event in self.inner.stream(text_request(request, self.fmt)):
            if isinstance(event, TextDelta):
                shown = spotter.feed(event.text)
                if shown:
                    yield TextDelta(shown)
            elif isinstance(event, StreamEnd):
                reply = spotter.finish()
                if reply.text:
                    yield TextDelta(reply.text)
                for parsed in reply.calls if request.tool_choice != "none" else ():
                    calls += 1
                    yield ToolCallReady(
                        ToolUseBlock(f"toolu_text_{uuid.uuid4().hex[:16]}", parsed.name, parsed.arguments, parsed.error)
                    )
                yield StreamEnd("tool_use" if calls else event.stop_reason)
            else:
                yield event


_TOOL_REJECTION = re.compile(r"\btools?\b|function[ _]?call", re.I)


def refuses_tools(message: str) -> bool:
    """Whether a server's refusal of a request with tools is about the tools themselves (Ollama's
    "does not support tools", vLLM's "tool choice requires --enable-auto-tool-choice", …)."""
    return bool(_TOOL_REJECTION.search(message))


class AdaptiveToolModel:
    """Native tool calling, switching to the text protocol once the server refuses tools."""

    supports_tools = True

    def __init__(self, inner: Model, *, fmt: ToolFormat = ToolFormat.CONCISE) -> None:
        self.inner = inner
        self.text = TextToolModel(inner, fmt=fmt)
        self.provider = inner.provider
        self.name = inner.name
        self.supports_streaming = inner.supports_streaming
        self.native = True

    def __getattr__(self, attribute: str) -> object:
        return getattr(self.inner, attribute)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if self.native and request.tools:
            try:
                async for event in _first_then_rest(self.inner.stream(request)):
                    yield event
                return
            except _RejectedTools:
                self.native = False
        source = self.text if request.tools else self.inner
        async for event in source.stream(request):
            yield event


class _RejectedTools(Exception):
    pass


async def _first_then_rest(events: AsyncIterator[ModelEvent]) -> AsyncIterator[ModelEvent]:
    """The events; a rejection of the tools before the first event becomes `_RejectedTools`."""
    iterator = aiter(events)
    try:
        first = await anext(iterator)
    except StopAsyncIteration:
        return
    except ModelBadRequest as exc:
        if refuses_tools(str(exc)):
            raise _RejectedTools from exc
        raise
    yield first
    async for event in iterator:
        yield event


def with_text_tools(model: Model, mode: str, *, fmt: ToolFormat = ToolFormat.CONCISE) -> Model:
    """The model to use for `mode`: `true` native tools, `false` the text protocol, `auto` native
    unless the model says it has none (`supports_tools = False`) or the server refuses them."""
    if mode == "true":
        return model
    if mode == "false" or not model.supports_tools:
        return TextToolModel(model, fmt=fmt)
    return AdaptiveToolModel(model, fmt=fmt)
