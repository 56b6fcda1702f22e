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


def test_model_output_is_cleaned_as_it_enters_the_events() -> None:
    """A provider may decode a lone surrogate or a NUL from a model's JSON: the text, and the tool
    call's ID, name and arguments, reach the rest of the application as U+FFFD."""
    assert TextDelta("ok \ud800\x00").text == "ok \ufffd\ufffd"
    dirty = ToolUseBlock("toolu_\udfff", "look\x00up", {"id": "\ud800", "nested": [{"k\x00": "v"}], "n": 2})
    cleaned = ToolCallReady(dirty).call
    assert cleaned == ToolUseBlock(
        "toolu_\ufffd", "look\ufffdup", {"id": "\ufffd", "nested": [{"k\ufffd": "v"}], "n": 2}
    )
    clean = ToolUseBlock("t1", "lookup", {"q": "x"})
    assert ToolCallReady(clean).call is clean
