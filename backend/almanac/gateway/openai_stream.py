"""OpenAI Chat Completions stream chunks → Anthropic Messages stream events (pure state machine).

`OpenAIStreamConverter.feed(chunk)` returns the Anthropic events a chunk means: text deltas open a
text block, the first fragment of a tool call opens a `tool_use` block as soon as the call's name
is known (the earliest sign of tool use), and each call's argument fragments are collected and
sent as `input_json_delta` when the call is complete — repaired first if the model wrote broken
JSON, so a client never receives arguments it cannot parse. Reasoning that DeepSeek- and
vLLM-style servers stream apart (`reasoning_content`, `reasoning`) becomes a `thinking` block with
a signature, for a caller that enabled thinking (else it is dropped). With `tools=False`
(`tool_choice: none`) no tool call comes out, even if the model writes one. `finish()` closes the
open block and sends `message_delta` (stop reason — `tool_use` whenever a call came out, whatever
the server's finish reason — and usage) and `message_stop`. A server that sent no usage chunk
(`reported` stays False) gets its usage estimated by the caller (`estimate`) before `finish()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from almanac.gateway.openai_wire import (
    STOP_REASONS,
    anthropic_usage,
    new_message_id,
    new_tool_id,
    reasoning_of,
    thinking_signature,
    tool_input,
)

Event = dict[str, Any]


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    index: int | None = None  # the Anthropic block index once started


class OpenAIStreamConverter:
    def __init__(self, model: str, *, input_tokens: int = 0, thinking: bool = False, tools: bool = True) -> None:
        self.model = model
        self.thinking = thinking
        self.tools = tools
        self._thought: list[str] | None = None  # the open block's reasoning, when it is a thinking block
        self.usage: dict[str, int] = {"input_tokens": input_tokens, "output_tokens": 0}
        self.stop_reason = "end_turn"
        self.tool_calls = 0
        self._next = 0
        self._open: int | None = None  # index of the open block
        self._open_call: _Call | None = None  # the open block's call, when it is a tool_use block
        self._calls: dict[int, _Call] = {}
        self._finish: str | None = None
        self.reported = False  # a chunk carried usage
        self.produced: list[str] = []  # text and tool-call pieces, for an estimate when none is reported

    def start(self) -> list[Event]:
        """The `message_start` event."""
        message: dict[str, Any] = {
            "id": new_message_id(),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": self.usage["input_tokens"], "output_tokens": 0},
        }
        return [{"type": "message_start", "message": message}]

    def feed(self, chunk: dict[str, Any]) -> list[Event]:
        """The events one parsed chunk means."""
        events: list[Event] = []
        if chunk.get("usage"):
            self.usage.update(anthropic_usage(chunk["usage"]))
            self.reported = True
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            reasoning = reasoning_of(delta)
            if reasoning:
                self.produced.append(reasoning)  # output tokens, shown or not
            if reasoning and self.thinking:
                if self._open is None or self._thought is None:
                    self._close(events)
                    events.append(_start(self._next, {"type": "thinking", "thinking": "", "signature": ""}))
                    self._open, self._next, self._thought = self._next, self._next + 1, []
                self._thought.append(reasoning)
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": self._open,
                        "delta": {"type": "thinking_delta", "thinking": reasoning},
                    }
                )
            text = delta.get("content")
            if text:
                self.produced.append(text)
                if self._open is None or self._open_call is not None or self._thought is not None:
                    self._close(events)
                    events.append(_start(self._next, {"type": "text", "text": ""}))
                    self._open, self._next = self._next, self._next + 1
                events.append(
                    {"type": "content_block_delta", "index": self._open, "delta": {"type": "text_delta", "text": text}}
                )
            for fragment in delta.get("tool_calls") or () if self.tools else ():
                self._fragment(fragment, events)
            if choice.get("finish_reason"):
                self._finish = choice["finish_reason"]
        return events

    def _fragment(self, fragment: dict[str, Any], events: list[Event]) -> None:
        call = self._calls.setdefault(int(fragment.get("index") or 0), _Call())
        function = fragment.get("function") or {}
        if call.index is None:
            call.id = call.id or str(fragment.get("id") or "")
            call.name += str(function.get("name") or "")
        if function.get("arguments"):
            call.arguments.append(str(function["arguments"]))
            self.produced.append(call.arguments[-1])
        if call.index is None and call.name:
            self._begin(call, events)

    def _begin(self, call: _Call, events: list[Event]) -> None:
        self._close(events)
        call.index, self._next = self._next, self._next + 1
        call.id = call.id or new_tool_id()
        self.tool_calls += 1
        self.produced.append(call.name)
        events.append(_start(call.index, {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}))
        self._open, self._open_call = call.index, call

    def _close(self, events: list[Event]) -> None:
        if self._open is None:
            return
        call = self._open_call
        if self._thought is not None:
            signature = thinking_signature("".join(self._thought))
            events.append(
                {
                    "type": "content_block_delta",
                    "index": self._open,
                    "delta": {"type": "signature_delta", "signature": signature},
                }
            )
            self._thought = None
        if call is not None:
            arguments = orjson.dumps(tool_input("".join(call.arguments))).decode()
            events.append(
                {
                    "type": "content_block_delta",
                    "index": self._open,
                    "delta": {"type": "input_json_delta", "partial_json": arguments},
                }
            )
        events.append({"type": "content_block_stop", "index": self._open})
        self._open, self._open_call = None, None

    def estimate(self, *, input_tokens: int, output_tokens: int) -> None:
        """Usage to report when the server sent none (counted by the caller)."""
        self.usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}

    def finish(self) -> list[Event]:
        """Close the open block; `message_delta` and `message_stop`."""
        events: list[Event] = []
        for call in self._calls.values():
            if call.index is None:
                call.name = call.name or "unnamed_tool_call"
                self._begin(call, events)
        self._close(events)
        if self.tool_calls:
            self.stop_reason = "tool_use"
        elif self._finish:
            self.stop_reason = STOP_REASONS.get(self._finish, "end_turn")
            if self.stop_reason == "tool_use":  # the calls were not let out (tool_choice: none)
                self.stop_reason = "end_turn"
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
                "usage": dict(self.usage),
            }
        )
        events.append({"type": "message_stop"})
        return events


def _start(index: int, block: dict[str, Any]) -> Event:
    return {"type": "content_block_start", "index": index, "content_block": block}
