"""Text that every database and every JSON encoder accepts (pure).

Two things in a Python `str` break a write or a later read: NUL (PostgreSQL cannot store it in
text or JSON) and a lone UTF-16 surrogate (no UTF-8 encoder accepts it: PostgreSQL refuses it, or
stores an escape that a later read cannot encode). Text from outside — model output, tool output,
names a client chose — may carry either. `clean_text` replaces each with U+FFFD (the replacement
character), so the rest of the text survives and what was lost stays visible; `clean_json` does the
same in every string (keys too) of a JSON-like value. Clean text comes back unchanged (the same
object), cheaply: the common case is one scan.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` with every NUL and lone surrogate replaced by U+FFFD (valid pairs cannot occur in a
    Python `str`: a surrogate in one is always alone)."""
    if text.isascii():
        return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
    return _UNSTORABLE.sub(REPLACEMENT, text)


def is_clean(text: str) -> bool:
    """Whether `text` holds no NUL and no lone surrogate."""
    return _UNSTORABLE.search(text) is None


def clean_json(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers…) with `clean_text` applied to every
    string in it, keys included; other values pass unchanged."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(key) if isinstance(key, str) else key: clean_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(item) for item in value]
    return value
