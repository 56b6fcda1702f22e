"""The turn loop: parallel tools, tool failures as results, the turn limit, cancellation."""

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from almanac.billing.pricing import BillingCategory
from almanac.chat.events import ChatEvent, TextDeltaEvent, ToolCallEvent, ToolResultEvent, UsageEvent
from almanac.chat.turn import TURN_LIMIT_NOTE, Admission, LoopLimits, TurnLoop
from almanac.llm.base import ModelUnavailable
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.llm.messages import TextBlock, ToolResultBlock, ToolUseBlock
from almanac.memory.context import QueryPrompt
from almanac.tools.base import Tool, ToolContext, ToolError, ToolOutput
from almanac.tools.registry import ToolRegistry
from almanac.tools.runner import ToolOutcome, ToolStatus


class Probe:
    """A tool whose behaviour each call chooses: meet at a barrier, fail, hang, or answer."""

    name = "probe"
    description = "test tool"
    input_schema: Mapping[str, Any] = {"type": "object", "properties": {"do": {"type": "string"}}, "required": ["do"]}
    output_schema = None
    billing = BillingCategory.TOOL
    source = "test"

    def __init__(self, parties: int = 1) -> None:
        self.barrier = asyncio.Barrier(parties)
        self.started = asyncio.Event()
        self.cancelled = 0

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        action = arguments["do"]
        if action == "meet":
            await self.barrier.wait()  # only returns once every party is running at the same time
        elif action == "fail":
            raise ToolError("the probe failed")
        elif action == "hang":
            self.started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return ToolOutput(f"{action} done as {context.item_id}")


class Hooks:
    def __init__(self, refuse: set[str] | None = None) -> None:
        self.count = 0
        self.admitted: list[str] = []
        self.recorded: list[tuple[str, ToolStatus]] = []
        self.refuse = refuse or set()

    def allocate(self, call: ToolUseBlock) -> tuple[str, ToolContext]:
        self.count += 1
        item_id = f"q1-t{self.count}"
        return item_id, ToolContext("u", "c", 1, "q1", item_id, call.id)

    async def admit(self, calls: Sequence[tuple[ToolUseBlock, Tool, str]]) -> list[Admission]:
        admissions = []
        for _, _, item_id in calls:
            if item_id in self.refuse:
                admissions.append(Admission(False, 0, "Not run: out of credits"))
            else:
                self.admitted.append(item_id)
                admissions.append(Admission(True, 2))
        return admissions

    def turn_note(self) -> str | None:
        return None

    async def record(
        self, call: ToolUseBlock, item_id: str, outcome: ToolOutcome, admission: Admission
    ) -> ToolResultEvent:
        self.recorded.append((item_id, outcome.status))
        return ToolResultEvent(
            call.id,
            call.name,
            item_id,
            item_id + "-sum",
            outcome.is_error,
            outcome.status.value,
            outcome.content,
            outcome.duration_ms,
            admission.credits if outcome.status.billable else 0,
        )


def make_loop(model: ScriptedModel, tool: Probe, hooks: Hooks, max_turns: int = 15, timeout: float = 5) -> TurnLoop:
    return TurnLoop(
        model=model,
        system="sys",
        prompt=QueryPrompt.single("question"),
        registry=ToolRegistry([tool]),
        hooks=hooks,
        limits=LoopLimits(max_turns, timeout, 1000),
    )


async def run(loop: TurnLoop) -> list[ChatEvent]:
    async with asyncio.timeout(10):
        return [event async for event in loop.run()]


async def test_the_loop_ends_when_the_model_answers_without_tools() -> None:
    loop = make_loop(ScriptedModel([reply("All done.")]), Probe(), Hooks())
    events = await run(loop)
    assert [type(e) for e in events] == [TextDeltaEvent, UsageEvent]
    assert (loop.turns, loop.stop_reason) == (1, "end_turn")


async def test_all_tool_calls_of_a_turn_run_concurrently() -> None:
    probe, hooks = Probe(parties=3), Hooks()
    model = ScriptedModel(
        [
            calls(
                call("probe", {"do": "meet"}),
                call("probe", {"do": "meet"}),
                call("probe", {"do": "meet"}),
                text="Checking.",
            ),
            reply("Met."),
        ]
    )
    events = await run(make_loop(model, probe, hooks))  # would never finish if the calls ran one by one
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert sorted(r.item_id for r in results) == ["q1-t1", "q1-t2", "q1-t3"]
    assert all(r.status == "ok" for r in results)
    assert [type(e).__name__ for e in events[:5]] == [
        "TextDeltaEvent",
        "ToolCallEvent",
        "ToolCallEvent",
        "ToolCallEvent",
        "UsageEvent",
    ]


async def test_tool_results_go_back_to_the_model_with_their_ids() -> None:
    model = ScriptedModel([calls(call("probe", {"do": "x"}, call_id="toolu_a"), text="Let me look."), reply("ok")])
    await run(make_loop(model, Probe(), Hooks()))
    second = model.requests[1]
    assistant, results = second.messages[-2], second.messages[-1]
    assert assistant.role == "assistant"
    assert assistant.content[0] == TextBlock("Let me look.")
    assert isinstance(assistant.content[1], ToolUseBlock) and assistant.content[1].id == "toolu_a"
    wrapped = '[ID:q1-t1] <data source="q1-t1 probe">\nx done as q1-t1\n</data>'
    assert results.content == (ToolResultBlock("toolu_a", wrapped, False),)


