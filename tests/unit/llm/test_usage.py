"""Every model call ends with its usage: estimated (and marked so) where the server reported none."""

from collections.abc import AsyncIterator, Sequence

from almanac.llm.events import ModelEvent, StreamEnd, TextDelta, ToolCallReady, UsageReport
from almanac.llm.messages import Message, ModelRequest, ToolSpec, ToolUseBlock, Usage
from almanac.llm.tokens import estimate_tokens
from almanac.llm.usage import ensure_usage, fill, output_tokens, request_tokens

SPEC = ToolSpec("lookup", "Look something up", {"type": "object", "properties": {"q": {"type": "string"}}})
REQUEST = ModelRequest("You are helpful.", (Message.user("How do I cancel an asyncio task?"),), (SPEC,))
ANSWER = "Call task.cancel() and await the task; catch CancelledError where you must clean up."


async def _stream(events: Sequence[ModelEvent]) -> AsyncIterator[ModelEvent]:
    for event in events:
        yield event


async def _through(events: Sequence[ModelEvent]) -> list[ModelEvent]:
    return [event async for event in ensure_usage(_stream(events), REQUEST)]


def _usage(events: list[ModelEvent]) -> Usage:
    total = Usage()
    for event in events:
        if isinstance(event, UsageReport):
            total = total + event.usage
    return total


async def test_a_stream_without_usage_gets_both_sides_estimated_before_its_end() -> None:
    events = await _through([TextDelta(ANSWER), StreamEnd("end_turn")])
    assert isinstance(events[-2], UsageReport) and events[-1] == StreamEnd("end_turn")
    used = _usage(events)
    assert used.estimated
    assert used.input_tokens == request_tokens(REQUEST) > estimate_tokens("How do I cancel an asyncio task?")
    assert used.output_tokens == estimate_tokens(ANSWER) > 0


async def test_reported_usage_passes_through_untouched_and_unmarked() -> None:
    events = await _through([TextDelta(ANSWER), UsageReport(Usage(40, 12)), StreamEnd("end_turn")])
    assert _usage(events) == Usage(40, 12, estimated=False)
    assert sum(isinstance(event, UsageReport) for event in events) == 1


async def test_only_the_missing_side_is_estimated() -> None:
    # A server that reports the prompt but leaves the completion at zero (some do in streams).
    events = await _through([TextDelta(ANSWER), UsageReport(Usage(40, 0)), StreamEnd("end_turn")])
    assert _usage(events) == Usage(40, estimate_tokens(ANSWER), estimated=True)


async def test_tool_calls_count_as_output() -> None:
    call = ToolUseBlock("c1", "lookup", {"q": "asyncio cancel"})
    events = await _through([ToolCallReady(call), StreamEnd("tool_use")])
    assert _usage(events).output_tokens == output_tokens("", [call]) > 0


async def test_an_empty_answer_has_only_its_input_estimated() -> None:
    events = await _through([StreamEnd("end_turn")])
    assert _usage(events) == Usage(request_tokens(REQUEST), 0, estimated=True)


def test_fill_never_replaces_a_reported_figure() -> None:
    assert fill(Usage(5, 7), input_tokens=100, output_tokens=100) == Usage()
    assert fill(Usage(0, 7), input_tokens=100, output_tokens=100) == Usage(100, 0, estimated=True)


def test_a_sum_is_estimated_when_any_part_is() -> None:
    assert (Usage(1, 1) + Usage(2, 2, estimated=True)).estimated
    assert not (Usage(1, 1) + Usage(2, 2)).estimated
