"""Conversations and their history items. Every read is scoped to the owning user."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.records import ConversationRecord, ItemRecord
from almanac.storage.tables import Conversation, HistoryItem, utcnow


def _conversation(row: Conversation) -> ConversationRecord:
    return ConversationRecord(
        id=row.id,
        user_id=row.user_id,
        title=row.title,
        query_counter=row.query_counter,
        created_at=row.created_at,
        updated_at=row.updated_at,
        strategy=row.strategy,
    )


def _item(row: HistoryItem) -> ItemRecord:
    return ItemRecord(
        item_id=row.item_id,
        query_number=row.query_number,
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
        model=row.model,
    )


async def create_conversation(
    session: AsyncSession, *, user_id: str, title: str, strategy: str | None = None
) -> ConversationRecord:
    """A new, empty conversation owned by `user_id` (answered with `strategy`, if given)."""
    now = utcnow()
    row = Conversation(
        id=str(uuid.uuid4()), user_id=user_id, title=title, strategy=strategy, created_at=now, updated_at=now
    )
    session.add(row)
    await session.flush()
    return _conversation(row)


async def get_conversation(session: AsyncSession, *, user_id: str, conversation_id: str) -> ConversationRecord | None:
    """The conversation if it exists and belongs to `user_id`, else None."""
    row = (
        await session.execute(
            select(Conversation).where(Conversation.id == conversation_id, Conversation.user_id == user_id)
        )
    ).scalar_one_or_none()
    return _conversation(row) if row else None


async def list_conversations(
    session: AsyncSession, *, user_id: str, limit: int, offset: int
) -> tuple[list[ConversationRecord], int]:
    """A page of the user's conversations, most recently updated first, and the total count."""
    total = (
        await session.execute(select(func.count()).select_from(Conversation).where(Conversation.user_id == user_id))
    ).scalar_one()
    rows = (
        await session.execute(
            select(Conversation)
            .where(Conversation.user_id == user_id)
            .order_by(Conversation.updated_at.desc(), Conversation.id)
            .limit(limit)
            .offset(offset)
        )
    ).scalars()
    return [_conversation(row) for row in rows], total


async def rename_conversation(session: AsyncSession, *, user_id: str, conversation_id: str, title: str) -> bool:
    """Set the title; False if the user has no such conversation."""
    return await update_conversation(session, user_id=user_id, conversation_id=conversation_id, values={"title": title})


