"""The boost loop, independent of what an event is (the chat service's `ChatEvent`s or the
gateway's Anthropic stream events): at most `max_loops` rounds of planner → executor.

Each round asks the planner (`planner.Planner`):
- SUMMARY → that is the answer, passed on as it arrives; the executor is not called. (A planner
  that fails after the answer has begun cannot fall back: the answer ends with a `ModelError`.)
- ANALYSIS + GUIDANCE (or GUIDANCE alone) → the executor runs with the plan and the real tools. Its
  output is held back while another round is still possible, and released the moment it shows tool
  use (a tool call starting); if it ends without calling any tool, the round failed and its answer
  is kept as the best so far. In the last round, and when there are no tools to call, the
  executor's output streams at once and is the answer.
- neither section → the round failed; the reply goes into "previous attempts".
A planner failure (error, timeout) ends the loop at once: the best answer so far, else the direct
path (the executor alone, no plan). After the last round the best answer is returned, else the
direct path — never a bare error.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

from almanac.chat.strategies.planner import Attempt, Planner, PlannerFailed, PlannerReply, PlannerView
from almanac.llm.base import ModelUnavailable

log = logging.getLogger(__name__)
MAX_LOOPS = 3
E = TypeVar("E")
Outcome = Literal["summary", "guided", "best", "direct", "reused"]


@dataclass(frozen=True)
class Plan:
    loop: int
    analysis: str
    guidance: str


class BoostSteps(Protocol[E]):
    """What the loop needs from its user."""

    @property
    def has_tools(self) -> bool:
        """Whether the executor has tools to call (without them its answer is accepted as is)."""
        ...

    def execute(self, plan: Plan) -> AsyncIterator[E]:
        """The executor's run, guided by `plan`, with the real tools."""
        ...

    def direct(self) -> AsyncIterator[E]:
        """The direct path: the executor alone."""
        ...

    def answer(self, pieces: AsyncIterator[str]) -> AsyncIterator[E]:
        """The planner's SUMMARY, arriving in `pieces`, as the answer."""
        ...

    def planned(self, plan: Plan) -> E | None:
        """An event announcing the plan (or None)."""
        ...

    def shows_tool_use(self, event: E) -> bool:
        """Whether `event` is the executor starting a tool call."""
        ...

    def text_of(self, event: E) -> str:
        """The answer text `event` adds (for the record of a failed round)."""
        ...


@dataclass
class BoostReport:
    """How a boosted request went (for logs and usage records)."""

    loops: int = 0
    outcome: Outcome = "direct"
    attempts: list[Attempt] = field(default_factory=list)
    reason: str = ""


async def run_boost(
    planner: Planner,
    steps: BoostSteps[E],
    view: PlannerView,
    report: BoostReport,
    *,
    max_loops: int = MAX_LOOPS,
    stream_summary: bool = True,
) -> AsyncIterator[E]:
    """The boosted answer's events (see the module docstring)."""
    best: list[E] | None = None
    for loop in range(max_loops):
        report.loops = loop + 1
        replies = planner.stream(view, loop=loop, max_loops=max_loops, attempts=report.attempts, summary=stream_summary)
        try:
            first = await anext(replies)
        except PlannerFailed as exc:
            log.warning("boost loop %d: %s; %s", loop, exc, "best answer so far" if best else "direct path")
            report.reason = str(exc)
            async for event in _finish(steps, best, report):
                yield event
            return
        if isinstance(first, str) or first.sections.kind == "summary":  # a final answer, maybe still arriving
            report.outcome = "summary"
            pieces = _rest(first, replies) if isinstance(first, str) else _one(first.sections.summary)
            async for event in steps.answer(pieces):
                yield event
            return
        reply = first
        sections = reply.sections
        if sections.kind == "unusable":
            log.info("boost loop %d: the planner's reply had neither SUMMARY nor GUIDANCE", loop)
            report.attempts.append(Attempt(loop, reply.text or "(empty)", "the reply had neither SUMMARY nor GUIDANCE"))
            continue
        plan = Plan(loop, sections.analysis, sections.guidance)
        announcement = steps.planned(plan)
        if announcement is not None:
            yield announcement
        live = loop == max_loops - 1 or not steps.has_tools
        held: list[E] = []
        used_tools = False
        async for event in steps.execute(plan):
            if not used_tools and steps.shows_tool_use(event):
                used_tools, live = True, True
                for earlier in held:
                    yield earlier
                held = []
            if live:
                yield event
            else:
                held.append(event)
        if live:
            report.outcome = "guided"
            return
        answered = "".join(steps.text_of(event) for event in held).strip()
        log.info("boost loop %d: the executor called no tool", loop)
        report.attempts.append(
            Attempt(loop, reply.text, f"the executor called no tool and answered: {answered[:800] or '(nothing)'}")
        )
        best = held
    async for event in _finish(steps, best, report):
        yield event


async def _finish(steps: BoostSteps[E], best: list[E] | None, report: BoostReport) -> AsyncIterator[E]:
    if best is not None:
        report.outcome = "best"
        for event in best:
            yield event
        return
    report.outcome = "direct"
    async for event in steps.direct():
        yield event


async def _rest(first: str, replies: AsyncIterator[str | PlannerReply]) -> AsyncIterator[str]:
    """A SUMMARY's pieces: `first`, then the rest as the planner sends them."""
    yield first
    try:
        async for item in replies:
            if isinstance(item, str):
                yield item
    except PlannerFailed as exc:
        raise ModelUnavailable(f"the planner stopped in the middle of its answer ({exc})") from None


async def _one(text: str) -> AsyncIterator[str]:
    yield text
