"""Recording what models a chat query used: the one write the chat run's finish step makes.

Call `record_query_usage` once per query, after the answer is complete (or interrupted), with the
tokens each model reported (`UsageEvent`s; a boost planner's or a helper model's under their own
role) and how many of its calls had their tokens estimated because the server reported none. Every
call counts, even one whose tokens are unknown. A second call for the same query, role and model
records nothing (the row is unique), so a retried finish step cannot count tokens twice.
Recording never fails the query: errors are logged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError

from almanac.storage import usage as store
from almanac.storage.db import Database
from almanac.storage.tables import utcnow

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelUse:
    """Tokens one model used for a query: `calls` model calls, their input and output tokens."""

    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    calls: int = 1
    role: str = "chat"  # chat (the answering model) | planner (boost) | helper (collaboration)
    estimated_calls: int = 0  # calls whose tokens were estimated (the server reported none)


async def record_query_usage(
    database: Database, *, user_id: str, conversation_id: str, query_id: str, uses: Iterable[ModelUse]
) -> bool:
    """Store the query's model usage (uses of the same role and model are added up); True if it
    was stored, False if it had been recorded before or could not be (logged)."""
    merged: dict[tuple[str, str], ModelUse] = {}
    for use in uses:
        key = (use.role, use.model)
        seen = merged.get(key)
        merged[key] = (
            use
            if seen is None
            else ModelUse(
                use.provider,
                use.model,
                seen.input_tokens + use.input_tokens,
                seen.output_tokens + use.output_tokens,
                seen.calls + use.calls,
                use.role,
                seen.estimated_calls + use.estimated_calls,
            )
        )
    now = utcnow()
    rows = [
        store.NewModelUsage(
            user_id=user_id,
            conversation_id=conversation_id,
            query_id=query_id,
            role=use.role[:16],
            provider=use.provider[:20],
            model=use.model[:200],
            calls=max(0, use.calls),
            estimated_calls=min(max(0, use.estimated_calls), max(0, use.calls)),
            input_tokens=max(0, use.input_tokens),
            output_tokens=max(0, use.output_tokens),
            created_at=now,
        )
        for use in merged.values()
    ]
    if not rows:
        return False
    try:
        async with database.session() as session:
            await store.add_model_usage(session, rows=rows)
    except IntegrityError:
        return False  # recorded before (a retried finish step)
    except Exception:  # boundary: usage statistics must never fail the answer they describe
        log.exception("could not record the model usage of %s/%s", conversation_id, query_id)
        return False
    return True
