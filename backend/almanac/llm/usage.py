"""Usage when a server reports none: every model call ends with the tokens it used.

Some OpenAI-compatible servers never report usage in a stream (llama-cpp-python ignores
`stream_options.include_usage`), some leave `usage` out of a complete response, and the offline
model has no tokenizer at all. Left alone, such calls would count as free. `ensure_usage` wraps a
provider's event stream: it passes every event through and, when the stream ends without usage
for text it did produce (or for a prompt it was sent), adds a `UsageReport` for the missing part,
counted with the conservative table of `llm/tokens.py` and marked `estimated`. Reported figures
are never replaced: an estimate only fills what the server left at zero.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from almanac.llm.events import ModelEvent, StreamEnd, TextDelta, ToolCallReady, UsageReport
from almanac.llm.messages import ModelRequest, ToolUseBlock, Usage
from almanac.llm.tokens import TokenCounter

_COUNTER = TokenCounter()


def request_tokens(request: ModelRequest) -> int:
    """An estimate of the input tokens `request` takes: system prompt, messages and tools."""
    return (
        (_COUNTER.count(request.system) if request.system else 0)
        + _COUNTER.count_messages(request.messages)
        + _COUNTER.count_tools(request.tools)
    )


def output_tokens(text: str, calls: tuple[ToolUseBlock, ...] | list[ToolUseBlock] = ()) -> int:
    """An estimate of the output tokens of `text` and tool calls (their names and arguments)."""
    total = _COUNTER.count(text) if text else 0
    for call in calls:
        total += _COUNTER.count(call.name) + _COUNTER.count(json.dumps(dict(call.input)))
    return total


def fill(reported: Usage, *, input_tokens: int | None, output_tokens: int | None) -> Usage:
    """What to add to `reported` so that neither side is zero where an estimate says it should not
    be (None: that side need not be filled). An empty `Usage` when nothing is missing."""
    missing_in = (input_tokens or 0) if reported.input_tokens == 0 else 0
    missing_out = (output_tokens or 0) if reported.output_tokens == 0 else 0
    if not missing_in and not missing_out:
        return Usage()
    return Usage(missing_in, missing_out, estimated=True)


async def ensure_usage(events: AsyncIterator[ModelEvent], request: ModelRequest) -> AsyncIterator[ModelEvent]:
    """`events`, with an estimated `UsageReport` before the `StreamEnd` when the stream reported no
    (or only part of its) usage; see the module docstring."""
    reported = Usage()
    text: list[str] = []
    calls: list[ToolUseBlock] = []
    async for event in events:
        if isinstance(event, UsageReport):
            reported = reported + event.usage
        elif isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, ToolCallReady):
            calls.append(event.call)
        elif isinstance(event, StreamEnd):
            missing = fill(
                reported,
                input_tokens=request_tokens(request) if reported.input_tokens == 0 else None,
                output_tokens=output_tokens("".join(text), calls) if reported.output_tokens == 0 else None,
            )
            if missing.estimated:
                yield UsageReport(missing)
        yield event
