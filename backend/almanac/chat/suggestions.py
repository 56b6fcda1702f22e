"""The questions a new chat suggests: ones the configured model answers well.

A real model answers open questions. The built-in offline model answers documentation questions
("how do I …") by quoting the local index, which holds the Python standard library by default
(DOCS_INCLUDE_STDLIB) — so its suggestions are about the standard library, and each is checked to
bring back the right module's documentation (tests/integration/test_welcome_suggestions.py) — and
its guided tour, which it always gives.
"""

from __future__ import annotations

MODEL_SUGGESTIONS = (
    "How do I cancel an asyncio task and wait for it to finish?",
    "Give me a detailed tour of how Almanac works",
    "What is the difference between useEffect and useLayoutEffect in React?",
)
OFFLINE_SUGGESTIONS = (
    "How do I cancel an asyncio task and wait for it to finish?",
    "How do I parse command-line arguments with argparse?",
    "Give me a detailed tour of how Almanac works",
)


def suggestions_for(*, offline: bool) -> list[str]:
    """What a new chat suggests asking this server's chat model."""
    return list(OFFLINE_SUGGESTIONS if offline else MODEL_SUGGESTIONS)
