"""Folding an Anthropic event stream into the `Message` it describes, and tallying its usage (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from almanac.llm.parse import loads_lenient

Event = dict[str, Any]


@dataclass
class UsageNote:
    """What an upstream learned while answering one request: whether the usage it put in its
    answer was estimated (the server reported none). Shared by a request and its copies."""

    estimated: bool = False

    def note_estimate(self) -> None:
        self.estimated = True


@dataclass
class UsageTally:
    """Usage as a stream reports it: input tokens at `message_start` (or later), output tokens
    cumulative in `message_delta`. Also notes whether a tool_use block started, and keeps what the
    answer produced (text, tool input, thinking) in case the usage must be estimated."""

    input_tokens: int = 0
    output_tokens: int = 0
    tool_use: bool = False
    stop_reason: str | None = None
    produced: list[str] = field(default_factory=list)

    def add(self, other: UsageTally) -> None:
        """Add another stream's usage and output (boost: one request, several upstream calls)."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.produced += other.produced

    def observe(self, event: Event) -> None:
        kind = event["type"]
        if kind == "content_block_delta":
            delta = event["delta"]
            piece = delta.get("text") or delta.get("partial_json") or delta.get("thinking")
            if piece:
                self.produced.append(piece)
        elif kind == "message_start":
            usage = event["message"].get("usage") or {}
            self.input_tokens = int(usage.get("input_tokens") or 0) + int(usage.get("cache_read_input_tokens") or 0)
            self.output_tokens = int(usage.get("output_tokens") or 0)
        elif kind == "message_delta":
            usage = event.get("usage") or {}
            if "output_tokens" in usage:
                self.output_tokens = int(usage["output_tokens"] or 0)
            if usage.get("input_tokens"):
                self.input_tokens = int(usage["input_tokens"]) + int(usage.get("cache_read_input_tokens") or 0)
            self.stop_reason = (event.get("delta") or {}).get("stop_reason") or self.stop_reason
        elif kind == "content_block_start" and event["content_block"].get("type") == "tool_use":
            self.tool_use = True
            self.produced.append(str(event["content_block"].get("name") or ""))


@dataclass
class _Block:
    data: dict[str, Any]
    parts: list[str] = field(default_factory=list)


def accumulate(events: Iterable[Event]) -> dict[str, Any]:
    """The final `Message` of a complete stream."""
    message: dict[str, Any] = {}
    blocks: dict[int, _Block] = {}
    for event in events:
        kind = event["type"]
        if kind == "message_start":
            message = dict(event["message"])
            message["usage"] = dict(message.get("usage") or {})
        elif kind == "content_block_start":
            blocks[event["index"]] = _Block(dict(event["content_block"]))
        elif kind == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            if delta["type"] == "text_delta":
                block.data["text"] = block.data.get("text", "") + delta["text"]
            elif delta["type"] == "input_json_delta":
                block.parts.append(delta["partial_json"])
            elif delta["type"] == "thinking_delta":
                block.data["thinking"] = block.data.get("thinking", "") + delta["thinking"]
            elif delta["type"] == "signature_delta":
                block.data["signature"] = delta["signature"]
        elif kind == "message_delta":
            message["stop_reason"] = event["delta"].get("stop_reason")
            message["stop_sequence"] = event["delta"].get("stop_sequence")
            message["usage"].update(event.get("usage") or {})
    content = []
    for index in sorted(blocks):
        block = blocks[index]
        if block.data.get("type") in ("tool_use", "server_tool_use"):
            raw = "".join(block.parts)
            block.data["input"] = _object(raw) if raw else block.data.get("input") or {}
        content.append(block.data)
    message["content"] = content
    return message


def _object(raw: str) -> dict[str, Any]:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            value = loads_lenient(raw)
        except ValueError:
            return {"_raw_arguments": raw}
    return value if isinstance(value, dict) else {"value": value}
