"""Summaries of tool results and answers for the summarised track.

Two summarisers: `ModelSummariser` asks the summariser model for a one-to-three sentence summary;
`ExtractiveSummariser` (the offline default) keeps the leading sentences, headings and a note of
the code blocks. Short items are kept as they are: summarising them saves nothing.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Protocol

from almanac.llm.base import Model, complete
from almanac.llm.messages import Message, ModelRequest
from almanac.memory.ids import ItemKind
from almanac.text.marking import DATA_RULE, as_data

SHORT_ENOUGH = 400  # characters; items this short are their own summary
_CODE_BLOCK = re.compile(r"```([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n{2,}")


@dataclass(frozen=True)
class SummaryRequest:
    kind: ItemKind
    content: str
    tool_name: str | None = None
    query: str = ""


class Summariser(Protocol):
    name: str

    async def summarise(self, request: SummaryRequest) -> str:
        """A short summary of `request.content`; raises on failure (the caller keeps the item)."""
        ...


def needs_summary(content: str) -> bool:
    """Whether an item is long enough that a summary is shorter than the item."""
    return len(content) > SHORT_ENOUGH


class ExtractiveSummariser:
    """Deterministic summaries made of the item's own words: instant, or after `delay_s` (to try
    offline how the service behaves with a summariser that takes seconds, as a real model does)."""

    name = "extractive"

    def __init__(self, limit: int = 360, *, delay_s: float = 0.0) -> None:
        self.limit = limit
        self.delay_s = delay_s

    async def summarise(self, request: SummaryRequest) -> str:
        if self.delay_s > 0:
            await asyncio.sleep(self.delay_s)
        return extractive_summary(request.content, limit=self.limit, tool_name=request.tool_name)


def extractive_summary(content: str, *, limit: int = 360, tool_name: str | None = None) -> str:
    """The leading sentences of the prose (up to `limit` characters), its headings, and a note
    of the code blocks and total size."""
    text = content.strip()
    if len(text) <= limit:
        return text
    languages = [lang or "text" for lang, _ in _CODE_BLOCK.findall(text)]
    prose = _CODE_BLOCK.sub(" ", text)
    headings = [line.lstrip("#").strip() for line in prose.splitlines() if line.startswith("#")][:4]
    body = "\n".join(line for line in prose.splitlines() if not line.startswith("#"))
    picked: list[str] = []
    used = 0
    for sentence in (s.strip() for s in _SENTENCE_END.split(body)):
        if not sentence:
            continue
        sentence = " ".join(sentence.split())
        if used and used + len(sentence) > limit:
            break
        picked.append(sentence[: limit - used] + ("…" if len(sentence) > limit - used else ""))
        used += len(picked[-1]) + 1
        if used >= limit:
            break
    parts = []
    if tool_name:
        parts.append(f"{tool_name} returned:")
    if headings:
        parts.append("Sections: " + "; ".join(headings) + ".")
    if picked:
        parts.append(" ".join(picked))
    if languages:
        kinds = ", ".join(sorted(set(languages)))
        parts.append(f"(+ {len(languages)} code block{'s' if len(languages) > 1 else ''}: {kinds})")
    parts.append(f"[{len(text):,} characters in full]")
    return " ".join(parts)


_PROMPT = (
    "You write summaries for a conversation's memory. Summarise the item inside <data> in one to three "
    "sentences. Keep names, identifiers, versions, numbers, file paths, URLs and what any code does. "
    "No preamble, no markdown headings. " + DATA_RULE
)


class ModelSummariser:
    """Summaries written by a (small, cheap) model."""

    def __init__(self, model: Model, *, max_input_chars: int = 60_000) -> None:
        self.model = model
        self.name = f"{model.provider}:{model.name}"
        self._max_input = max_input_chars

    async def summarise(self, request: SummaryRequest) -> str:
        what = {
            ItemKind.TOOL_RESULT: f"result of the tool {request.tool_name or ''}".strip(),
            ItemKind.RESPONSE: "assistant's answer",
        }.get(request.kind, "item")
        body = request.content[: self._max_input]
        asked = as_data(request.query[:2000], source="the user's question")
        prompt = f"The user asked:\n{asked}\n\nSummarise this {what}:\n{as_data(body, source=what)}"
        response = await complete(
            self.model,
            ModelRequest(system=_PROMPT, messages=(Message.user(prompt),), max_tokens=300, purpose="summary"),
        )
        summary = response.text.strip()
        if not summary:
            raise ValueError("the summariser returned nothing")
        return summary
