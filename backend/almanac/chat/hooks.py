"""What a tool call costs and how it is stored: the turn loop's hooks for one query.

`QueryHooks` implements `LoopHooks` (`chat/turn.py`) for every strategy that answers a query:
it allocates item IDs (`q3-t1`, `q3-t2`, …), debits a turn's calls before they run, settles each
call's price when it finishes, and queues the call's full and summary items for storage — items of
calls that finish together are written in one transaction, then summarised in the background.
Debits, refunds and writes run in tasks of their own, so a cancelled run can never cut one in half;
`settle()` waits for them.

Prices come from `billing/pricing.py`. A call keeps its price only if it ran to completion and its
result is not free (a lookup that found nothing); everything else is refunded, under a key, so no
refund can happen twice. Documentation (+10 once per query) is held by a documentation call that
succeeded: every documentation call of a turn reserves the +10, the first one to succeed keeps it,
and the others give theirs back — so the query pays 10 exactly when at least one lookup succeeded.
A per-query ceiling (`MAX_QUERY_CREDITS`) bounds what one question can cost: calls that would go
beyond it are not run, and the model is told, each turn, how much of it is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from almanac.billing.ledger import Charge, ChargeContext, CreditService, refund_key
from almanac.billing.pricing import (
    DOCUMENTATION_COST,
    GITHUB_TOOL_COST,
    OTHER_TOOL_COST,
    BillingCategory,
    tool_call_cost,
)
from almanac.chat.events import ToolResultEvent
from almanac.chat.summaries import SummaryDone, SummaryJobs
from almanac.chat.turn import Admission
from almanac.llm.messages import ToolUseBlock
from almanac.memory.history import HistoryStore
from almanac.memory.ids import ItemKind, summary_id, tool_result_id
from almanac.memory.summarise import SummaryRequest, needs_summary
from almanac.storage.records import ItemRecord
from almanac.tools.base import Tool, ToolContext
from almanac.tools.runner import ToolOutcome, ToolStatus

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueryRef:
    """The query the hooks work for."""

    user_id: str
    conversation_id: str
    query_number: int
    query_id: str
    message: str
    base_credits: int = 0  # what the query itself cost (counted against the ceiling)
    credit_limit: int = 0  # the per-query ceiling; 0: none


@dataclass(frozen=True)
class _Unwritten:
    """A finished tool call's items, waiting to be stored (then summarised, if `summary` is set)."""

    items: tuple[ItemRecord, ItemRecord]
    summary_id: str
    summary: SummaryRequest | None


@dataclass
class ToolLedger:
    """What this query's tool calls did, for the run's end state."""

    count: int = 0
    allocated: dict[str, ToolUseBlock] = field(default_factory=dict)
    recorded: set[str] = field(default_factory=set)
    completed: int = 0
    credits: int = 0
    names: list[str] = field(default_factory=list)
    summaries: dict[str, str] = field(default_factory=dict)
    summary_jobs: dict[str, asyncio.Task[SummaryDone]] = field(default_factory=dict)
    limit_reached: bool = False  # some call was not run because of the per-query ceiling


