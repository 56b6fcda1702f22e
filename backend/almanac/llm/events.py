"""What a model's stream yields, and the pure accumulator that turns a stream into a response."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from almanac.llm.messages import Block, ModelResponse, TextBlock, ToolUseBlock, Usage


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallReady:
    """A complete tool call (providers emit it when the call's arguments are fully received)."""

    call: ToolUseBlock


@dataclass(frozen=True)
class UsageReport:
    usage: Usage


@dataclass(frozen=True)
class StreamEnd:
    """The end of a model's answer. `declined`: the model says its text is not an answer but a
    statement that it cannot give one (the offline model with no way to help); such an answer
    carries nothing, and nothing is charged for it (`chat/turn.py` reports it as `declined`)."""

    stop_reason: str
    declined: bool = False


ModelEvent = TextDelta | ToolCallReady | UsageReport | StreamEnd


def accumulate(events: Iterable[ModelEvent]) -> ModelResponse:
    """The response a sequence of stream events describes: text runs merged, tool calls in order,
    usage summed, the last stop reason."""
    blocks: list[Block] = []
    text: list[str] = []
    usage = Usage()
    stop_reason = "end_turn"
    for event in events:
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, ToolCallReady):
            if text:
                blocks.append(TextBlock("".join(text)))
                text = []
            blocks.append(event.call)
        elif isinstance(event, UsageReport):
            usage = usage + event.usage
        elif isinstance(event, StreamEnd):
            stop_reason = event.stop_reason
    if text:
        blocks.append(TextBlock("".join(text)))
    if any(isinstance(block, ToolUseBlock) for block in blocks):
        stop_reason = "tool_use"
    return ModelResponse(content=tuple(blocks), stop_reason=stop_reason, usage=usage)
