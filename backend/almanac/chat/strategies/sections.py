"""The sections of a boost planner's reply: SUMMARY, or ANALYSIS and GUIDANCE (pure).

A section starts at one of the template's markers at the start of a line — `SUMMARY`, `ANALYSIS`
or `GUIDANCE`, in any case: plain with a colon (`GUIDANCE:`), bold (`**Guidance:**`,
`**GUIDANCE**:`), quoted (`> SUMMARY:`) or as a Markdown heading (`## Guidance`, colon optional) —
and runs to the next such marker or the end of the reply. Whatever lies between is content and is
passed on verbatim, only the blank space around it trimmed: Markdown headings, lists, quotes,
code fences (a marker inside a fence is content too), and the marker words in running text.

Only a reply with none of the three markers is read by the other names a planner may choose:
`Instructions:`, `Steps:`, `Plan:`, `Next steps:` for GUIDANCE, `Reasoning:`, `Thoughts:` for
ANALYSIS, `Final answer:` for SUMMARY. A SUMMARY found that way runs to the end of the reply.

A section that is empty counts as missing; a section named twice is joined with a blank line.
SUMMARY wins: a reply that has it is a final answer whatever else it contains.

`SummaryStream` reads a reply as it streams and releases the SUMMARY's text as soon as it can no
longer turn out to be anything else — exactly the text `parse_sections` finds once the reply is
complete.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

MARKERS: tuple[str, ...] = ("summary", "analysis", "guidance")
SYNONYMS: dict[str, tuple[str, ...]] = {
    "summary": ("final answer", "final response", "direct answer"),
    "analysis": ("reasoning", "thoughts", "thinking", "context analysis"),
    "guidance": (
        "instructions",
        "instruction",
        "steps",
        "next steps",
        "plan",
        "action plan",
        "execution plan",
        "directions",
        "guidance for the executor",
        "guidance for the auxiliary model",
    ),
}
_EMPH = r"(?:\*\*|__|\*|_)"
_LEAD = r"^[ \t]*(?:>[ \t]*)?"


def _patterns(names: Iterable[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    spelled = (re.escape(name).replace("\\ ", " ").replace(" ", r"[ \t]+") for name in names)
    alternatives = "|".join(sorted(spelled, key=len, reverse=True))
    # `NAME:` (colon required), optionally after `#`s and inside emphasis, which may close before
    # or after the colon; the rest of the line is content (its own emphasis kept).
    colon = re.compile(
        rf"{_LEAD}(?:#{{1,6}}[ \t]*)?(?P<o>{_EMPH})?[ \t]*(?P<name>{alternatives})[ \t]*(?(o)(?P=o)?)"
        rf"[ \t]*[:：](?(o)(?:[ \t]*(?P=o))?)[ \t]*",
        re.I,
    )
    # `## NAME` or `**NAME**` alone on its line (no colon needed).
    alone = re.compile(
        rf"{_LEAD}(?:#{{1,6}}[ \t]*{_EMPH}?|\*\*|__)[ \t]*(?P<name>{alternatives})[ \t]*{_EMPH}?[ \t]*$", re.I
    )
    return colon, alone


_ALL_NAMES = {name: name for name in MARKERS} | {
    alias: section for section, aliases in SYNONYMS.items() for alias in aliases
}
_CANONICAL = _patterns(MARKERS)
_FALLBACK = _patterns(_ALL_NAMES)
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})")

Kind = Literal["summary", "guidance", "unusable"]


@dataclass(frozen=True)
class Sections:
    summary: str = ""
    analysis: str = ""
    guidance: str = ""

    @property
    def kind(self) -> Kind:
        """What the reply asks for: a final answer, an executor run, or another try."""
        if self.summary:
            return "summary"
        if self.guidance:
            return "guidance"
        return "unusable"


@dataclass(frozen=True)
class _Marker:
    section: str
    content_start: int  # offset of the marker line's own content (after the colon), within the line


class _Fences:
    """Which lines are inside a fenced code block (``` or ~~~, closed by the same or a longer run)."""

    def __init__(self) -> None:
        self.open: str | None = None

    def inside(self) -> bool:
        return self.open is not None

    def see(self, line: str) -> None:
        """Note a complete line."""
        match = _FENCE.match(line)
        if match is None:
            return
        run = match.group("fence")
        if self.open is None:
            self.open = run
        elif run[0] == self.open[0] and len(run) >= len(self.open) and not line[match.end() :].strip():
            self.open = None


def _marker(line: str, patterns: tuple[re.Pattern[str], re.Pattern[str]]) -> _Marker | None:
    colon, alone = patterns
    for pattern in (colon, alone):
        match = pattern.match(line.rstrip("\r\n"))
        if match is not None:
            name = " ".join(match.group("name").lower().split())
            end = match.end() if pattern is colon else len(line)
            return _Marker(_ALL_NAMES[name], end)
    return None


def _lines(text: str) -> list[str]:
    """The lines of `text`, each with its "\\n" (only "\\n" ends a line, as in the stream reader)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def _split(
    text: str, patterns: tuple[re.Pattern[str], re.Pattern[str]], *, summary_to_end: bool = False
) -> list[tuple[str, str]]:
    """(section, content) for each marker of `patterns` outside code fences, in order; with
    `summary_to_end`, no marker ends a SUMMARY."""
    found: list[tuple[str, list[str]]] = []
    fences = _Fences()
    for line in _lines(text):
        closed = summary_to_end and bool(found) and found[-1][0] == "summary"
        marker = None if fences.inside() or closed else _marker(line, patterns)
        fences.see(line)
        if marker is not None:
            found.append((marker.section, [line[marker.content_start :]]))
        elif found:
            found[-1][1].append(line)
    return [(section, "".join(parts).strip()) for section, parts in found]


def parse_sections(text: str) -> Sections:
    """The sections of a planner's reply (see the module docstring)."""
    parts = _split(text, _CANONICAL) or _split(text, _FALLBACK, summary_to_end=True)
    found: dict[str, list[str]] = {}
    for section, content in parts:
        if content:
            found.setdefault(section, []).append(content)
    return Sections(**{section: "\n\n".join(contents) for section, contents in found.items()})


_DECORATION = re.compile(r"^[ \t]*(?:>[ \t]*)?(?:#{1,6}[ \t]*)?(?:\*\*|__|\*|_)?[ \t]*")
_AFTER_NAME = re.compile(r"^[ \t]*(?:\*{1,2}|_{1,2})?[ \t]*(?:[:：][ \t]*(?:\*{1,2}|_{1,2})?[ \t]*)?$")


def _undecided(partial: str) -> bool:
    """Whether an incomplete line could still become a canonical marker line."""
    decoration = _DECORATION.match(partial)
    rest = partial[decoration.end() if decoration else 0 :].lower()
    for name in MARKERS:
        if name.startswith(rest) or (rest.startswith(name) and _AFTER_NAME.match(rest[len(name) :])):
            return True
    return False


class SummaryStream:
    """A planner's reply read as it streams: `feed(text)` returns the SUMMARY text that has become
    certain, `finish()` the rest; together they are `parse_sections(reply).summary` (a summary
    under another name than SUMMARY comes whole from `finish()`). After `finish()`, `sections` is
    `parse_sections` of the whole reply."""

    def __init__(self) -> None:
        self.text = ""
        self.sections = Sections()
        self._line = 0  # offset of the line being received
        self._line_marked = False  # that line is a marker already (its content is coming in)
        self._fences = _Fences()
        self._section: str | None = None
        self._looked = 0  # offset up to which the current section's content has been looked at
        self._held = ""  # blank space, released only if more content follows it
        self._started = False  # the current summary section has released text
        self._released = False  # some summary text has been released

    @property
    def streaming(self) -> bool:
        """Whether summary text has been released (the reply is a final answer)."""
        return self._released

    def feed(self, text: str) -> str:
        """The summary text that `text` makes certain."""
        self.text += text
        out: list[str] = []
        while (newline := self.text.find("\n", self._line)) >= 0:
            self._complete(newline + 1, out)
        partial = self.text[self._line :]
        if not partial or self._fences.inside():
            if partial and self._section == "summary":
                self._release(len(self.text), out)
            return "".join(out)
        if not self._line_marked:
            match = _CANONICAL[0].match(partial)
            if match is not None and partial[match.end() :].strip(" \t*_"):  # the content start is settled
                self._enter(_ALL_NAMES[" ".join(match.group("name").lower().split())], self._line + match.end())
                self._line_marked = True
        if self._section == "summary" and (self._line_marked or not _undecided(partial)):
            self._release(len(self.text), out)
        return "".join(out)

    def finish(self) -> str:
        """The summary text still held back; sets `sections`."""
        out: list[str] = []
        if self._line < len(self.text):
            self._complete(len(self.text), out)
        self.sections = parse_sections(self.text)
        if not self._released:  # e.g. a summary under another name: it comes in one piece
            return self.sections.summary
        return "".join(out)

    def _complete(self, end: int, out: list[str]) -> None:
        line = self.text[self._line : end]
        marker = None if self._line_marked or self._fences.inside() else _marker(line, _CANONICAL)
        self._fences.see(line)
        if marker is not None:
            self._enter(marker.section, self._line + marker.content_start)
        if self._section == "summary":
            self._release(end, out)
        self._line, self._line_marked = end, False

    def _enter(self, section: str, content_start: int) -> None:
        self._section, self._looked = section, content_start
        self._held, self._started = "", False

    def _release(self, upto: int, out: list[str]) -> None:
        if upto <= self._looked:
            return
        piece, self._looked = self.text[self._looked : upto], upto
        if not self._started:
            piece = piece.lstrip()
            if not piece:
                return
            if self._released:
                out.append("\n\n")
            self._started = self._released = True
        body = piece.rstrip()
        if body:
            out.append(self._held + body)
            self._held = piece[len(body) :]
        else:
            self._held += piece
