"""What a discussion run needs from the service that owns it, handed down in one value.

`discussions/service.py` admits a discussion and starts its run; `discussions/run.py` holds it turn
by turn. The run imports only downward: the service gives it a `DiscussionContext` (models, stores,
limits, collaboration settings, the clock and a way to keep its tasks alive) instead of itself.
`DiscussionLimits` lives here, below both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from almanac.billing.ledger import CreditService
from almanac.chat.strategies.pairs import Collaboration
from almanac.chat.strategies.relevance import RelevanceScorer
from almanac.chat.summaries import SummaryJobs
from almanac.chat.turn import LoopLimits
from almanac.discussions.items import DiscussionItems
from almanac.discussions.spec import Limits
from almanac.llm.base import Model
from almanac.llm.catalog import ModelCatalog
from almanac.llm.tokens import TokenCounter
from almanac.memory.context import Window
from almanac.storage.db import Database


@dataclass(frozen=True)
class DiscussionLimits:
    spec: Limits = field(default_factory=Limits)
    loop: LoopLimits = field(default_factory=LoopLimits)
    credit_limit: int = 50  # one turn's ceiling (MAX_QUERY_CREDITS); 0: none
    lease_s: float = 30.0
    full_context_chars: int = 40_000


class KeepAlive(Protocol):
    def __call__(self, task: asyncio.Task[Any], *, running: bool = False) -> None:
        """Hold a reference to `task` so it completes even if nobody awaits it (`running`: the
        discussion's worker, which the service may stop at shutdown)."""


@dataclass(frozen=True)
class DiscussionContext:
    """Everything one discussion run uses, as its service had it when the run started."""

    database: Database
    credits: CreditService
    catalog: ModelCatalog
    items: DiscussionItems
    summaries: SummaryJobs
    window_for: Callable[[Model], Window]
    limits: DiscussionLimits
    collaboration: Collaboration
    relevance: RelevanceScorer | None
    helper_timeout_s: float
    clock: Callable[[], datetime]
    counter: TokenCounter
    keep_alive: KeepAlive
