"""The Anthropic Messages request as the gateway receives it: parsed once, checked cheaply (pure).

The body stays the caller's JSON object (so an Anthropic upstream gets it unchanged but for the
model name); `MessagesRequest` holds it with the few fields the gateway decides on. Checks name the
field at fault, as Anthropic's own 400s do. Unknown fields (`temperature`, `thinking`,
`metadata`, `anthropic-beta` features…) are accepted and passed on or ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from almanac.gateway.accumulate import UsageNote
from almanac.gateway.errors import GatewayError


@dataclass(frozen=True)
class MessagesRequest:
    body: dict[str, Any]
    model: str
    stream: bool
    max_tokens: int
    headers: Mapping[str, str] = field(default_factory=dict)  # the caller's anthropic-version / -beta
    output_cap: int | None = None  # most output tokens the upstream is asked for (tier setting, model limit)
    # Set by the upstream that answers when the usage it reports is an estimate (copies share it).
    usage: UsageNote = field(default_factory=UsageNote, compare=False, repr=False)

    @property
    def tools(self) -> list[dict[str, Any]]:
        tools = self.body.get("tools")
        return tools if isinstance(tools, list) else []

    @property
    def tool_choice(self) -> str:
        choice = self.body.get("tool_choice")
        return str(choice.get("type", "auto")) if isinstance(choice, dict) else "auto"

    @property
    def tools_allowed(self) -> bool:
        """False for `tool_choice: {"type": "none"}`: no tool call may come out."""
        return self.tool_choice != "none"

    @property
    def structured(self) -> bool:
        """Whether the caller asked for structured output (`output_config.format`): only the model
        given the format can answer it."""
        config = self.body.get("output_config")
        return isinstance(config, dict) and isinstance(config.get("format"), dict)

    @property
    def thinking(self) -> bool:
        """Whether the caller takes thinking blocks (`thinking` enabled or adaptive)."""
        thinking = self.body.get("thinking")
        return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def parse_json(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object, or a 400 that says what is wrong."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise GatewayError(400, f"the request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise GatewayError(400, "the request body must be a JSON object")
    return body


FORWARDED_HEADERS = ("anthropic-version", "anthropic-beta")


def parse_messages_request(raw: bytes, headers: Mapping[str, str] | None = None) -> MessagesRequest:
    """A `POST /v1/messages` body, checked: model, max_tokens, messages and their roles. The
    caller's `anthropic-version` and `anthropic-beta` are kept for an Anthropic upstream."""
    body = parse_json(raw)
    model = checked_model(body.get("model"))
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise GatewayError(400, "max_tokens: field required (a positive integer)")
    check_messages(body)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise GatewayError(400, "stream: must be true or false")
    kept = {name: headers[name] for name in FORWARDED_HEADERS if headers and headers.get(name)}
    return MessagesRequest(body, model, stream, max_tokens, kept)


MAX_MODEL_CHARS = 200


def checked_model(model: Any) -> str:
    """A request's model name: present, at most MAX_MODEL_CHARS, printable (no NUL, no control or
    format characters, no lone surrogates) — it is recorded, labelled in metrics and sent upstream."""
    if not isinstance(model, str) or not model:
        raise GatewayError(400, "model: field required (a model name such as claude-sonnet-4-6)")
    if len(model) > MAX_MODEL_CHARS:
        raise GatewayError(400, f"model: at most {MAX_MODEL_CHARS} characters")
    if not model.isprintable() or model != model.strip():
        raise GatewayError(
            400,
            "model: must be printable text without control characters or surrounding spaces (e.g. claude-sonnet-4-6)",
        )
    return model


def check_messages(body: dict[str, Any]) -> None:
    """`messages` (and `system`, `tools`) have the shapes the converters rely on."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise GatewayError(400, "messages: field required (a non-empty list)")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
            raise GatewayError(400, f"messages.{index}.role: must be 'user' or 'assistant'")
        content = message.get("content")
        if not isinstance(content, str | list):
            raise GatewayError(400, f"messages.{index}.content: must be a string or a list of content blocks")
        if isinstance(content, list):
            for position, block in enumerate(content):
                if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                    raise GatewayError(400, f"messages.{index}.content.{position}: must be a block with a type")
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        raise GatewayError(400, "system: must be a string or a list of text blocks")
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise GatewayError(400, "tools: must be a list")
        for index, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                raise GatewayError(400, f"tools.{index}.name: field required")


def system_text(body: dict[str, Any]) -> str:
    """The system prompt as one string (text blocks joined)."""
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict) and b.get("type") == "text")
    return ""


def block_list(content: Any) -> list[dict[str, Any]]:
    """A message's content as blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []


def result_text(content: Any) -> str:
    """The text of a tool_result's content (a string, or blocks whose text is joined)."""
    if isinstance(content, str):
        return content
    parts = []
    for block in block_list(content):
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            parts.append("[image]")
        elif block.get("type") == "document":
            parts.append("[document]")
    return "\n".join(parts)
