"""The audit log: one append-only row per administrator action (who, what, when, on whom)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.tables import AuditEntry, utcnow


@dataclass(frozen=True)
class AuditRecord:
    id: int
    actor_id: str
    actor_email: str
    action: str
    target_user_id: str | None
    target_email: str | None
    details: dict[str, Any]
    created_at: datetime


async def add_entry(
    session: AsyncSession,
    *,
    actor_id: str,
    actor_email: str,
    action: str,
    target_user_id: str | None,
    target_email: str | None,
    details: dict[str, Any],
    at: datetime | None = None,
) -> None:
    """Append one entry (in the transaction of the action it records), made `at` (default: now)."""
    session.add(
        AuditEntry(
            actor_id=actor_id,
            actor_email=actor_email,
            action=action,
            target_user_id=target_user_id,
            target_email=target_email,
            details=details,
            created_at=at or utcnow(),
        )
    )
    await session.flush()


async def has_entry_since(
    session: AsyncSession, *, actor_id: str, action: str, target_user_id: str | None, since: datetime
) -> bool:
    """Whether this actor recorded this action on this target (None: on no user) since `since`."""
    target = (
        AuditEntry.target_user_id.is_(None) if target_user_id is None else AuditEntry.target_user_id == target_user_id
    )
    query = (
        select(AuditEntry.id)
        .where(AuditEntry.actor_id == actor_id, AuditEntry.action == action, target, AuditEntry.created_at >= since)
        .limit(1)
    )
    return (await session.execute(query)).first() is not None


async def entries(
    session: AsyncSession, *, target_user_id: str | None = None, limit: int = 50, offset: int = 0
) -> tuple[list[AuditRecord], int]:
    """Entries, newest first (only those about one user, if given), and how many there are."""
    query = select(AuditEntry)
    count = select(func.count(AuditEntry.id))
    if target_user_id is not None:
        query = query.where(AuditEntry.target_user_id == target_user_id)
        count = count.where(AuditEntry.target_user_id == target_user_id)
    rows = await session.execute(query.order_by(AuditEntry.id.desc()).limit(limit).offset(offset))
    total = int((await session.execute(count)).scalar_one())
    records = [
        AuditRecord(
            id=row.id,
            actor_id=row.actor_id,
            actor_email=row.actor_email,
            action=row.action,
            target_user_id=row.target_user_id,
            target_email=row.target_email,
            details=dict(row.details or {}),
            created_at=row.created_at,
        )
        for row in rows.scalars()
    ]
    return records, total
