"""Anthropic Messages ⇄ OpenAI Chat Completions, request and non-streaming response (pure).

Request: `system` becomes a system message; text and images (base64 or URL) become content parts;
an assistant's `tool_use` blocks become `tool_calls`; a user's `tool_result` blocks become `tool`
messages placed right after the assistant message that asked (images inside a result follow as a
user message); `thinking` blocks are dropped. `tools` become function tools, `tool_choice`
auto/any/tool/none becomes auto/required/{function}/none (`disable_parallel_tool_use` →
`parallel_tool_calls: false`), `stop_sequences` becomes `stop`; `temperature` and `top_p` pass.

Response: text and tool calls become blocks (arguments repaired by `llm.parse` when a model wrote
broken JSON), `finish_reason` becomes `stop_reason`, and usage is reported the Anthropic way
(cached prompt tokens as `cache_read_input_tokens`).
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from almanac.gateway.wire import block_list, result_text, system_text
from almanac.llm.parse import loads_lenient

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def openai_request(body: dict[str, Any], model: str, *, stream: bool) -> dict[str, Any]:
    """The Chat Completions body for an Anthropic Messages body."""
    messages: list[dict[str, Any]] = []
    system = system_text(body)
    if system:
        messages.append({"role": "system", "content": system})
    for message in body["messages"]:
        messages.extend(_messages(message))
    params: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": body["max_tokens"]}
    for key in ("temperature", "top_p"):
        if key in body:
            params[key] = body[key]
    if body.get("stop_sequences"):
        params["stop"] = body["stop_sequences"]
    tools = [_tool(tool) for tool in body.get("tools") or () if isinstance(tool, dict) and "input_schema" in tool]
    choice: dict[str, Any] = body["tool_choice"] if isinstance(body.get("tool_choice"), dict) else {}
    if tools:
        params["tools"] = tools
        kind = choice.get("type", "auto")
        if kind == "any":
            params["tool_choice"] = "required"
        elif kind == "tool" and choice.get("name"):
            params["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
        elif kind == "none":
            params["tool_choice"] = "none"
        if choice.get("disable_parallel_tool_use"):
            params["parallel_tool_calls"] = False
    if stream:
        params["stream"] = True
        params["stream_options"] = {"include_usage": True}
    return params


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool["name"], "parameters": tool.get("input_schema") or {"type": "object"}}
    if tool.get("description"):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _messages(message: dict[str, Any]) -> list[dict[str, Any]]:
    role = message["role"]
    content = message["content"]
    if isinstance(content, str):
        return [{"role": "system" if role == "system" else role, "content": content}]
    blocks = block_list(content)
    if role == "assistant":
        return [_assistant(blocks)]
    if role == "system":
        return [{"role": "system", "content": result_text(blocks)}]
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    result_images: list[dict[str, Any]] = []
    for block in blocks:
        kind = block["type"]
        if kind == "tool_result":
            text = result_text(block.get("content", ""))
            if block.get("is_error"):
                text = f"[tool error] {text}"
            out.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id", "")), "content": text})
            result_images += [_image(b) for b in block_list(block.get("content")) if b.get("type") == "image"]
        elif kind == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind == "image":
            parts.append(_image(block))
        elif kind == "document":
            parts.append({"type": "text", "text": _document_text(block)})
    if result_images:
        out.append(
            {"role": "user", "content": [{"type": "text", "text": "(images from the tool results)"}, *result_images]}
        )
    if parts:
        if all(part["type"] == "text" for part in parts):
            out.append({"role": "user", "content": "\n".join(part["text"] for part in parts)})
        else:
            out.append({"role": "user", "content": parts})
    return out or [{"role": "user", "content": ""}]


def _assistant(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    text = "".join(str(b.get("text", "")) for b in blocks if b["type"] == "text")
    calls = [
        {
            "id": str(b.get("id") or f"call_{uuid.uuid4().hex[:24]}"),
            "type": "function",
            "function": {"name": str(b.get("name", "")), "arguments": orjson.dumps(b.get("input") or {}).decode()},
        }
        for b in blocks
        if b["type"] == "tool_use"
    ]
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    return out


def _image(block: dict[str, Any]) -> dict[str, Any]:
    source = block.get("source") or {}
    if source.get("type") == "url":
        url = str(source.get("url", ""))
    else:
        url = f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    return {"type": "image_url", "image_url": {"url": url}}


def _document_text(block: dict[str, Any]) -> str:
    source = block.get("source") or {}
    if source.get("type") == "text":
        return str(source.get("data", ""))
    return f"[document: {block.get('title') or source.get('media_type', 'attachment')}]"


def anthropic_usage(usage: dict[str, Any] | None) -> dict[str, int]:
    """Anthropic usage from OpenAI usage: cached prompt tokens are reported apart."""
    usage = usage or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    cached = int(((usage.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0)
    result = {"input_tokens": prompt - cached, "output_tokens": int(usage.get("completion_tokens") or 0)}
    if cached:
        result["cache_read_input_tokens"] = cached
    return result


def tool_input(arguments: str) -> dict[str, Any]:
    """A tool call's arguments as an object, repaired if the model wrote broken JSON; what cannot
    be repaired is kept under `_raw_arguments` rather than lost."""
    if not arguments.strip():
        return {}
    try:
        value = loads_lenient(arguments)
    except ValueError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"value": value}


def new_message_id() -> str:
    return f"msg_{uuid.uuid4().hex[:24]}"


def new_tool_id() -> str:
    return f"toolu_{uuid.uuid4().hex[:24]}"


def anthropic_message(completion: dict[str, Any], model: str) -> dict[str, Any]:
    """The Anthropic `Message` for a non-streaming Chat Completions response."""
    choices = completion.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    if message.get("content"):
        content.append({"type": "text", "text": str(message["content"])})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        content.append(
            {
                "type": "tool_use",
                "id": str(call.get("id") or new_tool_id()),
                "name": str(function.get("name", "")),
                "input": tool_input(str(function.get("arguments") or "")),
            }
        )
    has_calls = any(block["type"] == "tool_use" for block in content)
    stop = "tool_use" if has_calls else STOP_REASONS.get(str(choice.get("finish_reason")), "end_turn")
    return {
        "id": new_message_id(),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": anthropic_usage(completion.get("usage")),
    }
