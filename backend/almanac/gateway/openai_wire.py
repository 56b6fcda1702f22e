"""Anthropic Messages ⇄ OpenAI Chat Completions, request and non-streaming response (pure).

Request: `system` becomes a system message; text and images (base64 or URL) become content parts
(empty text blocks are left out); an assistant's `tool_use` blocks become `tool_calls`, its web
search blocks text; a user's `tool_result` blocks become `tool` messages placed right after the
assistant message that asked (images inside a result follow as a user message); `thinking` blocks
are dropped. `system` messages later in the conversation stay where they are, or, with
`WireOptions.fold_system` (for servers whose chat templates refuse them), are folded into the
neighbouring user turn. `tools` become function tools, `tool_choice` auto/any/tool/none becomes
auto/required/{function}/none (`disable_parallel_tool_use` → `parallel_tool_calls: false`),
`stop_sequences` becomes `stop` (unless the gateway applies them itself), `output_config.effort`
(or a `thinking` budget) becomes `reasoning_effort`, `output_config.format` a JSON-schema
`response_format`; `temperature` and `top_p` pass. Everything else is dropped: `metadata`,
`context_management`, `cache_control`, `top_k`, `service_tier`.

Response: text and tool calls become blocks (arguments repaired by `llm.parse` when a model wrote
broken JSON), `finish_reason` becomes `stop_reason`, and usage is reported the Anthropic way
(cached prompt tokens as `cache_read_input_tokens`).
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from almanac.gateway.openai_system import fold_system_messages
from almanac.gateway.wire import block_list, result_text, system_text
from almanac.llm.parse import loads_lenient

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}


@dataclass(frozen=True)
class WireOptions:
    """How a request is written for one upstream model (what it has been seen to refuse)."""

    max_tokens: int | None = None  # instead of the body's
    fold_system: bool = False  # later system messages folded into the user turn
    omit: frozenset[str] = field(default_factory=frozenset)  # parameters the model does not take
    send_stop: bool = True  # False: the gateway applies stop_sequences itself


def openai_request(
    body: dict[str, Any], model: str, *, stream: bool, options: WireOptions | None = None
) -> dict[str, Any]:
    """The Chat Completions body for an Anthropic Messages body."""
    options = options or WireOptions()
    messages: list[dict[str, Any]] = []
    system = system_text(body)
    if system:
        messages.append({"role": "system", "content": system})
    for message in body["messages"]:
        messages.extend(_messages(message))
    if options.fold_system:
        messages = fold_system_messages(messages)
    max_tokens = options.max_tokens if options.max_tokens is not None else body["max_tokens"]
    params: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens}
    for key in ("temperature", "top_p"):
        if key in body:
            params[key] = body[key]
    if body.get("stop_sequences") and options.send_stop:
        params["stop"] = body["stop_sequences"]
    params.update(_reasoning_and_format(body))
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
    for name in options.omit:
        params.pop(name, None)
    return params


def _reasoning_and_format(body: dict[str, Any]) -> dict[str, Any]:
    """`reasoning_effort` from `output_config.effort` (or a thinking budget), `response_format`
    from `output_config.format`."""
    params: dict[str, Any] = {}
    config = body["output_config"] if isinstance(body.get("output_config"), dict) else {}
    thinking = body["thinking"] if isinstance(body.get("thinking"), dict) else {}
    effort = EFFORTS.get(str(config.get("effort") or "").lower())
    if effort is None and thinking.get("type") == "enabled" and isinstance(thinking.get("budget_tokens"), int):
        budget = thinking["budget_tokens"]
        effort = "low" if budget <= 2048 else "medium" if budget <= 8192 else "high"
    if effort:
        params["reasoning_effort"] = effort
    output = config.get("format")
    if isinstance(output, dict) and output.get("type") == "json_schema" and isinstance(output.get("schema"), dict):
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": str(output.get("name") or "output"), "schema": output["schema"], "strict": True},
        }
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
            if str(block.get("text", "")).strip():  # an empty block (e.g. after tool results) is no message
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
    text = "".join(_assistant_text(b) for b in blocks)
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


def _assistant_text(block: dict[str, Any]) -> str:
    """The text an assistant block contributes: its text, or a web search it ran, written out."""
    kind = block["type"]
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "server_tool_use":
        return f"\n(searched the web: {orjson.dumps(block.get('input') or {}).decode()})\n"
    if kind == "web_search_tool_result":
        content = block.get("content")
        if not isinstance(content, list):
            return "\n(the web search failed)\n"
        found = [f"- {r.get('title', '')} <{r.get('url', '')}>" for r in content if isinstance(r, dict)]
        return "\n(web results:\n" + "\n".join(found) + ")\n"
    return ""


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


def reasoning_of(message: dict[str, Any]) -> str:
    """The reasoning a server reports beside the answer (`reasoning_content`: DeepSeek, older vLLM;
    `reasoning`: newer vLLM, OpenRouter)."""
    value = message.get("reasoning_content") or message.get("reasoning")
    return value if isinstance(value, str) else ""


def thinking_signature(thinking: str) -> str:
    """The `signature` a thinking block must carry on Anthropic's wire: here a digest of the
    thinking, so a block sent back unchanged is recognisable (the gateway drops it upstream)."""
    return "almanac." + base64.urlsafe_b64encode(hashlib.sha256(thinking.encode()).digest()).decode().rstrip("=")


def new_message_id() -> str:
    return f"msg_{uuid.uuid4().hex[:24]}"


def new_tool_id() -> str:
    return f"toolu_{uuid.uuid4().hex[:24]}"


def anthropic_message(
    completion: dict[str, Any], model: str, *, thinking: bool = False, tools: bool = True
) -> dict[str, Any]:
    """The Anthropic `Message` for a non-streaming Chat Completions response: reasoning as a
    thinking block when the caller enabled thinking; no tool calls with `tools=False`."""
    choices = completion.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    reasoning = reasoning_of(message)
    if reasoning and thinking:
        content.append({"type": "thinking", "thinking": reasoning, "signature": thinking_signature(reasoning)})
    if message.get("content"):
        content.append({"type": "text", "text": str(message["content"])})
    for call in message.get("tool_calls") or () if tools else ():
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
    if stop == "tool_use" and not has_calls:
        stop = "end_turn"
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