class QueryHooks:
    """`LoopHooks` for one query: IDs, prices and storage of its tool calls."""

    def __init__(
        self,
        query: QueryRef,
        *,
        credits: CreditService,
        history: HistoryStore,
        summaries: SummaryJobs,
        on_write: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.query = query
        self.tools = ToolLedger()
        self._credits = credits
        self._history = history
        self._summaries = summaries
        self._on_write = on_write
        self._charges: dict[str, Charge] = {}
        self._documentation_items: set[str] = set()  # documentation calls holding a reserve
        self._documentation_held_by: str | None = None  # the successful call that keeps the +10
        self._pending: list[asyncio.Task[Any]] = []
        self._unwritten: list[_Unwritten] = []
        self._writer: asyncio.Task[None] | None = None

    # --- LoopHooks ---------------------------------------------------------------------------

    def allocate(self, call: ToolUseBlock) -> tuple[str, ToolContext]:
        self.tools.count += 1
        item_id = tool_result_id(self.query.query_number, self.tools.count)
        self.tools.allocated[item_id] = call
        return item_id, ToolContext(
            user_id=self.query.user_id,
            conversation_id=self.query.conversation_id,
            query_number=self.query.query_number,
            query_id=self.query.query_id,
            item_id=item_id,
            tool_use_id=call.id,
        )

    async def admit(self, calls: Sequence[tuple[ToolUseBlock, Tool, str]]) -> list[Admission]:
        held = self._documentation_held_by is not None
        prices = [tool_call_cost(tool.billing, documentation_charged=held) for _, tool, _ in calls]
        within = self._within_limit([(tool, price) for (_, tool, _), price in zip(calls, prices, strict=True)])
        paid = [
            (call, item_id, price)
            for (call, _, item_id), price, ok in zip(calls, prices, within, strict=True)
            if price and ok
        ]
        # Debited in a task of its own: if the run is cancelled meanwhile, the charges are still
        # tracked in `_charges` (and refunded when the calls are recorded as never run).
        charges = await self._shielded(self._debit(paid))
        balance = min((c.balance_after for c in charges.values()), default=None)
        admissions: list[Admission] = []
        for (call, tool, item_id), price, ok in zip(calls, prices, within, strict=True):
            if not ok:
                self.tools.limit_reached = True
                admissions.append(Admission(False, 0, self._over_limit(call.name, price), ToolStatus.OVER_LIMIT))
            elif price and item_id not in charges:
                shown = balance if balance is not None else await self._credits.balance(user_id=self.query.user_id)
                admissions.append(
                    Admission(
                        False,
                        0,
                        (
                            f"Not run: {call.name} costs {price} credits and the user's balance is {shown}. "
                            "Answer with what you already have, and mention that credits ran out."
                        ),
                    )
                )
            else:
                if price and tool.billing is BillingCategory.DOCUMENTATION:
                    self._documentation_items.add(item_id)
                admissions.append(Admission(True, price))
        return admissions

    def turn_note(self) -> str | None:
        """What the model is told after each turn of tool calls: how much of the question's credit
        limit is left."""
        limit = self.query.credit_limit
        if not limit:
            return None
        spent = self._committed()
        return (
            f"[Credits: this question has cost {spent} of its {limit}-credit limit; {max(0, limit - spent)} "
            f"are left for tool calls (documentation {DOCUMENTATION_COST}, once per question; GitHub tools "
            f"{GITHUB_TOOL_COST}; other tools {OTHER_TOOL_COST}). Calls beyond the limit are not run.]"
        )

    def _committed(self) -> int:
        """What the query costs so far: its base, the calls that kept their price, and the
        reserves of calls still running (documentation counted once)."""
        pending = sum(
            charge.amount for item_id, charge in self._charges.items() if item_id not in self._documentation_items
        )
        documentation = DOCUMENTATION_COST if self._documentation_items and self._documentation_held_by is None else 0
        return self.query.base_credits + self.tools.credits + pending + documentation

    def _within_limit(self, priced: Sequence[tuple[Tool, int]]) -> list[bool]:
        """Which calls, admitted in order, keep the query within its ceiling."""
        limit = self.query.credit_limit
        if not limit:
            return [True] * len(priced)
        projected = self._committed()
        documentation_counted = bool(self._documentation_items) or self._documentation_held_by is not None
        within = []
        for tool, price in priced:
            is_documentation = tool.billing is BillingCategory.DOCUMENTATION
            extra = 0 if is_documentation and documentation_counted else price
            ok = projected + extra <= limit
            within.append(ok)
            if ok:
                projected += extra
                documentation_counted = documentation_counted or (is_documentation and price > 0)
        return within

    def _over_limit(self, name: str, price: int) -> str:
        limit, spent = self.query.credit_limit, self._committed()
        return (
            f"Not run: {name} costs {price} credits and this question has already cost {spent} of its "
            f"{limit}-credit limit. Answer with what you have, and mention that the question reached its "
            "credit limit (the user can ask a follow-up question to continue)."
        )

    async def record(
        self, call: ToolUseBlock, item_id: str, outcome: ToolOutcome, admission: Admission
    ) -> ToolResultEvent:
        return await self._shielded(self._record(call, item_id, outcome, admission))

    # --- for the run -------------------------------------------------------------------------

    @property
    def charges(self) -> dict[str, Charge]:
        """Tool charges not settled yet (item ID → charge)."""
        return self._charges

    async def settle(self) -> None:
        """Record every allocated call that never reported back as cancelled (refunding its
        charge), then wait until every debit, refund and write has finished."""
        await asyncio.gather(*self._pending, return_exceptions=True)
        for item_id, call in self.tools.allocated.items():
            if item_id not in self.tools.recorded:
                outcome = ToolOutcome(f"{call.name} did not run: the answer was interrupted.", ToolStatus.CANCELLED)
                await self._record(call, item_id, outcome, Admission(False))
        await asyncio.gather(*self._pending, return_exceptions=True)

    async def wait_pending(self) -> None:
        """Wait for debits, refunds and writes under way."""
        await asyncio.gather(*self._pending, return_exceptions=True)

    # --- internals ---------------------------------------------------------------------------

    async def _shielded(self, work: Awaitable[Any]) -> Any:
        task = asyncio.ensure_future(work)
        self._pending.append(task)
        return await asyncio.shield(task)

    async def _debit(self, paid: Sequence[tuple[ToolUseBlock, str, int]]) -> dict[str, Charge]:
        contexts = [
            (price, ChargeContext(f"tool {call.name}", self.query.conversation_id, self.query.query_id, item_id))
            for call, item_id, price in paid
        ]
        results = await self._credits.debit_many(user_id=self.query.user_id, items=contexts)
        charges = {item_id: charge for (_, item_id, _), charge in zip(paid, results, strict=True) if charge}
        self._charges.update(charges)
        return charges

    async def _record(
        self, call: ToolUseBlock, item_id: str, outcome: ToolOutcome, admission: Admission
    ) -> ToolResultEvent:
        """Settle the call's price, queue its two items (full and summary) for storage, and say
        what happened."""
        tools, query = self.tools, self.query
        charge = self._charges.pop(item_id, None)
        keep, why = outcome.chargeable, outcome.status.value if not outcome.status.billable else "found nothing"
        if item_id in self._documentation_items:
            self._documentation_items.discard(item_id)
            if keep and self._documentation_held_by is None:
                self._documentation_held_by = item_id
            elif keep:
                keep, why = False, f"documentation already paid by {self._documentation_held_by}"
        if charge is not None and not keep:
            await self._credits.refund(
                user_id=query.user_id,
                charge=charge,
                context=ChargeContext(f"tool {call.name}: {why}", query.conversation_id, query.query_id, item_id),
                key=refund_key(query.conversation_id, query.query_id, item_id),
            )
        charged = charge.amount if charge is not None and keep else 0
        tools.credits += charged
        sum_id = summary_id(item_id)
        long = needs_summary(outcome.content)
        summary = self._summaries.fallback(outcome.content, full_id=item_id) if long else outcome.content
        full = ItemRecord(
            item_id=item_id,
            query_number=query.query_number,
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
        request = SummaryRequest(ItemKind.TOOL_RESULT, outcome.content, call.name, query.message) if long else None
        self._unwritten.append(_Unwritten((full, brief), sum_id, request))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())
            self._pending.append(self._writer)
        tools.summaries[sum_id] = summary
        tools.recorded.add(item_id)
        tools.completed += outcome.status.billable
        tools.names.append(call.name)
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
        while self._unwritten:
            batch, self._unwritten = self._unwritten, []
            await self._history.add(
                conversation_id=self.query.conversation_id, items=[item for entry in batch for item in entry.items]
            )
            for entry in batch:
                if entry.summary is not None:
                    self.tools.summary_jobs[entry.summary_id] = self._summaries.schedule(
                        conversation_id=self.query.conversation_id,
                        summary_id=entry.summary_id,
                        full_id=entry.items[0].item_id,
                        request=entry.summary,
                    )
            if self._on_write is not None:
                await self._on_write()


def _citations(outcome: ToolOutcome) -> list[dict[str, str]]:
    """Sources a tool reported in its structured data (`{"citations": [{title, url, library}]}`)."""
    cited = (outcome.data or {}).get("citations") or []
    return [
        {key: str(entry[key]) for key in ("title", "url", "library") if entry.get(key)}
        for entry in cited
        if isinstance(entry, dict) and entry.get("url")
    ]
