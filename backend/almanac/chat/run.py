"""One query being answered: the turn loop's hooks (IDs, credits, storage) and its finish step."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio

from almanac.billing.ledger import Charge, ChargeContext
from almanac.billing.pricing import BillingCategory, tool_call_cost
from almanac.chat.events import (
    ChatEvent,
    ErrorEvent,
    MessageEnd,
    MessageStart,
    TextDeltaEvent,
    ToolResultEvent,
)
from almanac.chat.turn import Admission, TurnLoop
from almanac.llm.base import ModelError
from almanac.llm.messages import ToolUseBlock
from almanac.memory.history import working_messages
from almanac.memory.ids import ItemKind, query_id, response_id, summary_id, tool_result_id
from almanac.memory.summarise import SummaryRequest, needs_summary
from almanac.storage.records import ItemRecord, UserRecord
from almanac.tools.base import Tool, ToolContext
from almanac.tools.runner import ToolOutcome, ToolStatus

if TYPE_CHECKING:
    from almanac.chat.service import ChatService

log = logging.getLogger(__name__)
FINISH_TIMEOUT_S = 30.0
_DONE = object()


@dataclass(frozen=True)
class _Unwritten:
    """A finished tool call's items, waiting to be stored (then summarised, if `summary` is set)."""

    items: tuple[ItemRecord, ItemRecord]
    summary_id: str
    summary: SummaryRequest | None


@dataclass(frozen=True)
class RunSetup:
    user: UserRecord
    conversation_id: str
    created: bool
    query_number: int
    lock_token: str
    message: str
    base_charge: Charge


@dataclass
class _RunState:
    tool_count: int = 0
    allocated: dict[str, ToolUseBlock] = field(default_factory=dict)
    recorded: set[str] = field(default_factory=set)
    completed_tools: int = 0
    charges: dict[str, Charge] = field(default_factory=dict)
    documentation_paid_by: str | None = None
    credits_used: int = 0
    text: list[str] = field(default_factory=list)
    tools_used: list[str] = field(default_factory=list)
    summary_jobs: dict[str, asyncio.Task[str]] = field(default_factory=dict)
    pending: list[asyncio.Task[Any]] = field(default_factory=list)
    unwritten: list[_Unwritten] = field(default_factory=list)
    writer: asyncio.Task[None] | None = None
    summaries: dict[str, str] = field(default_factory=dict)
    turns: int = 0
    stop_reason: str = ""
    lease_renewed_at: float = field(default_factory=time.monotonic)


