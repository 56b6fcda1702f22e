"""`ChatService`: one user message in, a stream of `ChatEvent`s out, with memory and credits.

`start()` does everything that can refuse a request — validation (including whether the message fits
the model's context window), the conversation and its query lease, the base debit — before any
model work, so refusals are plain 4xx errors. `ChatRun.events()`
then runs the turn loop in a worker task and yields its events. If the consumer goes away, the
worker is cancelled: running tools stop, and what completed is stored and billed in a finish step
that cancellation cannot interrupt.

A conversation's lease is short and renewed while its run lives. A query whose process died
leaves an expired lease behind; the next request on that conversation, or the startup sweep,
settles it: the query is marked interrupted (an answer item saying so) and refunded in full from
the ledger — under the same refund keys a live run uses, so nothing is refunded twice.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from almanac.billing.ledger import ChargeContext, CreditService
from almanac.billing.plans import how_to_get_more
from almanac.billing.pricing import BASE_COST
from almanac.chat.errors import (
    ContextTooLarge,
    ConversationBusy,
    ConversationNotFound,
    EmptyMessage,
    InsufficientCredits,
    MessageTooLarge,
)
from almanac.chat.events import ChatEvent
from almanac.chat.prompts import SYSTEM_PROMPT
from almanac.chat.run import ChatRun, RunSetup, RunStopped
from almanac.chat.runtime import ChatLimits, QueryLeases, RunContext, Strategies
from almanac.chat.strategies import Strategy
from almanac.chat.summaries import SummaryJobs
from almanac.llm.base import Model
from almanac.llm.tokens import TokenCounter
from almanac.memory.context import ContextOverflow, QueryPrompt, preflight
from almanac.memory.history import HistoryStore
from almanac.memory.ids import ItemKind, query_id, response_id, summary_id
from almanac.storage import conversations as conversation_store
from almanac.storage.db import Database, Session
from almanac.storage.records import ItemRecord, UserRecord
from almanac.tools.registry import ToolRegistry

log = logging.getLogger(__name__)
TITLE_CHARS = 80


INTERRUPTED = (
    "[Interrupted: the server stopped before this answer was complete. Nothing was charged for this "
    "question; ask it again.]"
)


class ChatService:
    """Runs chats. One instance per application; safe for concurrent use."""

    def __init__(
        self,
        *,
        database: Database,
        history: HistoryStore,
        credits: CreditService,
        registry: ToolRegistry,
        model: Model,
        summaries: SummaryJobs,
        limits: ChatLimits,
        system_prompt: str = SYSTEM_PROMPT,
        clock: Callable[[], datetime] | None = None,
        strategies: Strategies | None = None,
        observer: Callable[[ChatEvent], None] | None = None,
    ) -> None:
        self.database = database
        self.history = history
        self.credits = credits
        self.registry = registry
        self.model = model
        self.summaries = summaries
        self.limits = limits
        self.system_prompt = system_prompt
        self.clock = clock or (lambda: datetime.now(UTC))
        self.counter = TokenCounter()  # learns from the provider's usage reports
        self.strategies = strategies or Strategies()
        self._finishers: set[asyncio.Task[Any]] = set()
        self.observer = observer  # sees every event of every run's loop (metrics); must not block or raise
        self._runs: weakref.WeakSet[ChatRun] = weakref.WeakSet()

    async def start(
        self, *, user: UserRecord, message: str, conversation_id: str | None, strategy: Strategy | None = None
    ) -> ChatRun:
        """Refuse (with a `ChatRefused` error) or commit to answering: the query number is
        allocated, the base cost paid and the query stored. `strategy` (else the conversation's,
        else the user's default, else the server's) says how the question is answered; a new
        conversation keeps the `strategy` it was started with."""
        if not message.strip():
            raise EmptyMessage()
        if len(message) > self.limits.max_message_chars:
            raise MessageTooLarge(size=len(message), limit=self.limits.max_message_chars)
        self._check_fits(message)
        if conversation_id is not None:
            await self.settle_abandoned(user_id=user.id, conversation_id=conversation_id)
        created = conversation_id is None
        lock_token = str(uuid.uuid4())
        # One transaction: a refusal (busy, unknown, out of credits) rolls everything back.
        async with self.database.session() as session:
            if conversation_id is None:
                title = " ".join(message.split())[:TITLE_CHARS]
                conversation_id = (
                    await conversation_store.create_conversation(
                        session, user_id=user.id, title=title, strategy=strategy
                    )
                ).id
            number = await self._begin_query(session, user, conversation_id, lock_token)
            stored = None  # the conversation's own strategy
            if strategy is None and not created:
                found = await conversation_store.get_conversation(
                    session, user_id=user.id, conversation_id=conversation_id
                )
                stored = found.strategy if found else None
            chosen = self.strategy_for(user, strategy or stored)  # type: ignore[arg-type]
            context = ChargeContext("query", conversation_id, query_id(number))
            [charge] = await self.credits.debit_in(session, user_id=user.id, items=[(BASE_COST, context)])
            if charge is None:
                raise InsufficientCredits(
                    balance=await self.credits.balance_in(session, user_id=user.id),
                    needed=BASE_COST,
                    plan=user.plan,
                    how_to_get_more=how_to_get_more(user.plan),
                )
            query = ItemRecord(item_id=query_id(number), query_number=number, kind=ItemKind.QUERY, content=message)
            await conversation_store.add_items(session, conversation_id=conversation_id, items=[query])
        setup = RunSetup(
            user=user,
            conversation_id=conversation_id,
            created=created,
            query_number=number,
            lock_token=lock_token,
            message=message,
            base_charge=charge,
            strategy=chosen,
        )
        run = ChatRun(self.run_context(), setup)
        run.begin()
        self._runs.add(run)
        return run

    def strategy_for(self, user: UserRecord, requested: Strategy | None) -> Strategy:
        """The strategy a question is answered with: the request's, else the user's default, else the server's."""
        chosen: Strategy = requested or user.default_strategy or self.strategies.default  # type: ignore[assignment]
        return chosen

    def _check_fits(self, message: str) -> None:
        """Refuse a message that cannot fit the model's window even with no history at all."""
        tools = self.registry.specs() if self.model.supports_tools else ()
        prompt = QueryPrompt((), 1, message, self.limits.window, self.counter)
        try:
            preflight(prompt, system=self.system_prompt, tools=tools)
        except ContextOverflow as exc:
            raise ContextTooLarge(needed=exc.needed, available=exc.available, model=self.model.name) from None

    async def _begin_query(self, session: Session, user: UserRecord, conversation_id: str, lock_token: str) -> int:
        now = self.clock()
        number = await conversation_store.begin_query(
            session,
            user_id=user.id,
            conversation_id=conversation_id,
            lock_token=lock_token,
            now=now,
            lease_until=now + timedelta(seconds=self.limits.lease_s),
        )
        if number is not None:
            return number
        if await conversation_store.get_conversation(session, user_id=user.id, conversation_id=conversation_id):
            raise ConversationBusy(conversation_id)
        raise ConversationNotFound(conversation_id)

    def leases(self) -> QueryLeases:
        """The conversations' query leases (renew, release, undo), on this service's clock."""
        return QueryLeases(self.database, self.clock, self.limits.lease_s)

    async def abandon(self, *, conversation_id: str, lock_token: str, created: bool, query_number: int) -> None:
        """See `QueryLeases.abandon`."""
        await self.leases().abandon(
            conversation_id=conversation_id, lock_token=lock_token, created=created, query_number=query_number
        )

    async def release(self, *, conversation_id: str, lock_token: str) -> None:
        """See `QueryLeases.release`."""
        await self.leases().release(conversation_id=conversation_id, lock_token=lock_token)

    async def extend_lease(self, *, conversation_id: str, lock_token: str) -> bool:
        """See `QueryLeases.extend`."""
        return await self.leases().extend(conversation_id=conversation_id, lock_token=lock_token)

    def run_context(self) -> RunContext:
        """What a run started now gets from this service."""
        return RunContext(
            database=self.database,
            history=self.history,
            credits=self.credits,
            registry=self.registry,
            model=self.model,
            summaries=self.summaries,
            limits=self.limits,
            system_prompt=self.system_prompt,
            counter=self.counter,
            strategies=self.strategies,
            leases=self.leases(),
            keep_alive=self.keep_alive,
            observer=self.observer,
        )

    async def settle_abandoned(self, *, user_id: str | None, conversation_id: str) -> bool:
        """If the conversation's lease expired while a query held it (its process died), settle that
        query: mark it interrupted and refund it. True if one was settled here."""
        now = self.clock()
        async with self.database.session() as session:
            stale = await conversation_store.claim_expired_lease(
                session, conversation_id=conversation_id, user_id=user_id, now=now
            )
            if stale is None:
                return False
            owner, number = stale
            response = response_id(number)
            existing = await conversation_store.get_item(
                session, user_id=owner, conversation_id=conversation_id, item_id=response
            )
            if existing is None and number > 0:
                await conversation_store.add_items(
                    session,
                    conversation_id=conversation_id,
                    items=[
                        ItemRecord(response, number, ItemKind.RESPONSE, INTERRUPTED, status="interrupted"),
                        ItemRecord(summary_id(response), number, ItemKind.RESPONSE_SUMMARY, INTERRUPTED, ref=response),
                    ],
                )
        if existing is None and number > 0:
            given = await self.credits.refund_remainder(
                user_id=owner,
                conversation_id=conversation_id,
                query_id=query_id(number),
                reason="refund: the server stopped before answering",
            )
            log.warning(
                "settled query %s of %s left unfinished by a stopped process (%d credits refunded)",
                query_id(number),
                conversation_id,
                given,
            )
        return True

    async def sweep(self) -> int:
        """Settle every query whose process died (at startup); returns how many."""
        async with self.database.session() as session:
            stale = await conversation_store.expired_leases(session, now=self.clock())
        settled = 0
        for conversation_id in stale:
            settled += await self.settle_abandoned(user_id=None, conversation_id=conversation_id)
        return settled

    def keep_alive(self, task: asyncio.Task[Any]) -> None:
        """Hold a reference to a finishing task so it completes even if nobody awaits it."""
        self._finishers.add(task)
        task.add_done_callback(self._finishers.discard)

    def stop_all(self, reason: RunStopped) -> int:
        """On shutdown, once the grace period is over: stop every run still answering (each stores
        and bills what completed and ends with `reason` as an `error` event). Returns how many."""
        return sum(run.stop(reason) for run in list(self._runs))

    async def drain(self, *, timeout_s: float) -> None:
        """On shutdown: let finishing work complete for a while."""
        if self._finishers:
            await asyncio.wait(list(self._finishers), timeout=timeout_s)


async def collect(run: ChatRun) -> list[ChatEvent]:
    """Every event of a run (the non-streaming API uses this)."""
    return [event async for event in run.events()]
