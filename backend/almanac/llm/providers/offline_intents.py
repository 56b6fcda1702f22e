"""The offline model's intent rules (pure): which tool a query calls for, and with what input.

Rules are deliberately simple and deterministic. Each returns planned calls as (tool name,
arguments); an empty list means "answer directly".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from almanac.memory.ids import ID_IN_TEXT, full_id_of, parse_item_id

_WORD = re.compile(r"[a-z0-9_]+")
_PREFIX = re.compile(r"\[ID:(?P<id>q[^,\]]+)(?:, ref:(?P<ref>q[^\]]+))?\]\s*(?P<body>.*?)(?=\n\n\[ID:|\Z)", re.S)
_FULL_WORDS = re.compile(
    r"\b(full|complete|entire|whole|verbatim|exact|original|untruncated|all of|word for word|again)\b", re.I
)
_EARLIER_WORDS = re.compile(
    r"\b(earlier|before|previous(ly)?|above|last|prior|you (said|wrote|gave|showed|found)|from q\d+)\b", re.I
)
_TOOL_WORDS = re.compile(r"\b(tool|result|output|search|found|lookup|fetched|retrieved)\b", re.I)
_ANSWER_WORDS = re.compile(r"\b(answer|response|reply|explanation|you (said|wrote|gave))\b", re.I)
_CODE_WORDS = re.compile(r"\b(code|snippet|example|function|class|script)\b", re.I)
_STOPWORDS = frozenset(
    "a an the of to in on for and or me my show give full complete entire whole from earlier that this it "
    "what was is please again you your can could i with".split()
)


@dataclass(frozen=True)
class KnownItem:
    """An item the model has seen in its context: its ID, the full item's ID, and its text."""

    id: str
    ref: str
    text: str


@dataclass(frozen=True)
class PlannedCall:
    name: str
    arguments: Mapping[str, Any]


def known_items(context_texts: Sequence[str]) -> list[KnownItem]:
    """Every `[ID:…]`-prefixed item in the given message texts, in order."""
    items: list[KnownItem] = []
    for text in context_texts:
        for match in _PREFIX.finditer(text):
            item_id = match["id"].strip()
            items.append(KnownItem(item_id, (match["ref"] or full_id_of(item_id)).strip(), match["body"].strip()))
    return items


def wants_full_context(query: str) -> bool:
    """Whether the user asks for the full text of something from earlier."""
    if ID_IN_TEXT.search(query):
        return True
    return bool(_FULL_WORDS.search(query) and _EARLIER_WORDS.search(query))


def full_context_calls(query: str, items: Sequence[KnownItem], current_query: int) -> list[PlannedCall]:
    """`retrieve_full_context` calls for the IDs a query names, or for the earlier item that best
    matches what it describes."""
    named = []
    for match in ID_IN_TEXT.finditer(query):
        parsed = parse_item_id(match.group(0))
        if parsed is not None and parsed.query < current_query:
            target = full_id_of(match.group(0))
            if target not in named:
                named.append(target)
    if named:
        return [PlannedCall("retrieve_full_context", {"id": item_id}) for item_id in named[:5]]
    candidates = [item for item in items if item.id != item.ref]  # summaries only
    if not candidates:
        return []
    best = max(enumerate(candidates), key=lambda pair: (_score(query, pair[1]), pair[0]))[1]
    return [PlannedCall("retrieve_full_context", {"id": best.ref})]


def _score(query: str, item: KnownItem) -> float:
    words = {w for w in _WORD.findall(query.lower()) if w not in _STOPWORDS}
    overlap = len(words & set(_WORD.findall(item.text.lower())))
    is_tool = "-t" in item.ref
    score = float(overlap)
    if _TOOL_WORDS.search(query):
        score += 2.0 if is_tool else 0.0
    if _ANSWER_WORDS.search(query):
        score += 2.0 if not is_tool else 0.0
    if _CODE_WORDS.search(query) and ("code block" in item.text or "```" in item.text or "def " in item.text):
        score += 1.5
    if not is_tool:
        score += 0.5  # by default, the answer is what people mean by "what you said earlier"
    return score


def current_query_number(text: str) -> int:
    """The query number in a `[ID:qN] …` message, or 1."""
    match = re.match(r"\[ID:q(\d+)\]", text)
    return int(match.group(1)) if match else 1
