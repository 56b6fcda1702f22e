"""The turn loop: up to `max_turns` model turns; all tool calls of a turn run concurrently.

The loop does no database or HTTP work of its own. It receives a model, the tools, the working
messages and `LoopHooks` (billing, storage and ID allocation, provided by the chat service), and
yields `ChatEvent`s. It ends when the model answers without tool calls; at the turn limit the model
is asked once more, with tools disabled, for its best answer. Each tool call runs under its own
timeout; failures become error results and the loop goes on. If the loop is cancelled, running
tools are cancelled and reported to the hooks as such before the cancellation propagates.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from almanac.chat.events import ChatEvent, TextDeltaEvent, ToolCallEvent, ToolResultEvent, UsageEvent
from almanac.llm.base import Model
from almanac.llm.events import StreamEnd, TextDelta, ToolCallReady, UsageReport
from almanac.llm.messages import Block, Message, ModelRequest, TextBlock, ToolResultBlock, ToolUseBlock
from almanac.tools.base import Tool, ToolContext
from almanac.tools.registry import ToolRegistry
from almanac.tools.runner import ToolOutcome, ToolStatus, check_call, run_call

TURN_LIMIT_NOTE = (
    "You have used all {turns} tool turns for this question. Do not call any more tools: "
    "answer now, as well as you can, with what you have found."
)


@dataclass(frozen=True)
class LoopLimits:
    max_turns: int = 15
    tool_timeout_s: float = 30.0
    max_tokens: int = 4096


@dataclass(frozen=True)
class Admission:
    """Whether a tool call may run; if not, `reason` is what the model is told."""

    allowed: bool
    credits: int = 0
    reason: str = ""


class LoopHooks(Protocol):
    def allocate(self, call: ToolUseBlock) -> tuple[str, ToolContext]:
        """The item ID and context of a new tool call (IDs in call order)."""
        ...

    async def admit(self, calls: Sequence[tuple[ToolUseBlock, Tool, str]]) -> list[Admission]:
        """Pay for a turn's calls (call, tool, item ID) before they run, in call order; refuse
        those the balance cannot cover."""
        ...

    async def record(
        self, call: ToolUseBlock, item_id: str, outcome: ToolOutcome, admission: Admission
    ) -> ToolResultEvent:
        """Store a finished (or refused, or cancelled) call and settle its price."""
        ...


class TurnLoop:
    """One query's run. After `run()` is exhausted, `turns` and `stop_reason` say how it ended."""

    def __init__(
        self,
        *,
        model: Model,
        system: str,
        messages: Sequence[Message],
        registry: ToolRegistry,
        hooks: LoopHooks,
        limits: LoopLimits,
    ) -> None:
        self.model = model
        self.system = system
        self.messages: list[Message] = list(messages)
        self.registry = registry
        self.hooks = hooks
        self.limits = limits
        self.turns = 0
        self.stop_reason = ""

    async def run(self) -> AsyncIterator[ChatEvent]:
        """Run the loop, yielding events as they happen."""
        tools = self.registry.specs() if self.model.supports_tools else ()
        for turn in range(1, self.limits.max_turns + 1):
            self.turns = turn
            request = ModelRequest(self.system, tuple(self.messages), tools, self.limits.max_tokens)
            text: list[str] = []
            calls: list[_Call] = []
            async for event in self._model_turn(request, turn, text, calls):
                yield event
            if not calls:
                return
            results: dict[str, ToolResultBlock] = {}
            async for event, outcome in self._run_tools(calls):
                content = f"[ID:{event.item_id}] {outcome.content}"
                results[event.id] = ToolResultBlock(event.id, content, outcome.is_error)
                yield event
            self._extend(text, [c.call for c in calls], [results[c.call.id] for c in calls])
        self.turns += 1
        note = TURN_LIMIT_NOTE.format(turns=self.limits.max_turns)
        self.messages[-1] = Message("user", (*self.messages[-1].content, TextBlock(note)))
        final = ModelRequest(self.system, tuple(self.messages), tools, self.limits.max_tokens, tool_choice="none")
        async for event in self._model_turn(final, self.turns, [], None):
            yield event
        self.stop_reason = "turn_limit"

    async def _model_turn(
        self, request: ModelRequest, turn: int, text: list[str], calls: list[_Call] | None
    ) -> AsyncIterator[ChatEvent]:
        async for event in self.model.stream(request):
            if isinstance(event, TextDelta) and event.text:
                text.append(event.text)
                yield TextDeltaEvent(event.text)
            elif isinstance(event, ToolCallReady) and calls is not None:
                item_id, context = self.hooks.allocate(event.call)
                calls.append(_Call(event.call, item_id, context))
                yield ToolCallEvent(event.call.id, event.call.name, dict(event.call.input), item_id, turn)
            elif isinstance(event, UsageReport):
                yield UsageEvent(turn, event.usage.input_tokens, event.usage.output_tokens)
            elif isinstance(event, StreamEnd):
                self.stop_reason = event.stop_reason

    async def _run_tools(self, calls: list[_Call]) -> AsyncIterator[tuple[ToolResultEvent, ToolOutcome]]:
        """Admit calls in order, run the admitted ones concurrently, yield results as they finish."""
        refused: list[tuple[_Call, ToolOutcome, Admission]] = []
        valid: list[tuple[_Call, Tool]] = []
        running: dict[asyncio.Task[ToolOutcome], tuple[_Call, Admission]] = {}
        try:
            for entry in calls:
                tool = self.registry.get(entry.call.name)
                problem = check_call(self.registry, entry.call)
                if problem is not None or tool is None:
                    refused.append((entry, problem or _unknown(entry.call), Admission(False)))
                else:
                    valid.append((entry, tool))
            admissions = await self.hooks.admit([(e.call, tool, e.item_id) for e, tool in valid]) if valid else []
            for (entry, tool), admission in zip(valid, admissions, strict=True):
                if not admission.allowed:
                    refused.append((entry, ToolOutcome(admission.reason, ToolStatus.NOT_RUN), admission))
                    continue
                timeout = getattr(tool, "timeout_s", None) or self.limits.tool_timeout_s
                task = asyncio.create_task(run_call(tool, entry.call, entry.context, timeout_s=timeout))
                running[task] = (entry, admission)
            refused.sort(key=lambda r: calls.index(r[0]))
            for entry, outcome, admission in refused:
                yield await self.hooks.record(entry.call, entry.item_id, outcome, admission), outcome
            while running:
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done, key=lambda t: calls.index(running[t][0])):
                    entry, admission = running.pop(task)
                    outcome = task.result()
                    yield await self.hooks.record(entry.call, entry.item_id, outcome, admission), outcome
        finally:
            await self._cancel(running)

    async def _cancel(self, running: dict[asyncio.Task[ToolOutcome], tuple[_Call, Admission]]) -> None:
        """Cancel unfinished tool tasks and report each as cancelled (or finished, if it was)."""
        for task in running:
            task.cancel()
        for task, (entry, admission) in running.items():
            try:
                outcome = await task
            except asyncio.CancelledError:
                outcome = ToolOutcome(f"{entry.call.name} was cancelled.", ToolStatus.CANCELLED)
            await self.hooks.record(entry.call, entry.item_id, outcome, admission)

    def _extend(self, text: list[str], calls: list[ToolUseBlock], results: list[ToolResultBlock]) -> None:
        content: list[Block] = [TextBlock("".join(text))] if text else []
        content.extend(calls)
        self.messages.append(Message("assistant", tuple(content)))
        self.messages.append(Message("user", tuple(results)))


@dataclass(frozen=True)
class _Call:
    call: ToolUseBlock
    item_id: str
    context: ToolContext


def _unknown(call: ToolUseBlock) -> ToolOutcome:
    return ToolOutcome(f"Unknown tool {call.name!r}.", ToolStatus.UNKNOWN_TOOL)
