"""Anthropic Messages wire values ⇄ Almanac's model types (`llm.messages`, `llm.events`), pure.

Used where the gateway talks to a `Model` rather than forwarding bytes: the built-in offline model,
and boost mode's planner, whose view of the conversation is text. Images and documents become
placeholders; thinking blocks are dropped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from almanac.gateway.openai_wire import new_message_id
from almanac.gateway.wire import block_list, result_text, system_text
from almanac.llm.events import ModelEvent, StreamEnd, TextDelta, ToolCallReady, UsageReport
from almanac.llm.messages import Block, Message, ModelRequest, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock

Event = dict[str, Any]


def model_request(body: dict[str, Any]) -> ModelRequest:
    """The model request an Anthropic Messages body describes."""
    messages: list[Message] = []
    for message in body["messages"]:
        role = "assistant" if message["role"] == "assistant" else "user"
        blocks: list[Block] = []
        for block in block_list(message["content"]):
            kind = block["type"]
            if kind == "text":
                if str(block.get("text", "")).strip():
                    blocks.append(TextBlock(str(block.get("text", ""))))
            elif kind == "tool_use":
                inputs = block.get("input")
                blocks.append(
                    ToolUseBlock(
                        str(block.get("id", "")), str(block.get("name", "")), inputs if isinstance(inputs, dict) else {}
                    )
                )
            elif kind == "tool_result":
                content = result_text(block.get("content", ""))
                blocks.append(ToolResultBlock(str(block.get("tool_use_id", "")), content, bool(block.get("is_error"))))
            elif kind in ("image", "document"):
                blocks.append(TextBlock(f"[{kind}]"))
        if blocks:
            messages.append(Message(role, tuple(blocks)))  # type: ignore[arg-type]
    tools = tuple(
        ToolSpec(str(t["name"]), str(t.get("description") or ""), t.get("input_schema") or {"type": "object"})
        for t in body.get("tools") or ()
        if isinstance(t, dict) and "name" in t
    )
    choice: dict[str, Any] = body["tool_choice"] if isinstance(body.get("tool_choice"), dict) else {}
    return ModelRequest(
        system=system_text(body),
        messages=tuple(messages),
        tools=tools,
        max_tokens=int(body.get("max_tokens") or 4096),
        tool_choice="none" if choice.get("type") == "none" else "auto",
    )


def message_start(model: str, input_tokens: int = 0) -> Event:
    return {
        "type": "message_start",
        "message": {
            "id": new_message_id(),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 0},
        },
    }


async def anthropic_events(
    events: AsyncIterator[ModelEvent], model: str, *, tools: bool = True
) -> AsyncIterator[Event]:
    """A model's stream as a complete Anthropic event stream (without tool calls if not `tools`)."""
    yield message_start(model)
    index = 0
    text_open = False
    usage = {"input_tokens": 0, "output_tokens": 0}
    stop_reason = "end_turn"
    calls = 0
    async for event in events:
        if isinstance(event, TextDelta) and event.text:
            if not text_open:
                yield {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
                text_open = True
            yield {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": event.text}}
        elif isinstance(event, ToolCallReady) and tools:
            if text_open:
                yield {"type": "content_block_stop", "index": index}
                index, text_open = index + 1, False
            for item in tool_use_events(index, event.call.id, event.call.name, dict(event.call.input)):
                yield item
            index, calls = index + 1, calls + 1
        elif isinstance(event, UsageReport):
            usage["input_tokens"] += event.usage.input_tokens
            usage["output_tokens"] += event.usage.output_tokens
        elif isinstance(event, StreamEnd):
            stop_reason = "end_turn" if event.stop_reason == "tool_use" else event.stop_reason
    if text_open:
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use" if calls else stop_reason, "stop_sequence": None},
        "usage": usage,
    }
    yield {"type": "message_stop"}


def tool_use_events(index: int, call_id: str, name: str, arguments: dict[str, Any]) -> list[Event]:
    """A complete tool_use block as start, one input_json_delta, stop."""
    return [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": orjson.dumps(arguments).decode()},
        },
        {"type": "content_block_stop", "index": index},
    ]


def text_events(model: str, text: str, *, input_tokens: int = 0, output_tokens: int = 0) -> list[Event]:
    """A complete stream answering with one text block."""
    return [
        message_start(model, input_tokens),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]
