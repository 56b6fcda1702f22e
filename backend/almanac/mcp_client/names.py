"""Registry names for MCP tools (pure): `<server>__<tool>`, valid for every vendor's name rule
(`^[a-zA-Z0-9_-]{1,64}$`), stable across restarts and unique within the registry."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container

SEPARATOR = "__"
MAX_LENGTH = 64
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


def sanitise(text: str) -> str:
    """`text` with every character outside `[a-zA-Z0-9_-]` replaced by `_` (never empty)."""
    return _INVALID.sub("_", text) or "_"


def tool_name(server: str, tool: str, *, taken: Container[str] = ()) -> str:
    """The registry name of `tool` on `server`: `server__tool` when that is valid and free, else a
    shortened form ending in a hash of the original names (the same input gives the same name)."""
    name = f"{sanitise(server)}{SEPARATOR}{sanitise(tool)}"
    if len(name) <= MAX_LENGTH and name not in taken:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_LENGTH - len(digest) - 1]}_{digest}"
