"""Gateway usage when the upstream reports none: counted with the table of `llm/tokens.py`.

An OpenAI-compatible server may stream without a usage chunk (llama-cpp-python ignores
`stream_options.include_usage`) or answer without `usage`; an Anthropic-compatible one may leave
usage out too. The gateway then counts the request's input and the answer's output itself, so a
request never looks free, and the usage row says the figures are estimates. Nothing here runs
when the upstream reported its usage.
"""

from __future__ import annotations

from typing import Any

import orjson

from almanac.gateway.accumulate import UsageTally
from almanac.gateway.llm_bridge import model_request
from almanac.llm.tokens import TokenCounter
from almanac.llm.usage import request_tokens

_COUNTER = TokenCounter()


def body_tokens(body: dict[str, Any]) -> int:
    """An estimate of the input tokens of an Anthropic Messages body (system, messages, tools)."""
    try:
        return request_tokens(model_request(body))
    except (KeyError, TypeError, ValueError, AttributeError):  # a shape the bridge cannot read: bytes then
        return max(1, len(orjson.dumps(body)) // 4)


def text_tokens(pieces: list[str]) -> int:
    """An estimate of the output tokens of what an answer produced."""
    return _COUNTER.count("".join(pieces)) if pieces else 0


def content_pieces(content: list[dict[str, Any]]) -> list[str]:
    """The produced text of a `Message`'s content blocks (text, thinking, tool name and input)."""
    pieces: list[str] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            pieces.append(str(block.get("text") or ""))
        elif kind == "thinking":
            pieces.append(str(block.get("thinking") or ""))
        elif kind == "tool_use":
            pieces += [str(block.get("name") or ""), orjson.dumps(block.get("input") or {}).decode()]
    return pieces


def fill_tally(tally: UsageTally, body: dict[str, Any]) -> bool:
    """Estimate whichever side of `tally` the upstream left at zero although there was something to
    count; True if anything was estimated."""
    estimated = False
    if tally.input_tokens == 0:
        tally.input_tokens, estimated = body_tokens(body), True
    if tally.output_tokens == 0 and any(tally.produced):
        tally.output_tokens, estimated = text_tokens(tally.produced), True
    return estimated
