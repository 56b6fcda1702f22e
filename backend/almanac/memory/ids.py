"""Item IDs of the dual-track history.

Per conversation, queries are numbered from 1. `q3` is the third query, `q3-t1` its first tool
result, `q3-r` its final response; `q3-t1-sum` and `q3-r-sum` are their summaries, whose `ref` is
the full item's ID. IDs are stable: they never change once given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class ItemKind(StrEnum):
    QUERY = "query"
    TOOL_RESULT = "tool_result"
    RESPONSE = "response"
    TOOL_SUMMARY = "tool_summary"
    RESPONSE_SUMMARY = "response_summary"


SUMMARY_SUFFIX = "-sum"
_ID_PATTERN = re.compile(r"^q(?P<query>[1-9]\d*)(?:-(?:t(?P<tool>[1-9]\d*)|(?P<response>r)))?(?P<sum>-sum)?$")
ID_IN_TEXT = re.compile(r"\bq[1-9]\d*(?:-(?:t[1-9]\d*|r))?(?:-sum)?\b")


@dataclass(frozen=True)
class ItemId:
    """A parsed item ID."""

    query: int
    tool: int | None = None
    response: bool = False
    summary: bool = False

    @property
    def kind(self) -> ItemKind:
        """Which kind of item this ID names."""
        if self.tool is not None:
            return ItemKind.TOOL_SUMMARY if self.summary else ItemKind.TOOL_RESULT
        if self.response:
            return ItemKind.RESPONSE_SUMMARY if self.summary else ItemKind.RESPONSE
        return ItemKind.QUERY

    def __str__(self) -> str:
        base = f"q{self.query}"
        if self.tool is not None:
            base += f"-t{self.tool}"
        elif self.response:
            base += "-r"
        return base + (SUMMARY_SUFFIX if self.summary else "")


def query_id(query: int) -> str:
    """`q{N}`."""
    return str(ItemId(query))


def tool_result_id(query: int, tool: int) -> str:
    """`q{N}-t{M}`."""
    return str(ItemId(query, tool=tool))


def response_id(query: int) -> str:
    """`q{N}-r`."""
    return str(ItemId(query, response=True))


def summary_id(full_id: str) -> str:
    """The summary ID of a tool result or response: `q3-t1` → `q3-t1-sum`."""
    parsed = parse_item_id(full_id)
    if parsed is None or parsed.summary or parsed.kind is ItemKind.QUERY:
        raise ValueError(f"{full_id!r} has no summary")
    return full_id + SUMMARY_SUFFIX


def parse_item_id(text: str) -> ItemId | None:
    """Parse an item ID, or None if `text` is not one (surrounding whitespace is ignored)."""
    match = _ID_PATTERN.match(text.strip())
    if match is None or (match["sum"] and not (match["tool"] or match["response"])):
        return None
    return ItemId(
        query=int(match["query"]),
        tool=int(match["tool"]) if match["tool"] else None,
        response=bool(match["response"]),
        summary=bool(match["sum"]),
    )


def full_id_of(item_id: str) -> str:
    """The full item an ID refers to: a summary's `ref`, or the ID itself."""
    return item_id.removesuffix(SUMMARY_SUFFIX)


def sort_key(item_id: str) -> tuple[int, int, int, int]:
    """Order IDs as they happen: query, its tool results, its response; summaries after their item."""
    parsed = parse_item_id(item_id)
    if parsed is None:
        return (1 << 30, 0, 0, 0)
    position = 0 if parsed.kind is ItemKind.QUERY else (parsed.tool or 1 << 20)
    return (parsed.query, position, 1 if parsed.response else 0, 1 if parsed.summary else 0)
