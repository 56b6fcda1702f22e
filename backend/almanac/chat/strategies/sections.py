"""The sections of a boost planner's reply: SUMMARY, or ANALYSIS and GUIDANCE (pure).

Headings are matched flexibly: any case; plain (`GUIDANCE:`), bold (`**Guidance:**`,
`**GUIDANCE**:`), or Markdown headings (`## Guidance`, with or without a colon); and under other
names a planner may choose — `Instructions:`, `Steps:`, `Plan:`, `Next steps:` for GUIDANCE,
`Reasoning:`, `Thoughts:` for ANALYSIS, `Final answer:` for SUMMARY. A section runs
to the next recognised heading; one that is empty counts as missing. SUMMARY wins: a reply that
has it is a final answer whatever else it contains.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

SYNONYMS: dict[str, tuple[str, ...]] = {
    "summary": ("summary", "final answer", "final response", "direct answer"),
    "analysis": ("analysis", "reasoning", "thoughts", "thinking", "context analysis"),
    "guidance": (
        "guidance",
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
_NAME_TO_SECTION = {name: section for section, names in SYNONYMS.items() for name in names}
_NAMES = "|".join(sorted((re.escape(name) for name in _NAME_TO_SECTION), key=len, reverse=True))
_EMPH = r"(?:\*\*|__|\*|_)?"
# `NAME:` (colon required), optionally after `#`s or `>` and inside bold; the rest of the line is content.
_COLON = re.compile(
    rf"^[ \t]*(?:>[ \t]*)?(?:#{{1,6}}[ \t]*)?{_EMPH}[ \t]*(?P<name>{_NAMES})[ \t]*{_EMPH}[ \t]*[:：]"
    rf"[ \t]*{_EMPH}[ \t]*(?P<rest>.*)$",
    re.I | re.M,
)
# `## NAME` or `**NAME**` alone on its line (no colon needed).
_ALONE = re.compile(
    rf"^[ \t]*(?:#{{1,6}}[ \t]*{_EMPH}|\*\*|__)[ \t]*(?P<name>{_NAMES})[ \t]*{_EMPH}[ \t]*$", re.I | re.M
)

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


def parse_sections(text: str) -> Sections:
    """The sections of a planner's reply (each stripped; missing ones empty)."""
    headings = []
    for pattern in (_COLON, _ALONE):
        for match in pattern.finditer(text):
            name = " ".join(match.group("name").lower().split())
            rest = match.groupdict().get("rest") or ""
            headings.append((match.start(), match.end() - len(rest), _NAME_TO_SECTION[name]))
    headings.sort()
    found: dict[str, list[str]] = {}
    for position, (_, content_start, section) in enumerate(headings):
        end = headings[position + 1][0] if position + 1 < len(headings) else len(text)
        content = _clean(text[content_start:end])
        if content:
            found.setdefault(section, []).append(content)
    return Sections(**{section: "\n\n".join(parts) for section, parts in found.items()})


def _clean(content: str) -> str:
    content = content.strip()
    for mark in ("**", "__"):
        if content.startswith(mark) and content.count(mark) % 2 == 1:
            content = content[len(mark) :].strip()
    return content.strip().strip('"').strip()
