"""Discussions between models and their items. Every read is scoped to the owning user."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.records import ItemRecord
from almanac.storage.tables import Discussion, DiscussionItem, utcnow


@dataclass(frozen=True)
class DiscussionRecord:
    id: str
    user_id: str
    title: str
    goal: str
    turns: int
    config: dict[str, Any]
    status: str
    stop_reason: str
    turns_done: int
    credits_used: int
    lease_until: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class DiscussionEntry:
    """An item of a discussion, and who spoke it (messages only)."""

    item: ItemRecord
    speaker: int | None = None
    model: str | None = None


def _discussion(row: Discussion) -> DiscussionRecord:
    return DiscussionRecord(
        id=row.id,
        user_id=row.user_id,
        title=row.title,
        goal=row.goal,
        turns=row.turns,
        config=dict(row.config or {}),
        status=row.status,
        stop_reason=row.stop_reason,
        turns_done=row.turns_done,
        credits_used=row.credits_used,
        lease_until=row.lease_until,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _entry(row: DiscussionItem) -> DiscussionEntry:
    item = ItemRecord(
        item_id=row.item_id,
        query_number=row.turn,
        kind=row.kind,
        content=row.content,
        ref=row.ref,
        status=row.status,
        tool_name=row.tool_name,
        tool_input=row.tool_input,
        tool_use_id=row.tool_use_id,
        is_error=row.is_error,
        credits=row.credits,
        duration_ms=row.duration_ms,
        created_at=row.created_at,
    )
    return DiscussionEntry(item, row.speaker, row.model)


async def create_discussion(
    session: AsyncSession,
    *,
    user_id: str,
    title: str,
    goal: str,
    turns: int,
    config: dict[str, Any],
    lease_until: datetime,
) -> DiscussionRecord:
    """A new, running discussion owned by `user_id`."""
    now = utcnow()
    row = Discussion(
        id=str(uuid.uuid4()),
        user_id=user_id,
        title=title,
        goal=goal,
        turns=turns,
        config=config,
        status="running",
        stop_reason="",
        turns_done=0,
        credits_used=0,
        lease_until=lease_until,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    return _discussion(row)


async def get_discussion(session: AsyncSession, *, user_id: str, discussion_id: str) -> DiscussionRecord | None:
    """The discussion if it exists and belongs to `user_id`, else None."""
    row = (
        await session.execute(select(Discussion).where(Discussion.id == discussion_id, Discussion.user_id == user_id))
    ).scalar_one_or_none()
    return _discussion(row) if row else None


async def list_discussions(
    session: AsyncSession, *, user_id: str, limit: int, offset: int
) -> tuple[list[DiscussionRecord], int]:
    """A page of the user's discussions, most recently updated first, and the total count."""
    total = (
        await session.execute(select(func.count()).select_from(Discussion).where(Discussion.user_id == user_id))
    ).scalar_one()
    rows = (
        await session.execute(
            select(Discussion)
            .where(Discussion.user_id == user_id)
            .order_by(Discussion.updated_at.desc(), Discussion.id)
            .limit(limit)
            .offset(offset)
        )
    ).scalars()
    return [_discussion(row) for row in rows], int(total)


async def record_progress(
    session: AsyncSession,
    *,
    discussion_id: str,
    turns_done: int,
    credits_used: int,
    status: str = "running",
    stop_reason: str = "",
    lease_until: datetime | None = None,
) -> None:
    """Store how far a discussion got (and, when it ended, how: `lease_until` None)."""
    await session.execute(
        update(Discussion)
        .where(Discussion.id == discussion_id)
        .values(
            turns_done=turns_done,
            credits_used=credits_used,
            status=status,
            stop_reason=stop_reason,
            lease_until=lease_until,
            updated_at=utcnow(),
        )
    )


async def extend_lease(session: AsyncSession, *, discussion_id: str, lease_until: datetime) -> bool:
    """Hold a running discussion for longer; False if it is no longer running."""
    result = await session.execute(
        update(Discussion)
        .where(Discussion.id == discussion_id, Discussion.status == "running")
        .values(lease_until=lease_until)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def expired(session: AsyncSession, *, now: datetime) -> list[str]:
    """Running discussions whose lease ran out (their process died)."""
    rows = await session.execute(
        select(Discussion.id).where(Discussion.status == "running", Discussion.lease_until < now)
    )
    return [row[0] for row in rows.all()]


async def claim_expired(session: AsyncSession, *, discussion_id: str, now: datetime) -> DiscussionRecord | None:
    """Mark a running discussion whose lease ran out as interrupted; the record as it was, or None
    (still alive, already settled, or unknown). Only one caller can win the claim."""
    row = (
        await session.execute(
            select(Discussion).where(
                Discussion.id == discussion_id, Discussion.status == "running", Discussion.lease_until < now
            )
        )
    ).scalar_one_or_none()
    if row is None:
        return None
    before = _discussion(row)
    claimed = await session.execute(
        update(Discussion)
        .where(Discussion.id == discussion_id, Discussion.status == "running", Discussion.lease_until < now)
        .values(status="interrupted", stop_reason="interrupted", lease_until=None, updated_at=now)
    )
    return before if claimed.rowcount else None  # type: ignore[attr-defined]


async def delete_discussion(session: AsyncSession, *, user_id: str, discussion_id: str) -> str:
    """Delete the user's discussion and its items unless it is running: `deleted`, `running`, or
    `missing` (unknown, or someone else's)."""
    owned = await get_discussion(session, user_id=user_id, discussion_id=discussion_id)
    if owned is None:
        return "missing"
    if owned.status == "running":
        return "running"
    await session.execute(delete(DiscussionItem).where(DiscussionItem.discussion_id == discussion_id))
    await session.execute(delete(Discussion).where(Discussion.id == discussion_id))
    return "deleted"


async def add_items(
    session: AsyncSession,
    *,
    discussion_id: str,
    items: Sequence[ItemRecord],
    speaker: int | None = None,
    model: str | None = None,
) -> None:
    """Append items (one multi-row INSERT); `speaker` and `model` mark a participant's message."""
    if not items:
        return
    now = utcnow()
    await session.execute(
        insert(DiscussionItem),
        [
            {
                "discussion_id": discussion_id,
                "item_id": item.item_id,
                "turn": item.query_number,
                "kind": item.kind,
                "ref": item.ref,
                "speaker": speaker,
                "model": model,
                "content": item.content,
                "status": item.status,
                "tool_name": item.tool_name,
                "tool_input": item.tool_input,
                "tool_use_id": item.tool_use_id,
                "is_error": item.is_error,
                "credits": item.credits,
                "duration_ms": item.duration_ms,
                "created_at": now,
                "updated_at": now,
            }
            for item in items
        ],
    )


async def set_item_content(
    session: AsyncSession, *, discussion_id: str, item_id: str, content: str, status: str
) -> None:
    """Replace an item's content and status (a summary arriving)."""
    await session.execute(
        update(DiscussionItem)
        .where(DiscussionItem.discussion_id == discussion_id, DiscussionItem.item_id == item_id)
        .values(content=content, status=status, updated_at=utcnow())
    )


async def list_items(session: AsyncSession, *, user_id: str, discussion_id: str) -> list[DiscussionEntry]:
    """Every item of the user's discussion, in the order they were written."""
    rows = (
        await session.execute(
            select(DiscussionItem)
            .join(Discussion, Discussion.id == DiscussionItem.discussion_id)
            .where(Discussion.user_id == user_id, DiscussionItem.discussion_id == discussion_id)
            .order_by(DiscussionItem.seq)
        )
    ).scalars()
    return [_entry(row) for row in rows]
