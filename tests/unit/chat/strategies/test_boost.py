"""Boost as a chat strategy (`BoostLoop`): plan events, hold-back and early release on tool use,
retries, fallbacks, best answer, and the two models' usage kept apart. The planner is a scripted
model; the executor is a stand-in for the turn loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from almanac.chat.events import ChatEvent, PlanEvent, TextDeltaEvent, ToolCallEvent, UsageEvent
from almanac.chat.strategies.boost import boost_turn_loop, guidance_section
from almanac.chat.strategies.boost_driver import Plan
from almanac.chat.strategies.planner import Planner
from almanac.llm.base import ModelUnavailable
from almanac.llm.events import ModelEvent, StreamEnd, TextDelta, UsageReport
from almanac.llm.fake import ScriptedModel, reply
from almanac.llm.messages import Message, ModelRequest, ToolSpec, Usage

TOOLS = (ToolSpec("lookup", "Look something up", {"type": "object", "properties": {"q": {"type": "string"}}}),)


class Executor:
    """A turn loop stand-in: each run plays the next script; records the system prompts it got."""

    def __init__(self, *scripts: list[ChatEvent], gate: asyncio.Event | None = None) -> None:
        self.scripts = list(scripts)
        self.systems: list[str] = []
        self.gate = gate
        self.finished = 0
        self.turns = 0
        self.stop_reason = ""

    def __call__(self, system: str) -> Executor:
        self.systems.append(system)
        return self

    async def run(self) -> AsyncIterator[ChatEvent]:
        for event in self.scripts.pop(0):
            yield event
            if isinstance(event, ToolCallEvent) and self.gate is not None:
                await self.gate.wait()
        self.finished += 1
        self.turns, self.stop_reason = 1, "end_turn"


def tool_call() -> ToolCallEvent:
    return ToolCallEvent("toolu_1", "lookup", {"q": "x"}, "q1-t1", 1)


def loop(planner: ScriptedModel, executor: Executor, *, tools: tuple[ToolSpec, ...] = TOOLS, timeout_s: float = 5):
    conversation = ModelRequest("sys", (Message.user("find x"),), tools)
    return boost_turn_loop(
        planner=Planner(planner, timeout_s=timeout_s),
        executor=ScriptedModel(),
        system="sys",
        conversation=conversation,
        new_loop=executor,
    )


async def collect(boost) -> list[ChatEvent]:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(10):
        return [event async for event in boost.run()]


async def test_guidance_yields_a_plan_event_and_the_executor_runs_with_the_plan() -> None:
    planner = ScriptedModel([reply("ANALYSIS:\nNeed a lookup.\n\nGUIDANCE:\nCall lookup with q: x")], name="planner-1")
    executor = Executor([TextDeltaEvent("Looking."), tool_call(), UsageEvent(1, 50, 5)])
    boost = loop(planner, executor)
    events = await collect(boost)
    assert events[0] == PlanEvent(0, "Need a lookup.", "Call lookup with q: x", "planner-1")
    assert [type(e).__name__ for e in events[1:]] == ["TextDeltaEvent", "ToolCallEvent", "UsageEvent"]
    assert executor.systems[0].startswith("sys\n\n# Plan from the planner")
    assert boost.report.outcome == "guided" and boost.turns == 1
    assert (boost.planner_usage.input_tokens, boost.executor_usage.input_tokens) == (10, 50)
    assert planner.requests[0].tools == ()


async def test_summary_is_the_answer_and_the_executor_never_runs() -> None:
    executor = Executor()
    boost = loop(ScriptedModel([reply("SUMMARY:\n42")]), executor)
    assert await collect(boost) == [TextDeltaEvent("42")]
    assert executor.systems == [] and boost.report.outcome == "summary"


async def test_tool_use_releases_held_output_before_the_executor_finishes() -> None:
    gate = asyncio.Event()
    executor = Executor([TextDeltaEvent("Let me look."), tool_call(), TextDeltaEvent("done")], gate=gate)
    boost = loop(ScriptedModel([reply("GUIDANCE:\nCall lookup")]), executor)
    seen: list[ChatEvent] = []
    async with asyncio.timeout(10):
        async for event in boost.run():
            seen.append(event)
            if isinstance(event, ToolCallEvent):
                assert executor.finished == 0  # the tool call showed before the executor's run ended
                gate.set()
    assert [type(e).__name__ for e in seen] == ["PlanEvent", "TextDeltaEvent", "ToolCallEvent", "TextDeltaEvent"]


async def test_an_executor_without_tool_calls_is_held_back_and_retried() -> None:
    planner = ScriptedModel([reply("GUIDANCE:\nCall lookup"), reply("GUIDANCE:\nYou must call lookup")])
    executor = Executor([TextDeltaEvent("no tools used")], [tool_call()])
    events = await collect(loop(planner, executor))
    assert TextDeltaEvent("no tools used") not in events
    assert [e.loop for e in events if isinstance(e, PlanEvent)] == [0, 1]
    prompt = planner.requests[1].messages[0].text
    assert "the executor called no tool and answered: no tools used" in prompt


async def test_after_the_last_loop_the_executor_answer_stands() -> None:
    planner = ScriptedModel([reply("GUIDANCE:\nCall lookup")] * 3)
    executor = Executor([TextDeltaEvent("one")], [TextDeltaEvent("two")], [TextDeltaEvent("three")])
    boost = loop(planner, executor)
    events = await collect(boost)
    assert [e.text for e in events if isinstance(e, TextDeltaEvent)] == ["three"]
    assert boost.report.loops == 3


async def test_the_best_answer_so_far_wins_over_a_failing_planner() -> None:
    planner = ScriptedModel([reply("GUIDANCE:\nCall lookup"), ModelUnavailable("down")])
    executor = Executor([TextDeltaEvent("best so far")])
    boost = loop(planner, executor)
    events = await collect(boost)
    assert [e.text for e in events if isinstance(e, TextDeltaEvent)] == ["best so far"]
    assert boost.report.outcome == "best"


async def test_a_planner_failure_falls_back_to_the_direct_path() -> None:
    executor = Executor([TextDeltaEvent("direct")])
    boost = loop(ScriptedModel([ModelUnavailable("boost 500")]), executor)
    assert await collect(boost) == [TextDeltaEvent("direct")]
    assert executor.systems == ["sys"] and boost.report.outcome == "direct"


async def test_a_slow_planner_times_out_into_the_direct_path() -> None:
    async def slow(_: ModelRequest):  # type: ignore[no-untyped-def]
        await asyncio.sleep(5)
        yield TextDeltaEvent("never")

    executor = Executor([TextDeltaEvent("direct")])
    boost = loop(ScriptedModel([slow]), executor, timeout_s=0.05)
    assert await collect(boost) == [TextDeltaEvent("direct")]
    assert "did not answer within" in boost.report.reason


async def test_a_planner_that_declines_gave_no_plan_whatever_its_words_look_like() -> None:
    async def declining(_: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("I cannot plan this. You asked for:\nGUIDANCE:\n<numbered instructions for the executor>")
        yield StreamEnd("end_turn", declined=True)

    executor = Executor([TextDeltaEvent("direct")])
    boost = loop(ScriptedModel([declining]), executor)
    assert await collect(boost) == [TextDeltaEvent("direct")]  # not its quoted "GUIDANCE" taken for a plan
    assert boost.report.outcome == "direct" and "declined" in boost.report.reason


async def test_without_tools_the_guided_answer_is_accepted() -> None:
    executor = Executor([TextDeltaEvent("explained")])
    boost = loop(ScriptedModel([reply("GUIDANCE:\nExplain it")]), executor, tools=())
    events = await collect(boost)
    assert events[-1] == TextDeltaEvent("explained") and boost.report.loops == 1


def test_guidance_section_names_both_parts() -> None:
    text = guidance_section(Plan(0, "why", "what"))
    assert "ANALYSIS:\nwhy" in text and text.endswith("GUIDANCE:\nwhat")


class PieceByPiece:
    """A planner model that writes its reply piece by piece, waiting after the first pieces until
    the answer has reached the caller (`shown`), or failing part-way (`fail_after`)."""

    provider, name, supports_tools, supports_streaming = "fake", "planner", False, True

    def __init__(self, pieces: list[str], *, fail_after: int | None = None) -> None:
        self.pieces = pieces
        self.fail_after = fail_after
        self.shown = asyncio.Event()
        self.waited: list[bool] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        for number, piece in enumerate(self.pieces):
            if number == self.fail_after:
                raise ModelUnavailable("the planner server went away")
            if number == 3:
                try:
                    async with asyncio.timeout(5):
                        await self.shown.wait()
                    self.waited.append(True)
                except TimeoutError:
                    self.waited.append(False)
            yield TextDelta(piece)
        yield UsageReport(Usage(12, 7))
        yield StreamEnd("end_turn")


async def test_a_summary_is_passed_on_as_the_planner_writes_it() -> None:
    planner = PieceByPiece(["SUMMARY:\n", "To set up: ", "make a venv.\n", "## Steps\n", "1. python -m venv .venv"])
    boost = loop(planner, Executor())  # type: ignore[arg-type]
    text = []
    async for event in boost.run():
        if isinstance(event, TextDeltaEvent):
            text.append(event.text)
            planner.shown.set()
    assert planner.waited == [True]  # the first words were out before the planner wrote the rest
    assert "".join(text) == "To set up: make a venv.\n## Steps\n1. python -m venv .venv"
    assert boost.report.outcome == "summary" and boost.planner_usage.output_tokens == 7


async def test_a_planner_failing_mid_summary_ends_the_answer_with_an_error_not_a_second_answer() -> None:
    planner = PieceByPiece(["SUMMARY:\n", "The first half ", "of it"], fail_after=2)
    executor = Executor([TextDeltaEvent("a direct answer")])
    boost = loop(planner, executor)  # type: ignore[arg-type]
    seen: list[ChatEvent] = []
    with pytest.raises(ModelUnavailable, match="stopped in the middle"):
        async for event in boost.run():
            seen.append(event)
    assert seen == [TextDeltaEvent("The first half")] and executor.systems == []