async def test_failures_and_timeouts_become_error_results_and_the_loop_goes_on() -> None:
    hooks = Hooks()
    model = ScriptedModel(
        [
            calls(
                call("probe", {"do": "fail"}),
                call("probe", {"do": "hang"}),
                call("probe", {"wrong": 1}),
                call("nope", {}),
            ),
            reply("Answer despite errors."),
        ]
    )
    loop = make_loop(model, Probe(), hooks, timeout=0.05)
    events = await run(loop)
    statuses = dict(hooks.recorded)
    assert statuses == {
        "q1-t1": ToolStatus.ERROR,
        "q1-t2": ToolStatus.TIMEOUT,
        "q1-t3": ToolStatus.INVALID_INPUT,
        "q1-t4": ToolStatus.UNKNOWN_TOOL,
    }
    assert hooks.admitted == ["q1-t1", "q1-t2"]  # invalid calls are never paid for
    errors = [block for block in model.requests[1].messages[-1].content if isinstance(block, ToolResultBlock)]
    assert all(block.is_error for block in errors) and len(errors) == 4
    assert "".join(e.text for e in events if isinstance(e, TextDeltaEvent)) == "Answer despite errors."


async def test_a_call_the_balance_cannot_cover_is_not_run_and_the_model_is_told() -> None:
    hooks = Hooks(refuse={"q1-t2"})
    model = ScriptedModel([calls(call("probe", {"do": "a"}), call("probe", {"do": "b"})), reply("partial")])
    await run(make_loop(model, Probe(), hooks))
    assert dict(hooks.recorded) == {"q1-t1": ToolStatus.OK, "q1-t2": ToolStatus.NOT_RUN}
    refused = model.requests[1].messages[-1].content[1]
    assert isinstance(refused, ToolResultBlock) and refused.is_error and "out of credits" in refused.content


async def test_at_the_turn_limit_the_model_is_asked_once_more_without_tools() -> None:
    model = ScriptedModel([calls(call("probe", {"do": "again"})) for _ in range(3)] + [reply("Best answer.")])
    loop = make_loop(model, Probe(), Hooks(), max_turns=3)
    events = await run(loop)
    assert len(model.requests) == 4
    final = model.requests[-1]
    assert final.tool_choice == "none"
    assert final.messages[-1].content[-1] == TextBlock(TURN_LIMIT_NOTE.format(turns=3))
    assert (loop.turns, loop.stop_reason) == (4, "turn_limit")
    assert sum(isinstance(e, ToolCallEvent) for e in events) == 3


async def test_a_model_failure_propagates() -> None:
    loop = make_loop(ScriptedModel([ModelUnavailable("down")]), Probe(), Hooks())
    with pytest.raises(ModelUnavailable):
        await run(loop)


async def test_cancelling_the_loop_cancels_running_tools_and_reports_them() -> None:
    probe, hooks = Probe(), Hooks()
    loop = make_loop(
        ScriptedModel([calls(call("probe", {"do": "hang"}), call("probe", {"do": "quick"}))]), probe, hooks
    )
    events: list[ChatEvent] = []

    async def consume() -> None:
        async for event in loop.run():
            events.append(event)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(probe.started.wait(), 5)
    while len(hooks.recorded) < 1:  # noqa: ASYNC110 - the quick call finishes; the hanging one keeps running
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.cancelled == 1
    assert dict(hooks.recorded) == {"q1-t2": ToolStatus.OK, "q1-t1": ToolStatus.CANCELLED}


class _TwoReports:
    """A model that reports its usage in two parts (input at the start, output at the end), as the
    Anthropic stream does, or not at all."""

    provider, name, supports_tools, supports_streaming = "test", "two-reports", True, True

    def __init__(self, *, report: bool) -> None:
        self.report = report

    async def stream(self, request: Any) -> Any:
        from almanac.llm.events import StreamEnd, TextDelta, UsageReport
        from almanac.llm.messages import Usage

        if self.report:
            yield UsageReport(Usage(30, 0))
        yield TextDelta("Answer.")
        if self.report:
            yield UsageReport(Usage(0, 4))
        yield StreamEnd("end_turn")


async def test_each_model_call_yields_one_usage_event_with_its_whole_usage() -> None:
    events = await run(make_loop(_TwoReports(report=True), Probe(), Hooks()))  # type: ignore[arg-type]
    assert [e for e in events if isinstance(e, UsageEvent)] == [UsageEvent(1, 30, 4)]


async def test_a_call_without_any_usage_still_yields_its_usage_event() -> None:
    # The call happened: it is counted even when nobody knows its tokens.
    events = await run(make_loop(_TwoReports(report=False), Probe(), Hooks()))  # type: ignore[arg-type]
    assert [e for e in events if isinstance(e, UsageEvent)] == [UsageEvent(1, 0, 0)]
