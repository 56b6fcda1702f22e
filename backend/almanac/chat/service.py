"""`ChatService`: one user message in, a stream of `ChatEvent`s out, with memory and credits.

`start()` does everything that can refuse a request — validation, the conversation and its query
lease, the base debit — before any model work, so refusals are plain 4xx errors. `ChatRun.events()`
then runs the turn loop in a worker task and yields its events. If the consumer goes away, the
worker is cancelled: running tools stop, and what completed is stored and billed in a finish step
that cancellation cannot interrupt.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from almanac.billing.ledger import ChargeContext, CreditService
from almanac.billing.plans import how_to_get_more
from almanac.billing.pricing import BASE_COST
from almanac.chat.errors import (
    ConversationBusy,
    ConversationNotFound,
    EmptyMessage,
    InsufficientCredits,
    MessageTooLarge,
)
from almanac.chat.events import ChatEvent
from almanac.chat.prompts import SYSTEM_PROMPT
from almanac.chat.run import ChatRun, RunSetup
from almanac.chat.summaries import SummaryJobs
from almanac.chat.turn import LoopLimits
from almanac.llm.base import Model
from almanac.memory.history import HistoryStore
from almanac.memory.ids import ItemKind, query_id
from almanac.storage import conversations as conversation_store
from almanac.storage.db import Database, Session
from almanac.storage.records import ItemRecord, UserRecord
from almanac.tools.registry import ToolRegistry

log = logging.getLogger(__name__)
TITLE_CHARS = 80


@dataclass(frozen=True)
class ChatLimits:
    max_message_chars: int = 32_000
    summary_wait_s: float = 15.0
    lease_s: float = 600.0
    loop: LoopLimits = field(default_factory=LoopLimits)


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
        self._finishers: set[asyncio.Task[Any]] = set()

    async def start(self, *, user: UserRecord, message: str, conversation_id: str | None) -> ChatRun:
        """Refuse (with a `ChatRefused` error) or commit to answering: the query number is
        allocated, the base cost paid and the query stored."""
        if not message.strip():
            raise EmptyMessage()
        if len(message) > self.limits.max_message_chars:
            raise MessageTooLarge(size=len(message), limit=self.limits.max_message_chars)
        created = conversation_id is None
        lock_token = str(uuid.uuid4())
        # One transaction: a refusal (busy, unknown, out of credits) rolls everything back.
        async with self.database.session() as session:
            if conversation_id is None:
                title = " ".join(message.split())[:TITLE_CHARS]
                conversation_id = (
                    await conversation_store.create_conversation(session, user_id=user.id, title=title)
                ).id
            number = await self._begin_query(session, user, conversation_id, lock_token)
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
        )
        run = ChatRun(self, setup)
        run.begin()
        return run

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

    async def abandon(self, *, conversation_id: str, lock_token: str, created: bool, query_number: int) -> None:
        """Undo a query that left nothing worth keeping: its items, its number, and the
        conversation itself if this query created it."""
        async with self.database.session() as session:
            await conversation_store.delete_query_items(
                session, conversation_id=conversation_id, query_number=query_number
            )
            await conversation_store.end_query(
                session, conversation_id=conversation_id, lock_token=lock_token, undo_query=True
            )
            if created:
                await conversation_store.delete_conversation_by_id(session, conversation_id=conversation_id)

    async def release(self, *, conversation_id: str, lock_token: str) -> None:
        """End a query's hold on its conversation."""
        async with self.database.session() as session:
            await conversation_store.end_query(session, conversation_id=conversation_id, lock_token=lock_token)

    async def extend_lease(self, *, conversation_id: str, lock_token: str) -> None:
        """Keep holding the conversation for another lease period."""
        until = self.clock() + timedelta(seconds=self.limits.lease_s)
        async with self.database.session() as session:
            await conversation_store.extend_lease(
                session, conversation_id=conversation_id, lock_token=lock_token, lease_until=until
            )

    def keep_alive(self, task: asyncio.Task[Any]) -> None:
        """Hold a reference to a finishing task so it completes even if nobody awaits it."""
        self._finishers.add(task)
        task.add_done_callback(self._finishers.discard)

    async def drain(self, *, timeout_s: float) -> None:
        """On shutdown: let finishing work complete for a while."""
        if self._finishers:
            await asyncio.wait(list(self._finishers), timeout=timeout_s)


async def collect(run: ChatRun) -> list[ChatEvent]:
    """Every event of a run (the non-streaming API uses this)."""
    return [event async for event in run.events()]
