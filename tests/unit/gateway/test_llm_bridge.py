"""A `Model`'s stream as an Anthropic event stream (pure): no tool call comes out when the caller
allowed none, even if the model makes one."""

from collections.abc import AsyncIterator

from almanac.gateway.accumulate import accumulate
from almanac.gateway.llm_bridge import anthropic_events
from almanac.llm.events import ModelEvent, StreamEnd, TextDelta, ToolCallReady
from almanac.llm.messages import ToolUseBlock


async def calls_anyway() -> AsyncIterator[ModelEvent]:
    yield TextDelta("Sure.")
    yield ToolCallReady(ToolUseBlock("toolu_1", "lookup", {"q": "x"}))
    yield StreamEnd("tool_use")


async def test_a_tool_call_comes_out_as_a_tool_use_block() -> None:
    message = accumulate([event async for event in anthropic_events(calls_anyway(), "claude-x")])
    assert [b["type"] for b in message["content"]] == ["text", "tool_use"] and message["stop_reason"] == "tool_use"


async def test_with_tools_off_no_tool_call_comes_out() -> None:
    message = accumulate([event async for event in anthropic_events(calls_anyway(), "claude-x", tools=False)])
    assert message["content"] == [{"type": "text", "text": "Sure."}] and message["stop_reason"] == "end_turn"
