"""Conversations as their owner sees them: list, read (both tracks), rename or change the answer
strategy, delete."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from almanac.memory.history import full_track, summarised_track
from almanac.storage import conversations as store
from almanac.storage.db import Database
from almanac.storage.records import ConversationRecord, ItemRecord


@dataclass(frozen=True)
class ConversationView:
    conversation: ConversationRecord
    full: list[ItemRecord]
    summarised: list[ItemRecord]


class ConversationService:
    """Owner-scoped reads and edits; another user's conversation behaves as if it did not exist."""

    def __init__(self, database: Database) -> None:
        self._db = database

    async def page(self, *, user_id: str, limit: int, offset: int) -> tuple[list[ConversationRecord], int]:
        async with self._db.session() as session:
            return await store.list_conversations(session, user_id=user_id, limit=limit, offset=offset)

    async def view(self, *, user_id: str, conversation_id: str) -> ConversationView | None:
        async with self._db.session() as session:
            conversation = await store.get_conversation(session, user_id=user_id, conversation_id=conversation_id)
            if conversation is None:
                return None
            items = await store.list_items(session, user_id=user_id, conversation_id=conversation_id)
        return ConversationView(conversation, full_track(items), summarised_track(items))

    async def item(self, *, user_id: str, conversation_id: str, item_id: str) -> ItemRecord | None:
        async with self._db.session() as session:
            return await store.get_item(session, user_id=user_id, conversation_id=conversation_id, item_id=item_id)

    async def rename(self, *, user_id: str, conversation_id: str, title: str) -> ConversationRecord | None:
        return await self.update(user_id=user_id, conversation_id=conversation_id, changes={"title": title})

    async def update(
        self, *, user_id: str, conversation_id: str, changes: Mapping[str, str | None]
    ) -> ConversationRecord | None:
        """Change the title and/or the strategy (None: the user's default); None if there is no
        such conversation of theirs."""
        unknown = set(changes) - {"title", "strategy"}
        if unknown:
            raise ValueError(f"cannot change {', '.join(sorted(unknown))}")
        async with self._db.session() as session:
            if changes and not await store.update_conversation(
                session, user_id=user_id, conversation_id=conversation_id, values=dict(changes)
            ):
                return None
            return await store.get_conversation(session, user_id=user_id, conversation_id=conversation_id)

    async def delete(self, *, user_id: str, conversation_id: str) -> Literal["deleted", "missing", "busy"]:
        """Delete the conversation and its history — not while it is answering (`busy`)."""
        async with self._db.session() as session:
            return await store.delete_conversation(
                session, user_id=user_id, conversation_id=conversation_id, now=datetime.now(UTC)
            )
