"""`DiscussionService`: start a discussion between models, list and read the caller's discussions,
and settle discussions whose process died.

`start()` does everything that can refuse a request before any model work: the request is checked
against this deployment (`spec.check`: models, tools, limits → `DiscussionInvalid`), and in one
transaction the discussion is created and its first turn paid for (`InsufficientCredits` → 402,
and nothing is stored). The run then holds the discussion turn by turn (`run.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from almanac.billing.ledger import ChargeContext, CreditService
from almanac.billing.plans import how_to_get_more
from almanac.billing.pricing import DISCUSSION_TURN_COST
from almanac.chat.errors import InsufficientCredits
from almanac.chat.strategies.pairs import Collaboration
from almanac.chat.strategies.relevance import RelevanceScorer
from almanac.chat.summaries import SummaryJobs
from almanac.discussions.items import DiscussionItems
from almanac.discussions.run import DiscussionRun
from almanac.discussions.runtime import DiscussionContext, DiscussionLimits
from almanac.discussions.spec import DiscussionRequest, DiscussionSpec, check
from almanac.llm.base import Model
from almanac.llm.catalog import ModelCatalog
from almanac.llm.tokens import TokenCounter
from almanac.memory.context import Window
from almanac.memory.ids import query_id
from almanac.storage import discussions as store
from almanac.storage.db import Database
from almanac.storage.discussions import DiscussionEntry, DiscussionRecord
from almanac.storage.records import UserRecord
from almanac.tools.base import Tool
from almanac.tools.builtin.full_context import FullContextTool
from almanac.tools.registry import ToolRegistry

log = logging.getLogger(__name__)
TITLE_CHARS = 80
FULL_CONTEXT = "retrieve_full_context"


class DiscussionService:
    """Holds discussions. One instance per application."""

    def __init__(
        self,
        *,
        database: Database,
        credits: CreditService,
        catalog: ModelCatalog,
        registry: ToolRegistry,
        items: DiscussionItems,
        summaries: SummaryJobs,
        window_for: Callable[[Model], Window],
        limits: DiscussionLimits,
        collaboration: Collaboration | None = None,
        relevance: RelevanceScorer | None = None,
        helper_timeout_s: float = 120.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.database = database
        self.credits = credits
        self.catalog = catalog
        self.registry = registry  # the chat's tools; a discussion gets its own `retrieve_full_context`
        self.items = items
        self.summaries = summaries
        self.window_for = window_for
        self.limits = limits
        self.collaboration = collaboration or Collaboration()
        self.relevance = relevance
        self.helper_timeout_s = helper_timeout_s
        self.clock = clock or (lambda: datetime.now(UTC))
        self.counter = TokenCounter()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._workers: set[asyncio.Task[Any]] = set()

    def tool_names(self) -> list[str]:
        """The tools participants may be given."""
        return self.registry.names

    def check(self, request: DiscussionRequest) -> DiscussionSpec:
        """The request as this deployment can run it, or `DiscussionInvalid` naming the field."""
        return check(
            request,
            catalog=self.catalog,
            tools=self.tool_names(),
            limits=self.limits.spec,
            collaboration=self.collaboration,
        )

    async def start(self, *, user: UserRecord, request: DiscussionRequest) -> DiscussionRun:
        """Check, create and pay for the first turn, then start holding the discussion."""
        spec = self.check(request)
        async with self.database.session() as session:
            record = await store.create_discussion(
                session,
                user_id=user.id,
                title=" ".join(spec.goal.split())[:TITLE_CHARS],
                goal=spec.goal,
                turns=spec.turns,
                config=spec.config(),
                lease_until=self.clock() + timedelta(seconds=self.limits.lease_s),
            )
            context = ChargeContext("discussion turn", record.id, query_id(1))
            [charge] = await self.credits.debit_in(session, user_id=user.id, items=[(DISCUSSION_TURN_COST, context)])
            if charge is None:
                raise InsufficientCredits(
                    balance=await self.credits.balance_in(session, user_id=user.id),
                    needed=DISCUSSION_TURN_COST,
                    plan=user.plan,
                    how_to_get_more=how_to_get_more(user.plan),
                )
        run = DiscussionRun(
            self.run_context(), record=record, spec=spec, user=user, first_charge=charge, registry=self._registry(spec)
        )
        run.begin()
        return run

    def run_context(self) -> DiscussionContext:
        """What a run started now gets from this service."""
        return DiscussionContext(
            database=self.database,
            credits=self.credits,
            catalog=self.catalog,
            items=self.items,
            summaries=self.summaries,
            window_for=self.window_for,
            limits=self.limits,
            collaboration=self.collaboration,
            relevance=self.relevance,
            helper_timeout_s=self.helper_timeout_s,
            clock=self.clock,
            counter=self.counter,
            keep_alive=self.keep_alive,
        )

    def _registry(self, spec: DiscussionSpec) -> ToolRegistry:
        """The tools of one discussion: those it asked for, `retrieve_full_context` over its own items."""
        tools: list[Tool] = []
        for name in spec.tools:
            if name == FULL_CONTEXT:
                tools.append(FullContextTool(self.items, max_chars=self.limits.full_context_chars))
            elif (tool := self.registry.get(name)) is not None:
                tools.append(tool)
        return ToolRegistry(tools)

    async def page(self, *, user_id: str, limit: int, offset: int) -> tuple[list[DiscussionRecord], int]:
        """A page of the user's discussions, newest activity first, and how many there are."""
        async with self.database.session() as session:
            return await store.list_discussions(session, user_id=user_id, limit=limit, offset=offset)

    async def get(self, *, user_id: str, discussion_id: str) -> tuple[DiscussionRecord, list[DiscussionEntry]] | None:
        """One of the user's discussions with its items, or None (unknown, or someone else's)."""
        await self.settle_abandoned(discussion_id=discussion_id)
        async with self.database.session() as session:
            record = await store.get_discussion(session, user_id=user_id, discussion_id=discussion_id)
        if record is None:
            return None
        return record, await self.items.entries(user_id=user_id, discussion_id=discussion_id)

    async def delete(self, *, user_id: str, discussion_id: str) -> str:
        """Delete one of the user's discussions: `deleted`, `running` (it is still being held: not
        deleted) or `missing` (unknown, or someone else's)."""
        await self.settle_abandoned(discussion_id=discussion_id)
        async with self.database.session() as session:
            return await store.delete_discussion(session, user_id=user_id, discussion_id=discussion_id)

    async def settle_abandoned(self, *, discussion_id: str) -> bool:
        """If the discussion's lease expired while it was running (its process died), mark it
        interrupted and refund the turn it was in. True if it was settled here."""
        async with self.database.session() as session:
            before = await store.claim_expired(session, discussion_id=discussion_id, now=self.clock())
        if before is None:
            return False
        turn = query_id(before.turns_done + 1)
        given = await self.credits.refund_remainder(
            user_id=before.user_id,
            conversation_id=discussion_id,
            query_id=turn,
            reason="refund: the server stopped during this discussion turn",
        )
        log.warning(
            "settled discussion %s, left running by a stopped process (%d credits refunded)", discussion_id, given
        )
        return True

    async def sweep(self) -> int:
        """Settle every discussion whose process died (at startup); returns how many."""
        async with self.database.session() as session:
            stale = await store.expired(session, now=self.clock())
        return sum([await self.settle_abandoned(discussion_id=discussion_id) for discussion_id in stale])

    def keep_alive(self, task: asyncio.Task[Any], *, running: bool = False) -> None:
        """Hold a reference to a running or finishing task so it completes even if nobody awaits it
        (`running`: a discussion's worker, which `stop_all` may stop)."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if running:
            self._workers.add(task)
            task.add_done_callback(self._workers.discard)

    def stop_all(self) -> int:
        """On shutdown, once the grace period is over: stop every discussion still running (each
        stores and bills what completed in its shielded finish step). Returns how many."""
        stopping = [task for task in self._workers if not task.done()]
        for task in stopping:
            task.cancel()
        return len(stopping)

    async def drain(self, *, timeout_s: float) -> None:
        """On shutdown: let running discussions finish their turn for a while, then stop them."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout_s)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        await self.summaries.drain(timeout_s=2)
