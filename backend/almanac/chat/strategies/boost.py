"""Boost as a strategy of the chat service: a planner model guides the executor's turn loop.

`BoostLoop.run()` yields the same `ChatEvent`s as `TurnLoop.run()`, plus a `PlanEvent` (ANALYSIS,
GUIDANCE, loop number) each time the planner hands the executor a plan. The executor is an
ordinary `TurnLoop` (tools run, are billed and stored through the same `LoopHooks`) whose system
prompt carries the plan; the loop itself is `boost_driver.run_boost`. After `run()`:
`turns`/`stop_reason` as for `TurnLoop`, `report` (loops, outcome), and the planner's and the
executor's usage kept apart (`planner_usage`, `executor_usage`).

The chat service builds one with `boost_turn_loop(...)` — the `TurnLoop` arguments plus the planner.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol

from almanac.chat.events import ChatEvent, PlanEvent, TextDeltaEvent, ToolCallEvent, UsageEvent
from almanac.chat.strategies.boost_driver import MAX_LOOPS, BoostReport, Plan, run_boost
from almanac.chat.strategies.planner import Planner, PlannerView, planner_view
from almanac.llm.base import Model
from almanac.llm.messages import ModelRequest, Usage
from almanac.usage.recording import ModelUse

GUIDANCE_HEADER = (
    "# Plan from the planner\n"
    "A planning model has studied this request and the conversation and wrote the plan below. Carry it out: "
    "call the tools it names with the arguments it gives (adjust only where a tool result shows a step is "
    "wrong), then answer the user."
)


def guidance_section(plan: Plan) -> str:
    """The system-prompt section that hands the executor a plan."""
    parts = [GUIDANCE_HEADER]
    if plan.analysis:
        parts.append(f"ANALYSIS:\n{plan.analysis}")
    parts.append(f"GUIDANCE:\n{plan.guidance}")
    return "\n\n".join(parts)


def with_plan(system: str, plan: Plan) -> str:
    return f"{system}\n\n{guidance_section(plan)}" if system else guidance_section(plan)


class ExecutorLoop(Protocol):
    turns: int
    stop_reason: str

    def run(self) -> AsyncIterator[ChatEvent]: ...


@dataclass
class _ChatSteps:
    owner: BoostLoop

    @property
    def has_tools(self) -> bool:
        return self.owner.has_tools

    def execute(self, plan: Plan) -> AsyncIterator[ChatEvent]:
        return self.owner._executor_run(with_plan(self.owner.system, plan))

    def direct(self) -> AsyncIterator[ChatEvent]:
        return self.owner._executor_run(self.owner.system)

    async def answer(self, pieces: AsyncIterator[str]) -> AsyncIterator[ChatEvent]:
        async for piece in pieces:
            yield TextDeltaEvent(piece)
        self.owner.turns, self.owner.stop_reason = 1, self.owner.planner.stop_reason

    def planned(self, plan: Plan) -> ChatEvent | None:
        return PlanEvent(plan.loop, plan.analysis, plan.guidance, self.owner.planner.model.name)

    def shows_tool_use(self, event: ChatEvent) -> bool:
        return isinstance(event, ToolCallEvent)

    def text_of(self, event: ChatEvent) -> str:
        return event.text if isinstance(event, TextDeltaEvent) else ""


class BoostLoop:
    """One query answered by planner + executor (see the module docstring)."""

    def __init__(
        self,
        *,
        planner: Planner,
        executor: Model,
        new_loop: Callable[[str], ExecutorLoop],
        system: str,
        view: PlannerView,
        has_tools: bool,
        max_loops: int = MAX_LOOPS,
        stream_summary: bool = True,
    ) -> None:
        self.planner = planner
        self.executor = executor
        self.new_loop = new_loop
        self.system = system
        self.view = view
        self.has_tools = has_tools
        self.max_loops = max_loops
        self.stream_summary = stream_summary
        self.report = BoostReport()
        self.turns = 0
        self.stop_reason = ""
        self.executor_usage = Usage()
        self.executor_calls = 0
        self.executor_estimated_calls = 0

    @property
    def planner_usage(self) -> Usage:
        return self.planner.usage

    def model_uses(self) -> list[ModelUse]:
        """Each model's usage for this query: the executor's as `chat`, the planner's as `planner`."""
        executor, planner = self.executor, self.planner.model
        used = self.executor_usage
        uses = [
            ModelUse(
                executor.provider,
                executor.name,
                used.input_tokens,
                used.output_tokens,
                self.executor_calls,
                estimated_calls=self.executor_estimated_calls,
            )
        ]
        if self.planner.calls:
            spent = self.planner.usage
            uses.append(
                ModelUse(
                    planner.provider,
                    planner.name,
                    spent.input_tokens,
                    spent.output_tokens,
                    self.planner.calls,
                    "planner",
                    self.planner.estimated_calls,
                )
            )
        return uses

    async def run(self) -> AsyncIterator[ChatEvent]:
        """The answer's events, `PlanEvent`s included."""
        steps = _ChatSteps(self)
        async for event in run_boost(
            self.planner, steps, self.view, self.report, max_loops=self.max_loops, stream_summary=self.stream_summary
        ):
            yield event

    async def _executor_run(self, system: str) -> AsyncIterator[ChatEvent]:
        loop = self.new_loop(system)
        async for event in loop.run():
            if isinstance(event, UsageEvent):
                self.executor_usage = self.executor_usage + Usage(event.input_tokens, event.output_tokens)
                self.executor_calls += 1
                self.executor_estimated_calls += event.estimated
            yield event
        self.turns, self.stop_reason = loop.turns, loop.stop_reason


def boost_turn_loop(
    *,
    planner: Planner,
    executor: Model,
    system: str,
    conversation: ModelRequest,
    new_loop: Callable[[str], ExecutorLoop],
    max_loops: int = MAX_LOOPS,
    stream_summary: bool = True,
) -> BoostLoop:
    """A `BoostLoop` for one query. `conversation` is what the planner is shown (the working
    messages and the tools); `new_loop(system)` makes the executor's `TurnLoop` with that system
    prompt (the plan appended)."""
    return BoostLoop(
        planner=planner,
        executor=executor,
        new_loop=new_loop,
        system=system,
        view=planner_view(conversation),
        has_tools=bool(conversation.tools) and executor.supports_tools,
        max_loops=max_loops,
        stream_summary=stream_summary,
    )
