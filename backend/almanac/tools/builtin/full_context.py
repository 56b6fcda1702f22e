"""`retrieve_full_context`: the full text of an earlier item of this conversation, by its ID."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from almanac.billing.pricing import BillingCategory
from almanac.memory.history import describe_tool_call
from almanac.memory.ids import ItemKind, full_id_of, parse_item_id, sort_key
from almanac.storage.records import ItemRecord
from almanac.tools.base import ToolContext, ToolOutput

NEARBY = 8


class HistoryReader(Protocol):
    async def items(self, *, user_id: str, conversation_id: str) -> list[ItemRecord]: ...


class FullContextTool:
    """Looks an ID up in the full track of the caller's conversation."""

    name = "retrieve_full_context"
    description = (
        "Return the complete, verbatim content of an earlier item of this conversation by its ID. "
        "Earlier items appear in the conversation as summaries prefixed like "
        "[ID:q3-r-sum, ref:q3-r]; pass the ref (or the summary ID) when the summary is not enough, "
        "e.g. to quote code or exact figures. IDs: q3 = query 3, q3-t1 = its first tool result, "
        "q3-r = its final answer."
    )
    input_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "id": {
                "type": "string",
                "description": "Item ID such as q2-r, q2-t1, q2 (a summary ID like q2-r-sum also works).",
                "minLength": 1,
                "maxLength": 64,
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "Start at this character (for items longer than one result; the result says "
                "where the next part starts).",
            },
        },
        "required": ["id"],
        "additionalProperties": False,
    }
    output_schema: Mapping[str, Any] | None = None
    billing = BillingCategory.TOOL
    source = "builtin"

    def __init__(self, history: HistoryReader, *, max_chars: int = 40_000) -> None:
        self._history = history
        self.max_chars = max_chars

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        requested = str(arguments["id"]).strip().strip("[]").removeprefix("ID:").strip()
        items = await self._history.items(user_id=context.user_id, conversation_id=context.conversation_id)
        full = {item.item_id: item for item in items if item.kind in _FULL_KINDS}
        parsed = parse_item_id(requested)
        if parsed is None:
            return _not_found(
                f"{requested!r} is not an item ID (they look like q3, q3-t1, q3-r or q3-r-sum). "
                f"{_listing(sorted(full, key=sort_key))}"
            )
        target = full_id_of(requested)
        item = full.get(target)
        if item is None:
            return _not_found(f"No item {target} in this conversation. {_listing(_nearby(target, full))}")
        offset = int(arguments.get("offset") or 0)
        if offset >= len(item.content) and item.content:
            return _not_found(f"{target} has {len(item.content):,} characters; offset {offset:,} is past its end.")
        part = item.content[offset : offset + self.max_chars]
        rest = len(item.content) - offset - len(part)
        header = _header(item) + (f" (from character {offset:,})" if offset else "")
        more = (
            f'\n[continues: {rest:,} more characters; retrieve_full_context(id="{target}", '
            f"offset={offset + len(part)}) returns the next part]"
            if rest > 0
            else ""
        )
        return ToolOutput(content=f"{header}\n{part}{more}", data={"id": item.item_id})


_FULL_KINDS = {ItemKind.QUERY, ItemKind.TOOL_RESULT, ItemKind.RESPONSE}


def _not_found(message: str) -> ToolOutput:
    """A lookup of an ID that does not exist: an error the model reads, and free of charge."""
    return ToolOutput(content=message, is_error=True, free=True)


def _header(item: ItemRecord) -> str:
    if item.kind == ItemKind.TOOL_RESULT:
        error = " (an error)" if item.is_error else ""
        return f"[ID:{item.item_id}] Full result{error} of {describe_tool_call(item)}:"
    if item.kind == ItemKind.RESPONSE:
        return f"[ID:{item.item_id}] Full text of the answer to q{item.query_number}:"
    return f"[ID:{item.item_id}] Full text of the user's query {item.item_id}:"


def _nearby(target: str, full: Mapping[str, ItemRecord]) -> list[str]:
    """The existing IDs closest to `target` in conversation order."""
    ordered = sorted(full, key=sort_key)
    key = sort_key(target)
    position = sum(1 for item_id in ordered if sort_key(item_id) < key)
    start = max(0, min(position - NEARBY // 2, len(ordered) - NEARBY))
    return ordered[start : start + NEARBY]


def _listing(ids: Sequence[str]) -> str:
    if not ids:
        return "This conversation has no earlier items yet."
    return "Valid IDs near it: " + ", ".join(ids) + "."
