"""A scripted model for tests and benchmarks: it answers with whatever was enqueued, in order.

A step is a `ModelResponse`, a list of events, an exception to raise, or a callable taking the
request and returning an async iterator of events (for steps that wait on something).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

from almanac.llm.events import ModelEvent, StreamEnd, TextDelta, ToolCallReady, UsageReport
from almanac.llm.messages import ModelRequest, ModelResponse, TextBlock, ToolUseBlock, Usage

Step = ModelResponse | list[ModelEvent] | BaseException | Callable[[ModelRequest], AsyncIterator[ModelEvent]]
_ids = itertools.count(1)


def reply(text: str) -> ModelResponse:
    """A plain text answer."""
    return ModelResponse(content=(TextBlock(text),), stop_reason="end_turn", usage=Usage(10, 5))


def call(name: str, arguments: Mapping[str, Any] | None = None, *, call_id: str | None = None) -> ToolUseBlock:
    """A tool call block."""
    return ToolUseBlock(id=call_id or f"toolu_{next(_ids):04d}", name=name, input=dict(arguments or {}))


def calls(*tool_calls: ToolUseBlock, text: str = "") -> ModelResponse:
    """A response asking for these tool calls (optionally with some text first)."""
    content = ((TextBlock(text),) if text else ()) + tool_calls
    return ModelResponse(content=content, stop_reason="tool_use", usage=Usage(10, 5))


def events_of(response: ModelResponse, *, chunk: int = 0) -> list[ModelEvent]:
    """The stream events that describe `response`; text split in pieces of `chunk` characters."""
    events: list[ModelEvent] = []
    for block in response.content:
        if isinstance(block, TextBlock):
            size = chunk or max(1, len(block.text))
            events.extend(TextDelta(block.text[i : i + size]) for i in range(0, len(block.text), size))
        elif isinstance(block, ToolUseBlock):
            events.append(ToolCallReady(block))
    events.append(UsageReport(response.usage))
    events.append(StreamEnd(response.stop_reason))
    return events


class ScriptedModel:
    """Plays back enqueued steps; records every request it receives."""

    provider = "fake"
    supports_tools = True
    supports_streaming = True

    def __init__(self, steps: Iterable[Step] = (), *, name: str = "scripted", default: Step | None = None) -> None:
        self.name = name
        self._steps: deque[Step] = deque(steps)
        self._default = default
        self.requests: list[ModelRequest] = []

    def enqueue(self, *steps: Step) -> None:
        """Add steps to play after the ones already queued."""
        self._steps.extend(steps)

    @property
    def pending(self) -> int:
        return len(self._steps)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        if self._steps:
            step = self._steps.popleft()
        elif self._default is not None:
            step = self._default
        else:
            raise AssertionError("ScriptedModel: no step left for this request")
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, ModelResponse):
            for event in events_of(step):
                yield event
        elif isinstance(step, list):
            for event in step:
                yield event
        else:
            async for event in step(request):
                yield event
