"""Accumulating a stream of model events into one response (pure)."""

from almanac.llm.events import StreamEnd, TextDelta, ToolCallReady, UsageReport, accumulate
from almanac.llm.messages import TextBlock, ToolUseBlock, Usage


def test_text_runs_merge_and_tool_calls_keep_their_place() -> None:
    call = ToolUseBlock("t1", "lookup", {"q": "x"})
    response = accumulate(
        [
            TextDelta("Let me "),
            TextDelta("check."),
            ToolCallReady(call),
            TextDelta("After."),
            UsageReport(Usage(10, 0)),
            UsageReport(Usage(0, 7)),
            StreamEnd("end_turn"),
        ]
    )
    assert response.content == (TextBlock("Let me check."), call, TextBlock("After."))
    assert response.usage == Usage(10, 7)
    assert response.stop_reason == "tool_use"
    assert response.text == "Let me check.After." and response.tool_calls == (call,)


def test_an_empty_stream_is_an_empty_answer() -> None:
    response = accumulate([])
    assert response.content == () and response.stop_reason == "end_turn"
