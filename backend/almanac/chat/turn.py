"""The turn loop: up to `max_turns` model turns; all tool calls of a turn run concurrently.

The loop does no database or HTTP work of its own. It receives a model, the tools, the query's
prompt (its history and context window) and `LoopHooks` (billing, storage and ID allocation,
provided by the chat service), and yields `ChatEvent`s. Every model call is assembled within the
model's context window (`memory/context.py`); if the provider still says the prompt is too long,
the call is retried once with half the window. Each model call that completes yields one `usage`
event (its tokens, `estimated` when the server reported none). The loop ends when the model answers without tool
calls; at the turn limit the model is asked once more, with tools disabled, for its best answer.
An answer the model declines to give (`StreamEnd.declined`) ends with the stop reason `declined`.
Each tool call runs under its own timeout and may report progress; failures become error results
and the loop goes on. If the loop is cancelled, running tools are cancelled and reported to the
hooks as such before the cancellation propagates.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from almanac.chat.events import (
    ChatEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolProgressEvent,
    ToolResultEvent,
    UsageEvent,
)
from almanac.llm.base import Model, ModelContextTooLong
from almanac.llm.events import StreamEnd, TextDelta, ToolCallReady, UsageReport
from almanac.llm.messages import ModelRequest, ToolSpec, ToolUseBlock, Usage
from almanac.memory.context import Assembly, ContextOverflow, Exchange, QueryPrompt, Turn, assemble
from almanac.tools.base import Tool, ToolContext
from almanac.tools.registry import ToolRegistry
from almanac.tools.runner import ToolOutcome, ToolStatus, check_call, run_call

DECLINED = "declined"  # the stop reason of an answer the model said it cannot give (`StreamEnd.declined`)
# Answers that carry nothing: the model declined, or the provider reports a refusal. Like a query
# that produced nothing, they are not charged (their tool calls are priced as usual).
NO_ANSWER = frozenset({DECLINED, "refusal"})

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
    status: ToolStatus = ToolStatus.NOT_RUN  # how a refused call is reported


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

    def turn_note(self) -> str | None:
        """A note for the model after each turn of tool calls (e.g. the credits left), or None."""
        ...


class TurnLoop:
    """One query's run. After `run()` is exhausted, `turns` and `stop_reason` say how it ended."""

    def __init__(
        self,
        *,
        model: Model,
        system: str,
        prompt: QueryPrompt,
        registry: ToolRegistry,
        hooks: LoopHooks,
        limits: LoopLimits,
    ) -> None:
        self.model = model
        self.system = system
        self.prompt = prompt
        self.registry = registry
        self.hooks = hooks
        self.limits = limits
        self.turns = 0
        self.stop_reason = ""
        self.history: list[Turn] = []  # the current query's finished turns
        self.requests: list[Assembly] = []  # what each model call was assembled from

    async def run(self) -> AsyncIterator[ChatEvent]:
        """Run the loop, yielding events as they happen."""
        tools = self.registry.specs() if self.model.supports_tools else ()
        for turn in range(1, self.limits.max_turns + 1):
            self.turns = turn
            text: list[str] = []
            calls: list[_Call] = []
            async for event in self._model_turn(tools, "auto", turn, text, calls):
                yield event
            if not calls:
                return
            results: dict[str, Exchange] = {}
            async for event, outcome in self._run_tools(calls):
                if outcome is not None and isinstance(event, ToolResultEvent):
                    entry = next(c for c in calls if c.call.id == event.id)
                    results[event.id] = Exchange(entry.call, event.item_id, outcome.content, outcome.is_error)
                yield event
            exchanges = tuple(results[c.call.id] for c in calls)
            self.history.append(Turn("".join(text), exchanges, self.hooks.turn_note()))
        self.turns += 1
        note = TURN_LIMIT_NOTE.format(turns=self.limits.max_turns)
        async for event in self._model_turn(tools, "none", self.turns, [], None, final_note=note):
            yield event
        self.stop_reason = "turn_limit"

    def _request(
        self,
        tools: Sequence[ToolSpec],
        tool_choice: Literal["auto", "none"],
        prompt: QueryPrompt,
        final_note: str | None,
    ) -> ModelRequest:
        try:
            assembly = assemble(prompt, system=self.system, tools=tools, turns=self.history, final_note=final_note)
        except ContextOverflow as exc:
            raise ModelContextTooLong(str(exc)) from None
        self.requests.append(assembly)
        return ModelRequest(
            self.system, assembly.messages, tuple(tools), self.limits.max_tokens, tool_choice=tool_choice
        )

    async def _model_turn(
        self,
        tools: Sequence[ToolSpec],
        tool_choice: Literal["auto", "none"],
        turn: int,
        text: list[str],
        calls: list[_Call] | None,
        *,
        final_note: str | None = None,
    ) -> AsyncIterator[ChatEvent]:
        prompt = self.prompt
        for attempt in (1, 2):
            request = self._request(tools, tool_choice, prompt, final_note)
            started = False
            used = Usage()
            try:
                async for event in self.model.stream(request):
                    started = True
                    if isinstance(event, TextDelta) and event.text:
                        text.append(event.text)
                        yield TextDeltaEvent(event.text)
                    elif isinstance(event, ToolCallReady) and calls is not None:
                        item_id, context = self.hooks.allocate(event.call)
                        calls.append(_Call(event.call, item_id, context))
                        yield ToolCallEvent(event.call.id, event.call.name, dict(event.call.input), item_id, turn)
                    elif isinstance(event, UsageReport):
                        used = used + event.usage
                    elif isinstance(event, StreamEnd):
                        self.stop_reason = DECLINED if event.declined else event.stop_reason
                if used.input_tokens and not used.estimated:
                    prompt.counter.observe(estimated=self.requests[-1].tokens, actual=used.input_tokens)
                # One usage event per model call, even when nothing was counted: the call happened.
                yield UsageEvent(turn, used.input_tokens, used.output_tokens, estimated=used.estimated)
                return
            except ModelContextTooLong:
                if started or attempt == 2:
                    raise
                # The provider counted more than we did: try once more with half the window.
                prompt = replace(prompt, window=prompt.window.halved())
                self.prompt = prompt

    async def _run_tools(
        self, calls: list[_Call]
    ) -> AsyncIterator[tuple[ToolResultEvent | ToolProgressEvent, ToolOutcome | None]]:
        """Admit calls in order, run the admitted ones concurrently, yield results as they finish
        (and the progress they report while they run)."""
        refused: list[tuple[_Call, ToolOutcome, Admission]] = []
        valid: list[tuple[_Call, Tool]] = []
        running: dict[asyncio.Task[ToolOutcome], tuple[_Call, Admission]] = {}
        progress: asyncio.Queue[ToolProgressEvent] = asyncio.Queue()
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
                    refused.append((entry, ToolOutcome(admission.reason, admission.status), admission))
                    continue
                timeout = getattr(tool, "timeout_s", None) or self.limits.tool_timeout_s
                context = replace(entry.context, progress=_reporter(progress, entry))
                task = asyncio.create_task(run_call(tool, entry.call, context, timeout_s=timeout))
                running[task] = (entry, admission)
            refused.sort(key=lambda r: calls.index(r[0]))
            for entry, outcome, admission in refused:
                yield await self.hooks.record(entry.call, entry.item_id, outcome, admission), outcome
            while running:
                waiter: asyncio.Task[ToolProgressEvent] = asyncio.ensure_future(progress.get())
                try:
                    done, _ = await asyncio.wait([*running, waiter], return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not waiter.done():
                        waiter.cancel()
                if waiter in done:
                    yield waiter.result(), None
                while not progress.empty():
                    yield progress.get_nowait(), None
                finished = [task for task in running if task in done]
                for task in sorted(finished, key=lambda t: calls.index(running[t][0])):
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


@dataclass(frozen=True)
class _Call:
    call: ToolUseBlock
    item_id: str
    context: ToolContext


def _reporter(queue: asyncio.Queue[ToolProgressEvent], entry: _Call) -> Callable[[str], None]:
    """A tool's progress callback: each message becomes a `tool_progress` event (bounded)."""

    def report(message: str) -> None:
        queue.put_nowait(ToolProgressEvent(entry.call.id, entry.item_id, str(message)[:300]))

    return report


def _unknown(call: ToolUseBlock) -> ToolOutcome:
    return ToolOutcome(f"Unknown tool {call.name!r}.", ToolStatus.UNKNOWN_TOOL)
