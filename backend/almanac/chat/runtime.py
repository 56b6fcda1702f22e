"""What a chat run needs from the service that owns it, handed down in one value.

The layering: `chat/service.py` owns runs (it refuses or admits a question, then starts a run);
`chat/run.py` answers one query; `chat/strategies/setup.py` builds the run's loop. Each imports
only downward — a run never reaches back for its service: the service gives it a `RunContext`
(the model, tools, stores, limits, strategies, its query leases and a way to keep finishing work
alive). The configuration values the service is built with (`Strategies`, `ChatLimits`) live here
too, below all three.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from almanac.billing.ledger import CreditService
from almanac.chat.events import ChatEvent
from almanac.chat.strategies import Strategy
from almanac.chat.strategies.pairs import Collaboration
from almanac.chat.strategies.relevance import RelevanceScorer
from almanac.chat.summaries import SummaryJobs
from almanac.chat.turn import LoopLimits
from almanac.llm.base import Model
from almanac.llm.tokens import TokenCounter
from almanac.memory.context import Window
from almanac.memory.history import HistoryStore
from almanac.storage import conversations as conversation_store
from almanac.storage.db import Database
from almanac.tools.registry import ToolRegistry


@dataclass(frozen=True)
class Strategies:
    """What the strategies other than `direct` need: the planner (boost) and the helper
    (collaborate) models, each None when not configured, and the server's default strategy;
    for collaborate also its configuration (pairs, threshold, retries) and how the relevance of an
    answer is measured (None: lexical overlap)."""

    default: Strategy = "direct"
    planner: Model | None = None
    planner_template: str | None = None
    planner_timeout_s: float = 60.0
    stream_summary: bool = True  # BOOST_STREAM_SUMMARY
    helper: Model | None = None
    collaboration: Collaboration = field(default_factory=Collaboration)
    relevance: RelevanceScorer | None = None
    helper_timeout_s: float = 120.0


@dataclass(frozen=True)
class ChatLimits:
    max_message_chars: int = 32_000
    summary_wait_s: float = 15.0
    lease_s: float = 30.0
    credit_limit: int = 50  # per query; 0: none
    window: Window = field(default_factory=lambda: Window(1_000_000))
    loop: LoopLimits = field(default_factory=LoopLimits)


@dataclass(frozen=True)
class QueryLeases:
    """A conversation's hold by the query being answered: renew it, release it, or undo the query."""

    database: Database
    clock: Callable[[], datetime]
    lease_s: float

    async def extend(self, *, conversation_id: str, lock_token: str) -> bool:
        """Keep holding the conversation for another lease period; False if the lease was lost."""
        until = self.clock() + timedelta(seconds=self.lease_s)
        async with self.database.session() as session:
            return await conversation_store.extend_lease(
                session, conversation_id=conversation_id, lock_token=lock_token, lease_until=until
            )

    async def release(self, *, conversation_id: str, lock_token: str) -> None:
        """End a query's hold on its conversation."""
        async with self.database.session() as session:
            await conversation_store.end_query(session, conversation_id=conversation_id, lock_token=lock_token)

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


@dataclass(frozen=True)
class RunContext:
    """Everything one chat run uses, as its service had it when the run started."""

    database: Database
    history: HistoryStore
    credits: CreditService
    registry: ToolRegistry
    model: Model
    summaries: SummaryJobs
    limits: ChatLimits
    system_prompt: str
    counter: TokenCounter  # learns from the provider's usage reports (shared by every run)
    strategies: Strategies
    leases: QueryLeases
    keep_alive: Callable[[asyncio.Task[Any]], None]  # finishing work completes even if nobody awaits it
    observer: Callable[[ChatEvent], None] | None = None  # sees every event (metrics); must not block or raise
