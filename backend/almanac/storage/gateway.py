"""Gateway usage rows: one per `/v1/messages` request (written in batches by the gateway's recorder)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, insert, select

from almanac.storage.db import Session
from almanac.storage.tables import GatewayUsage


@dataclass(frozen=True)
class GatewayUsageRecord:
    user_id: str
    api_key_id: str | None
    model: str  # as requested
    upstream: str  # openai | anthropic | offline
    upstream_model: str
    stream: bool
    input_tokens: int
    output_tokens: int
    latency_ms: int
    status: int  # HTTP status (200 also for a stream that ended with an error event; see error_type)
    created_at: datetime
    error_type: str | None = None
    first_token_ms: int | None = None
    planner_model: str | None = None  # boost mode: the planner's usage, kept apart from the executor's
    planner_input_tokens: int = 0
    planner_output_tokens: int = 0
    boost_loops: int = 0
    boost_outcome: str | None = None  # summary | guided | best | direct (fallback) | reused (a turn's plan)
    credits: int = 0
    usage_estimated: bool = False  # the upstream reported no usage: its tokens were counted here
    planner_usage_estimated: bool = False


async def add_usage(session: Session, *, rows: Sequence[GatewayUsageRecord]) -> None:
    """Insert rows in one statement."""
    if rows:
        # Core insert on the table (not the ORM entity): the rows need no identity map.
        await session.execute(insert(GatewayUsage.__table__), [dict(row.__dict__) for row in rows])  # type: ignore[arg-type]


async def recent_usage(session: Session, *, user_id: str, limit: int = 50) -> list[GatewayUsageRecord]:
    """A user's latest rows, newest first."""
    result = await session.execute(
        select(GatewayUsage).where(GatewayUsage.user_id == user_id).order_by(GatewayUsage.id.desc()).limit(limit)
    )
    names = GatewayUsageRecord.__dataclass_fields__
    return [GatewayUsageRecord(**{name: getattr(row, name) for name in names}) for row in result.scalars()]


async def usage_totals(session: Session, *, user_id: str) -> tuple[int, int, int]:
    """(requests, input tokens, output tokens) of a user, planner tokens included."""
    row = (
        await session.execute(
            select(
                func.count(GatewayUsage.id),
                func.coalesce(func.sum(GatewayUsage.input_tokens + GatewayUsage.planner_input_tokens), 0),
                func.coalesce(func.sum(GatewayUsage.output_tokens + GatewayUsage.planner_output_tokens), 0),
            ).where(GatewayUsage.user_id == user_id)
        )
    ).one()
    return int(row[0]), int(row[1]), int(row[2])
