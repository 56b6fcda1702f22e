"""A discussion's items, behind the same interface as a conversation's history (`HistoryStore`), so
that what stores a chat's tool calls and their summaries (`chat/hooks.py`, `chat/summaries.py`) and
`retrieve_full_context` work on discussions unchanged: the `conversation_id` they pass is the
discussion's ID. Participants' messages are added with who spoke them (`add_message`)."""

from __future__ import annotations

from collections.abc import Sequence

from almanac.memory.history import HistoryStore
from almanac.storage import discussions as store
from almanac.storage.discussions import DiscussionEntry
from almanac.storage.records import ItemRecord


class DiscussionItems(HistoryStore):
    """Reads and writes discussion items (`conversation_id` = the discussion's ID)."""

    async def items(self, *, user_id: str, conversation_id: str) -> list[ItemRecord]:
        return [entry.item for entry in await self.entries(user_id=user_id, discussion_id=conversation_id)]

    async def item(self, *, user_id: str, conversation_id: str, item_id: str) -> ItemRecord | None:
        found = await self.items(user_id=user_id, conversation_id=conversation_id)
        return next((item for item in found if item.item_id == item_id), None)

    async def add(self, *, conversation_id: str, items: Sequence[ItemRecord]) -> None:
        async with self._db.session() as session:
            await store.add_items(session, discussion_id=conversation_id, items=items)

    async def set_content(self, *, conversation_id: str, item_id: str, content: str, status: str) -> None:
        async with self._db.session() as session:
            await store.set_item_content(
                session, discussion_id=conversation_id, item_id=item_id, content=content, status=status
            )

    async def add_message(self, *, discussion_id: str, item: ItemRecord, speaker: int, model: str) -> None:
        """Store a participant's message."""
        async with self._db.session() as session:
            await store.add_items(session, discussion_id=discussion_id, items=[item], speaker=speaker, model=model)

    async def entries(self, *, user_id: str, discussion_id: str) -> list[DiscussionEntry]:
        """Every item of the user's discussion, with its speaker, in order."""
        async with self._db.session() as session:
            return await store.list_items(session, user_id=user_id, discussion_id=discussion_id)