class ChatRun:
    """Answers one query. Iterate `events()` exactly once."""

    def __init__(self, service: ChatService, setup: RunSetup) -> None:
        self._service = service
        self.setup = setup
        self.query_id = query_id(setup.query_number)
        self._state = _RunState(credits_used=setup.base_charge.amount)
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None

    def begin(self) -> None:
        """Start answering now. The run completes (and is stored and billed) even if nobody reads
        its events; a reader that leaves early cancels it."""
        if self._worker is None:
            self._worker = asyncio.create_task(self._work(self._queue))
            self._service.keep_alive(self._worker)

    @property
    def conversation_id(self) -> str:
        return self.setup.conversation_id

    # --- the event stream --------------------------------------------------------------------

    async def events(self) -> AsyncIterator[ChatEvent]:
        """The run's events. Leaving early cancels the run; its finish step still completes.

        When the reader falls behind, text deltas already waiting are merged into one event, so a
        busy server sends fewer, larger deltas instead of falling further behind."""
        self.begin()
        worker = self._worker
        assert worker is not None
        held: object = None
        try:
            while True:
                event = held if held is not None else await self._queue.get()
                held = None
                if event is _DONE:
                    break
                if isinstance(event, TextDeltaEvent):
                    text = [event.text]
                    while not self._queue.empty():
                        held = self._queue.get_nowait()
                        if not isinstance(held, TextDeltaEvent):
                            break
                        text.append(held.text)
                        held = None
                    event = TextDeltaEvent("".join(text)) if len(text) > 1 else event
                yield event  # type: ignore[misc]
        finally:
            if not worker.done():
                worker.cancel()
            with anyio.CancelScope(shield=True), anyio.move_on_after(FINISH_TIMEOUT_S + 5):
                await asyncio.wait([worker])

    async def _work(self, queue: asyncio.Queue[object]) -> None:
        service = self._service
        error: Exception | None = None
        cancelled = False
        try:
            queue.put_nowait(
                MessageStart(self.conversation_id, self.query_id, service.model.name, service.model.provider)
            )
            items = await service.history.items(user_id=self.setup.user.id, conversation_id=self.conversation_id)
            messages = working_messages(items, query_number=self.setup.query_number, query_text=self.setup.message)
            loop = TurnLoop(
                model=service.model,
                system=service.system_prompt,
                messages=messages,
                registry=service.registry,
                hooks=self,
                limits=service.limits.loop,
            )
            async for event in loop.run():
                if isinstance(event, TextDeltaEvent):
                    self._state.text.append(event.text)
                queue.put_nowait(event)
            self._state.turns, self._state.stop_reason = loop.turns, loop.stop_reason or "end_turn"
        except asyncio.CancelledError:
            cancelled = True
        except ModelError as exc:
            error = exc
        except Exception as exc:  # boundary: a bug must end the stream with an error, not hang it
            log.exception("chat run %s/%s failed", self.conversation_id, self.query_id)
            error = exc
        finisher = asyncio.create_task(self._finish(error=error, cancelled=cancelled))
        service.keep_alive(finisher)
        try:
            for event in await asyncio.shield(finisher):
                queue.put_nowait(event)
        finally:
            queue.put_nowait(_DONE)

    # --- LoopHooks ---------------------------------------------------------------------------

    def allocate(self, call: ToolUseBlock) -> tuple[str, ToolContext]:
        self._state.tool_count += 1
        item_id = tool_result_id(self.setup.query_number, self._state.tool_count)
        self._state.allocated[item_id] = call
        return item_id, ToolContext(
            user_id=self.setup.user.id,
            conversation_id=self.conversation_id,
            query_number=self.setup.query_number,
            query_id=self.query_id,
            item_id=item_id,
            tool_use_id=call.id,
        )

    async def admit(self, calls: Sequence[tuple[ToolUseBlock, Tool, str]]) -> list[Admission]:
        state = self._state
        prices: list[int] = []
        documentation_paid = state.documentation_paid_by is not None
        for _, tool, _ in calls:
            prices.append(tool_call_cost(tool.billing, documentation_charged=documentation_paid))
            documentation_paid = documentation_paid or tool.billing is BillingCategory.DOCUMENTATION
        paid = [(call, item_id, price) for (call, _, item_id), price in zip(calls, prices, strict=True) if price]
        # Debited in a task of its own: if this run is cancelled meanwhile, the charges are still
        # tracked in `state.charges` (and refunded by the finish step, since the calls never ran).
        debit = asyncio.create_task(self._debit(paid))
        state.pending.append(debit)
        charges = await asyncio.shield(debit)
        balance = min((c.balance_after for c in charges.values()), default=None)
        admissions: list[Admission] = []
        documentation_refused = False
        for (call, tool, item_id), price in zip(calls, prices, strict=True):
            full_price = tool_call_cost(tool.billing, documentation_charged=False)
            is_documentation = tool.billing is BillingCategory.DOCUMENTATION
            if price and item_id in charges:
                if is_documentation:
                    state.documentation_paid_by = item_id
                admissions.append(Admission(True, price))
            elif price or (is_documentation and documentation_refused):
                documentation_refused = documentation_refused or is_documentation
                shown = (
                    balance if balance is not None else await self._service.credits.balance(user_id=self.setup.user.id)
                )
                admissions.append(
                    Admission(
                        False,
                        0,
                        (
                            f"Not run: {call.name} costs {price or full_price} "
                            f"credits and the user's balance is {shown}. "
                            "Answer with what you already have, and mention that credits ran out."
                        ),
                    )
                )
            else:
                admissions.append(Admission(True, 0))
        return admissions

    async def _debit(self, paid: Sequence[tuple[ToolUseBlock, str, int]]) -> dict[str, Charge]:
        contexts = [
            (price, ChargeContext(f"tool {call.name}", self.conversation_id, self.query_id, item_id))
            for call, item_id, price in paid
        ]
        results = await self._service.credits.debit_many(user_id=self.setup.user.id, items=contexts)
        charges = {item_id: charge for (_, item_id, _), charge in zip(paid, results, strict=True) if charge}
        self._state.charges.update(charges)
        return charges

    async def record(
        self, call: ToolUseBlock, item_id: str, outcome: ToolOutcome, admission: Admission
    ) -> ToolResultEvent:
        # In a task of its own, so that a cancellation cannot cut a refund in half.
        task = asyncio.create_task(self._record(call, item_id, outcome, admission))
        self._state.pending.append(task)
        return await asyncio.shield(task)

    async def _record(
        self, call: ToolUseBlock, item_id: str, outcome: ToolOutcome, admission: Admission
    ) -> ToolResultEvent:
        """Settle the call's price, queue its two items (full and summary) for storage, and say
        what happened. Items of calls that finish together are written in one transaction."""
        state, service = self._state, self._service
        charged = admission.credits if outcome.status.billable else 0
        charge = state.charges.pop(item_id, None)
        if charge is not None and not outcome.status.billable:
            await service.credits.refund(
                user_id=self.setup.user.id,
                charge=charge,
                context=ChargeContext(
                    f"tool {call.name} {outcome.status.value}", self.conversation_id, self.query_id, item_id
                ),
            )
            if state.documentation_paid_by == item_id:
                state.documentation_paid_by = None
        state.credits_used += charged
        sum_id = summary_id(item_id)
        long = needs_summary(outcome.content)
        summary = service.summaries.fallback(outcome.content, full_id=item_id) if long else outcome.content
        full = ItemRecord(
            item_id=item_id,
            query_number=self.setup.query_number,
            kind=ItemKind.TOOL_RESULT,
            content=outcome.content,
            status=outcome.status.value,
            tool_name=call.name,
            tool_input=dict(call.input),
            tool_use_id=call.id,
            is_error=outcome.is_error,
            credits=charged,
            duration_ms=outcome.duration_ms,
        )
        brief = replace(
            full,
            item_id=sum_id,
            kind=ItemKind.TOOL_SUMMARY,
            content=summary,
            ref=item_id,
            status="pending" if long else "done",
            credits=0,
            duration_ms=None,
        )
        request = SummaryRequest(ItemKind.TOOL_RESULT, outcome.content, call.name, self.setup.message) if long else None
        state.unwritten.append(_Unwritten((full, brief), sum_id, request))
        if state.writer is None or state.writer.done():
            state.writer = asyncio.create_task(self._write())
            state.pending.append(state.writer)
        state.summaries[sum_id] = summary
        state.recorded.add(item_id)
        state.completed_tools += outcome.status.billable
        state.tools_used.append(call.name)
        return ToolResultEvent(
            id=call.id,
            name=call.name,
            item_id=item_id,
            summary_id=sum_id,
            is_error=outcome.is_error,
            status=outcome.status.value,
            summary=None if long else summary,
            duration_ms=outcome.duration_ms,
            credits=charged,
            citations=_citations(outcome),
        )

    async def _write(self) -> None:
        """Store queued tool items, a batch per transaction, then start their summaries."""
        state, service = self._state, self._service
        while state.unwritten:
            batch, state.unwritten = state.unwritten, []
            await service.history.add(
                conversation_id=self.conversation_id, items=[item for entry in batch for item in entry.items]
            )
            for entry in batch:
                if entry.summary is not None:
                    state.summary_jobs[entry.summary_id] = service.summaries.schedule(
                        conversation_id=self.conversation_id,
                        summary_id=entry.summary_id,
                        full_id=entry.items[0].item_id,
                        request=entry.summary,
                    )
            await self._renew_lease_if_due()

    async def _renew_lease_if_due(self) -> None:
        if time.monotonic() - self._state.lease_renewed_at > self._service.limits.lease_s / 3:
            self._state.lease_renewed_at = time.monotonic()
            await self._service.extend_lease(conversation_id=self.conversation_id, lock_token=self.setup.lock_token)

    # --- finishing ---------------------------------------------------------------------------

    async def _finish(self, *, error: Exception | None, cancelled: bool) -> list[ChatEvent]:
        """Store and bill what completed, release the conversation, and say how it ended."""
        async with asyncio.timeout(FINISH_TIMEOUT_S):
            state, service, setup = self._state, self._service, self.setup
            await asyncio.gather(*state.pending, return_exceptions=True)
            produced = bool(state.text) or state.completed_tools > 0
            if (error is not None or cancelled) and not produced:
                return await self._undo(error)
            for item_id, call in state.allocated.items():
                if item_id not in state.recorded:
                    outcome = ToolOutcome(f"{call.name} did not run: the answer was interrupted.", ToolStatus.CANCELLED)
                    await self._record(call, item_id, outcome, Admission(False))
            await asyncio.gather(*state.pending, return_exceptions=True)  # every tool item is stored
            response = "".join(state.text)
            stop_reason = state.stop_reason or "end_turn"
            events: list[ChatEvent] = []
            if error is not None:
                message = _error_message(error)
                response += f"\n\n[The answer stopped early: {message}]"
                stop_reason = "error"
                events.append(ErrorEvent(_error_code(error), message, refunded=False))
            elif cancelled:
                response += "\n\n[Stopped: the answer was interrupted before it was complete.]"
                stop_reason = "cancelled"
            await self._store_response(
                response, status="done" if stop_reason not in ("error", "cancelled") else "interrupted"
            )
            if not cancelled:
                await service.summaries.wait(state.summary_jobs.values(), timeout_s=service.limits.summary_wait_s)
            await service.release(conversation_id=self.conversation_id, lock_token=setup.lock_token)
            for sum_id, job in state.summary_jobs.items():
                if job.done() and not job.cancelled() and job.exception() is None:
                    state.summaries[sum_id] = job.result()
            balance = await service.credits.balance(user_id=setup.user.id)
            response_sum_id = summary_id(response_id(setup.query_number))
            events.append(
                MessageEnd(
                    conversation_id=self.conversation_id,
                    query_id=self.query_id,
                    message_id=response_id(setup.query_number),
                    summary_id=response_sum_id,
                    summary=state.summaries.get(response_sum_id, ""),
                    response=response,
                    tools_used=list(state.tools_used),
                    credits_used=state.credits_used,
                    credits_remaining=balance,
                    turns=state.turns,
                    stop_reason=stop_reason,
                    summaries=dict(state.summaries),
                )
            )
            return events

    async def _store_response(self, response: str, *, status: str) -> None:
        service, number = self._service, self.setup.query_number
        full_id = response_id(number)
        sum_id = summary_id(full_id)
        long = needs_summary(response)
        summary = service.summaries.fallback(response, full_id=full_id) if long else response
        await service.history.add(
            conversation_id=self.conversation_id,
            items=[
                ItemRecord(
                    item_id=full_id,
                    query_number=number,
                    kind=ItemKind.RESPONSE,
                    content=response,
                    status=status,
                    credits=self._state.credits_used,
                ),
                ItemRecord(
                    item_id=sum_id,
                    query_number=number,
                    kind=ItemKind.RESPONSE_SUMMARY,
                    content=summary,
                    ref=full_id,
                    status="pending" if long else "done",
                ),
            ],
        )
        self._state.summaries[sum_id] = summary
        if long:
            self._state.summary_jobs[sum_id] = service.summaries.schedule(
                conversation_id=self.conversation_id,
                summary_id=sum_id,
                full_id=full_id,
                request=SummaryRequest(ItemKind.RESPONSE, response, None, self.setup.message),
            )

    async def _undo(self, error: Exception | None) -> list[ChatEvent]:
        """The query produced nothing: refund it and remove every trace of it."""
        service, setup = self._service, self.setup
        for item_id, charge in list(self._state.charges.items()):
            await service.credits.refund(
                user_id=setup.user.id,
                charge=charge,
                context=ChargeContext("refund: interrupted", self.conversation_id, self.query_id, item_id),
            )
        await service.credits.refund(
            user_id=setup.user.id,
            charge=setup.base_charge,
            context=ChargeContext("refund: the query produced nothing", self.conversation_id, self.query_id),
        )
        await service.abandon(
            conversation_id=self.conversation_id,
            lock_token=setup.lock_token,
            created=setup.created,
            query_number=setup.query_number,
        )
        if error is None:
            return []
        return [ErrorEvent(_error_code(error), _error_message(error), refunded=True)]


def _error_code(error: Exception) -> str:
    return error.code if isinstance(error, ModelError) else "internal_error"


def _error_message(error: Exception) -> str:
    if isinstance(error, ModelError):
        return str(error) or "the model failed"
    return "an internal error stopped the answer; it has been logged"


def _citations(outcome: ToolOutcome) -> list[dict[str, str]]:
    """Sources a tool reported in its structured data (`{"citations": [{title, url, library}]}`)."""
    cited = (outcome.data or {}).get("citations") or []
    return [
        {key: str(entry[key]) for key in ("title", "url", "library") if entry.get(key)}
        for entry in cited
        if isinstance(entry, dict) and entry.get("url")
    ]
