"""What a model's stream yields, and the pure accumulator that turns a stream into a response.

A model's output is text from outside: what it says and the tool calls it makes (names, IDs,
arguments) are cleaned as they enter these events (`text.clean`: NUL and lone UTF-16 surrogates
become U+FFFD), so nothing downstream — a JSON response, an SSE event, a stored item, the next
request to a model — meets text it cannot encode."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from almanac.llm.messages import Block, ModelResponse, TextBlock, ToolUseBlock, Usage
from almanac.text.clean import clean_json, clean_text, is_clean


@dataclass(frozen=True)
class TextDelta:
    text: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", clean_text(self.text))


@dataclass(frozen=True)
class ToolCallReady:
    """A complete tool call (providers emit it when the call's arguments are fully received)."""

    call: ToolUseBlock

    def __post_init__(self) -> None:
        object.__setattr__(self, "call", clean_call(self.call))


def clean_call(call: ToolUseBlock) -> ToolUseBlock:
    """`call` with its ID, name and arguments cleaned (the same object when they already were)."""
    arguments = clean_json(dict(call.input))
    if is_clean(call.id) and is_clean(call.name) and arguments == call.input:
        return call
    return ToolUseBlock(clean_text(call.id), clean_text(call.name), arguments, call.parse_error)


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
