"""Turning an MCP `CallToolResult` into the text the model reads (pure).

Text blocks are joined; an embedded text resource is included with its URI; images, audio, binary
resources and resource links are described, never dumped; `structured_content` is shown as
pretty-printed JSON when the result has no text of its own (and always kept as `data`); `is_error`
makes the output an error result. Nothing is truncated: the chat layer stores results in full and
summarises long ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mcp import types

from almanac.tools.base import ToolOutput

EMPTY = "(the tool returned no content)"
# How GitHub (and servers like it) say a token was refused: go-github errors read
# "GET https://api.github.com/…: 401 Bad credentials []".
_REFUSED = re.compile(
    r":\s*40[13]\b|\b(bad credentials|requires authentication|must authenticate|resource not accessible by"
    r"|unauthori[sz]ed|forbidden|invalid (token|credentials)"
    r"|(token|credentials?) (is |was |has )?(been )?(invalid|expired|revoked))",
    re.IGNORECASE,
)
MAX_PROBLEM = 200


def to_output(result: types.CallToolResult) -> ToolOutput:
    """The tool output for `result` (see the module docstring)."""
    parts: list[str] = []
    has_text = False
    for block in result.content:
        if isinstance(block, types.TextContent):
            has_text = True
            parts.append(block.text)
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                has_text = True
                parts.append(f"[resource {resource.uri}]\n{resource.text}")
            else:
                parts.append(_binary("binary resource", resource.mime_type, resource.blob, uri=resource.uri))
        elif isinstance(block, types.ImageContent):
            parts.append(_binary("image", block.mime_type, block.data))
        elif isinstance(block, types.AudioContent):
            parts.append(_binary("audio", block.mime_type, block.data))
        elif isinstance(block, types.ResourceLink):
            parts.append(_link(block))
    structured = result.structured_content
    if structured is not None and not has_text:
        parts.append(json.dumps(structured, indent=2, ensure_ascii=False, default=str))
    content = "\n\n".join(part for part in parts if part) or EMPTY
    return ToolOutput(content=content, is_error=bool(result.is_error), data=_data(structured))


def _binary(kind: str, mime_type: str | None, base64_data: str, *, uri: str | None = None) -> str:
    size = len(base64_data) * 3 // 4 - base64_data[-2:].count("=")
    where = f" {uri}" if uri else ""
    return f"[{kind}{where}: {mime_type or 'unknown type'}, {size:,} bytes, not shown]"


def _link(block: types.ResourceLink) -> str:
    details = [block.mime_type or "", f"{block.size:,} bytes" if block.size else ""]
    extra = ", ".join(d for d in details if d)
    text = f"[resource link: {block.name} <{block.uri}>{f' ({extra})' if extra else ''}]"
    return f"{text} {block.description}" if block.description else text


def _data(structured: Any) -> Mapping[str, Any] | None:
    if structured is None:
        return None
    return structured if isinstance(structured, Mapping) else {"result": structured}


def authorization_problem(result: types.CallToolResult) -> str | None:
    """For an error result that says the server refused the call's credentials (401/403, bad,
    expired or revoked token), the line saying so (bounded); None for anything else, rate limits
    included."""
    if not result.is_error:
        return None
    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    if "rate limit" in text.lower():
        return None
    for line in text.splitlines():
        if _REFUSED.search(line):
            line = line.strip()
            return line if len(line) <= MAX_PROBLEM else line[: MAX_PROBLEM - 1] + "…"
    return None
