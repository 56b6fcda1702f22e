"""Small text helpers shared by the built-in tools (pure)."""

from __future__ import annotations

import re


def fenced(text: str, language: str = "") -> str:
    """`text` in a Markdown code fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip(chr(10))}\n{fence}"
