"""The dual-track history: the full track (everything verbatim) and the summarised track (queries
plus summaries), and the working messages a model sees, built from the summarised track.

On later queries the model sees each earlier item prefixed with its ID — `[ID:q3]` for a query,
`[ID:q3-t1-sum, ref:q3-t1]` for a summary — so it can fetch the original with
`retrieve_full_context`. Within the current query it sees its tool results in full.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import groupby

from almanac.llm.messages import Message, TextBlock
from almanac.memory.ids import ItemKind, query_id
from almanac.storage import conversations as store
from almanac.storage.db import Database
from almanac.storage.records import ItemRecord
from almanac.text.marking import as_data

FULL_KINDS = frozenset({ItemKind.QUERY, ItemKind.TOOL_RESULT, ItemKind.RESPONSE})
SUMMARISED_KINDS = frozenset({ItemKind.QUERY, ItemKind.TOOL_SUMMARY, ItemKind.RESPONSE_SUMMARY})


def full_track(items: Iterable[ItemRecord]) -> list[ItemRecord]:
    """Queries, tool results and responses, verbatim, in order."""
    return [item for item in items if item.kind in FULL_KINDS]


def summarised_track(items: Iterable[ItemRecord]) -> list[ItemRecord]:
    """Queries and the summaries of tool results and responses, in order."""
    return [item for item in items if item.kind in SUMMARISED_KINDS]


def id_prefix(item: ItemRecord) -> str:
    """`[ID:q3]`, or `[ID:q3-r-sum, ref:q3-r]` for an item that refers to another."""
    return f"[ID:{item.item_id}, ref:{item.ref}]" if item.ref else f"[ID:{item.item_id}]"


def bounded(content: str, limit: int, *, full_id: str | None = None) -> str:
    """`content` cut to `limit` characters, saying where the rest is."""
    if len(content) <= limit:
        return content
    where = f" retrieve_full_context('{full_id}') returns all of it." if full_id else ""
    return content[:limit].rstrip() + f"\n… [truncated: {len(content):,} characters in full.{where}]"


def describe_tool_call(item: ItemRecord) -> str:
    """`search_docs({"q": "x"})` for a tool item: its name and compact input."""
    arguments = json.dumps(item.tool_input or {}, ensure_ascii=False, separators=(",", ":"))
    if len(arguments) > 300:
        arguments = arguments[:300] + "…"
    return f"{item.tool_name or 'tool'}({arguments})"


def replayed_tool_call(item: ItemRecord, content: str) -> str:
    """An earlier tool call and its (summarised) result, as a model reads it from memory: the call —
    name and arguments a model chose — and the result inside one data element, since both came
    from a model or a tool and either may hold text posing as instructions."""
    marker = " (error)" if item.is_error else ""
    return f"Tool call{marker} and what it returned:\n" + as_data(
        f"{describe_tool_call(item)} returned:\n{content}", source=f"{item.item_id} {item.tool_name or 'tool'}"
    )


def working_messages(
    items: Sequence[ItemRecord], *, query_number: int, query_text: str, track: str = "summarised"
) -> list[Message]:
    """The messages a model receives for query `query_number`: one user and one assistant
    message per earlier query (from the chosen track), then the current query."""
    wanted = SUMMARISED_KINDS if track == "summarised" else FULL_KINDS
    earlier = [item for item in items if item.query_number < query_number and item.kind in wanted]
    messages: list[Message] = []
    for number, group in groupby(earlier, key=lambda item: item.query_number):
        query_items = list(group)
        asked = [item for item in query_items if item.kind == ItemKind.QUERY]
        answered = [item for item in query_items if item.kind != ItemKind.QUERY]
        question = asked[0] if asked else None
        messages.append(
            Message.user(
                f"{id_prefix(question)} {question.content}"
                if question
                else f"[ID:{query_id(number)}] (query text missing)"
            )
        )
        lines = [_render_answer_part(item) for item in answered]
        messages.append(Message.assistant("\n\n".join(lines) or f"[no answer was recorded for {query_id(number)}]"))
    messages.append(Message.user(f"[ID:{query_id(query_number)}] {query_text}"))
    return messages


def _render_answer_part(item: ItemRecord) -> str:
    if item.kind in (ItemKind.TOOL_SUMMARY, ItemKind.TOOL_RESULT):
        return f"{id_prefix(item)} {replayed_tool_call(item, item.content)}"
    return f"{id_prefix(item)} {as_data(item.content, source=item.item_id)}"


def message_chars(messages: Iterable[Message]) -> int:
    """Characters of text in messages (text blocks only)."""
    return sum(len(block.text) for message in messages for block in message.content if isinstance(block, TextBlock))


class HistoryStore:
    """Reads and writes a conversation's items in the database."""

    def __init__(self, database: Database) -> None:
        self._db = database

    async def items(self, *, user_id: str, conversation_id: str) -> list[ItemRecord]:
        """Every item of the user's conversation, in order."""
        async with self._db.session() as session:
            return await store.list_items(session, user_id=user_id, conversation_id=conversation_id)

    async def item(self, *, user_id: str, conversation_id: str, item_id: str) -> ItemRecord | None:
        """One item of the user's conversation, or None."""
        async with self._db.session() as session:
            return await store.get_item(session, user_id=user_id, conversation_id=conversation_id, item_id=item_id)

    async def add(self, *, conversation_id: str, items: Sequence[ItemRecord]) -> None:
        """Append items in one transaction."""
        async with self._db.session() as session:
            await store.add_items(session, conversation_id=conversation_id, items=items)

    async def set_content(self, *, conversation_id: str, item_id: str, content: str, status: str) -> None:
        """Replace an item's content (a summary arriving, or failing)."""
        async with self._db.session() as session:
            await store.set_item_content(
                session, conversation_id=conversation_id, item_id=item_id, content=content, status=status
            )