async def update_conversation(
    session: AsyncSession, *, user_id: str, conversation_id: str, values: dict[str, str | None]
) -> bool:
    """Set the title and/or the strategy (`values`); False if the user has no such conversation."""
    result = await session.execute(
        update(Conversation).where(Conversation.id == conversation_id, Conversation.user_id == user_id).values(**values)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def delete_conversation(
    session: AsyncSession, *, user_id: str, conversation_id: str, now: datetime
) -> Literal["deleted", "missing", "busy"]:
    """Delete a conversation and its items unless a query holds an unexpired lease on it."""
    owned = await get_conversation(session, user_id=user_id, conversation_id=conversation_id)
    if owned is None:
        return "missing"
    result = await session.execute(
        delete(Conversation).where(
            Conversation.id == conversation_id,
            or_(Conversation.lock_token.is_(None), Conversation.locked_until < now),
        )
    )
    if not result.rowcount:  # type: ignore[attr-defined]
        return "busy"
    await session.execute(delete(HistoryItem).where(HistoryItem.conversation_id == conversation_id))
    return "deleted"


async def claim_expired_lease(
    session: AsyncSession, *, conversation_id: str, user_id: str | None, now: datetime
) -> tuple[str, int] | None:
    """Take over an expired lease that a query still holds (its process died), releasing it: the
    owner and the number of the query left unfinished; None if there is none (or another process
    claimed it first)."""
    row = (
        await session.execute(
            select(Conversation.user_id, Conversation.query_counter, Conversation.lock_token).where(
                Conversation.id == conversation_id,
                Conversation.lock_token.is_not(None),
                Conversation.locked_until < now,
                *((Conversation.user_id == user_id,) if user_id is not None else ()),
            )
        )
    ).one_or_none()
    if row is None:
        return None
    owner, number, token = row
    claimed = await session.execute(
        update(Conversation)
        .where(Conversation.id == conversation_id, Conversation.lock_token == token)
        .values(lock_token=None, locked_until=None)
    )
    return (owner, number) if claimed.rowcount else None  # type: ignore[attr-defined]


async def expired_leases(session: AsyncSession, *, now: datetime) -> list[str]:
    """Conversations whose query lease expired while still held."""
    rows = await session.execute(
        select(Conversation.id).where(Conversation.lock_token.is_not(None), Conversation.locked_until < now)
    )
    return list(rows.scalars())


async def begin_query(
    session: AsyncSession,
    *,
    user_id: str,
    conversation_id: str,
    lock_token: str,
    now: datetime,
    lease_until: datetime,
) -> int | None:
    """Take the conversation's query lease and allocate the next query number, atomically.

    Returns the new query number, or None when another query holds an unexpired lease (or the
    conversation does not exist for this user).
    """
    result = await session.execute(
        update(Conversation)
        .where(
            Conversation.id == conversation_id,
            Conversation.user_id == user_id,
            or_(Conversation.locked_until.is_(None), Conversation.locked_until < now),
        )
        .values(
            query_counter=Conversation.query_counter + 1,
            lock_token=lock_token,
            locked_until=lease_until,
            updated_at=now,
        )
        .returning(Conversation.query_counter)
    )
    return result.scalar_one_or_none()


async def extend_lease(session: AsyncSession, *, conversation_id: str, lock_token: str, lease_until: datetime) -> bool:
    """Push the lease forward; False if the lease was lost."""
    result = await session.execute(
        update(Conversation)
        .where(Conversation.id == conversation_id, Conversation.lock_token == lock_token)
        .values(locked_until=lease_until)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def end_query(session: AsyncSession, *, conversation_id: str, lock_token: str, undo_query: bool = False) -> bool:
    """Release the lease. With `undo_query`, also give the query number back (the query left no
    trace). False if the lease was not ours any more."""
    values: dict[str, object] = {"lock_token": None, "locked_until": None, "updated_at": utcnow()}
    if undo_query:
        values["query_counter"] = Conversation.query_counter - 1
    result = await session.execute(
        update(Conversation)
        .where(Conversation.id == conversation_id, Conversation.lock_token == lock_token)
        .values(**values)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def add_items(session: AsyncSession, *, conversation_id: str, items: Sequence[ItemRecord]) -> None:
    """Append items to a conversation's history (one multi-row INSERT)."""
    if not items:
        return
    now = utcnow()
    await session.execute(
        insert(HistoryItem),
        [
            {
                "conversation_id": conversation_id,
                "item_id": item.item_id,
                "query_number": item.query_number,
                "kind": item.kind,
                "content": item.content,
                "ref": item.ref,
                "status": item.status,
                "tool_name": item.tool_name,
                "tool_input": item.tool_input,
                "tool_use_id": item.tool_use_id,
                "is_error": item.is_error,
                "credits": item.credits,
                "duration_ms": item.duration_ms,
                "model": item.model,
                "created_at": now,
                "updated_at": now,
            }
            for item in items
        ],
    )


async def set_item_content(
    session: AsyncSession, *, conversation_id: str, item_id: str, content: str, status: str
) -> None:
    """Replace an item's content and status (used when a summary arrives)."""
    await session.execute(
        update(HistoryItem)
        .where(HistoryItem.conversation_id == conversation_id, HistoryItem.item_id == item_id)
        .values(content=content, status=status, updated_at=utcnow())
    )


async def get_item(session: AsyncSession, *, user_id: str, conversation_id: str, item_id: str) -> ItemRecord | None:
    """One item of the user's conversation, or None."""
    row = (
        await session.execute(
            select(HistoryItem)
            .join(Conversation, Conversation.id == HistoryItem.conversation_id)
            .where(
                Conversation.user_id == user_id,
                HistoryItem.conversation_id == conversation_id,
                HistoryItem.item_id == item_id,
            )
        )
    ).scalar_one_or_none()
    return _item(row) if row else None


async def list_items(session: AsyncSession, *, user_id: str, conversation_id: str) -> list[ItemRecord]:
    """Every item of the user's conversation, in the order they were written."""
    rows = (
        await session.execute(
            select(HistoryItem)
            .join(Conversation, Conversation.id == HistoryItem.conversation_id)
            .where(Conversation.user_id == user_id, HistoryItem.conversation_id == conversation_id)
            .order_by(HistoryItem.seq)
        )
    ).scalars()
    return [_item(row) for row in rows]


async def delete_query_items(session: AsyncSession, *, conversation_id: str, query_number: int) -> None:
    """Remove every item of one query (used only to undo a query that produced nothing)."""
    await session.execute(
        delete(HistoryItem).where(
            HistoryItem.conversation_id == conversation_id, HistoryItem.query_number == query_number
        )
    )


async def delete_conversation_by_id(session: AsyncSession, *, conversation_id: str) -> None:
    """Delete a conversation without an owner check (used to undo one this request created)."""
    await session.execute(delete(HistoryItem).where(HistoryItem.conversation_id == conversation_id))
    await session.execute(delete(Conversation).where(Conversation.id == conversation_id))
