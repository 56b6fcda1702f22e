"""Anthropic Messages API, through the official async SDK, streaming.

Retries (429, 408/409, 5xx, connection failures and timeouts, honouring Retry-After) are the SDK's
own: `max_retries` is passed through and it only retries before the first streamed byte. Every
vendor error becomes one of `almanac.llm.base`'s errors here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic

from almanac.llm.base import (
    ModelAuthError,
    ModelBadRequest,
    ModelContextTooLong,
    ModelError,
    ModelRateLimited,
    ModelTimeout,
    ModelUnavailable,
    says_context_too_long,
)
from almanac.llm.events import ModelEvent, StreamEnd, TextDelta, ToolCallReady, UsageReport
from almanac.llm.messages import Message, ModelRequest, TextBlock, ToolResultBlock, ToolUseBlock, Usage
from almanac.llm.providers.transport import TIMEOUTS, TRANSPORT_ERRORS
from almanac.llm.render import anthropic_tools
from almanac.llm.usage import ensure_usage


class AnthropicModel:
    provider = "anthropic"
    supports_tools = True
    supports_streaming = True

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
    ) -> None:
        self.name = model
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=max_retries
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        try:
            stream = await self._client.messages.create(**request_params(request, self.name), stream=True)
            async for event in ensure_usage(_events(stream), request):
                yield event
        except anthropic.APIError as exc:
            raise _translate(exc) from None
        except TIMEOUTS:
            raise ModelTimeout("Anthropic did not answer in time") from None
        except TRANSPORT_ERRORS:
            raise ModelUnavailable("the connection to Anthropic broke") from None


def request_params(request: ModelRequest, model: str) -> dict[str, Any]:
    """The body of a Messages API call for `request` (pure)."""
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": [_message(message) for message in request.messages],
    }
    if request.system:
        params["system"] = request.system
    if request.tools:
        params["tools"] = anthropic_tools(request.tools)
        params["tool_choice"] = {"type": "none"} if request.tool_choice == "none" else {"type": "auto"}
    return params


def _message(message: Message) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text:
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolUseBlock):
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)})
        elif isinstance(block, ToolResultBlock):
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": block.tool_use_id,
                    "content": block.content or "(empty result)",
                    "is_error": block.is_error,
                }
            )
    if not blocks:
        blocks.append({"type": "text", "text": "(empty)"})
    return {"role": message.role, "content": blocks}


async def _events(stream: AsyncIterator[Any]) -> AsyncIterator[ModelEvent]:
    """Our events from the SDK's raw stream events."""
    tools: dict[int, dict[str, Any]] = {}
    async for event in stream:
        kind = event.type
        if kind == "message_start":
            usage = event.message.usage
            yield UsageReport(Usage(usage.input_tokens or 0, 0))
        elif kind == "content_block_start" and event.content_block.type == "tool_use":
            block = event.content_block
            tools[event.index] = {"id": block.id, "name": block.name, "json": []}
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                yield TextDelta(delta.text)
            elif delta.type == "input_json_delta" and event.index in tools:
                tools[event.index]["json"].append(delta.partial_json)
        elif kind == "content_block_stop" and event.index in tools:
            yield ToolCallReady(tool_call(tools.pop(event.index)))
        elif kind == "message_delta":
            # output_tokens here is cumulative for the message; message_start reported the input.
            yield UsageReport(Usage(0, event.usage.output_tokens or 0))
            if event.delta.stop_reason:
                yield StreamEnd(event.delta.stop_reason)


def tool_call(partial: dict[str, Any]) -> ToolUseBlock:
    """A tool call from its streamed pieces; unparseable JSON is kept as a parse error."""
    raw = "".join(partial["json"]).strip()
    try:
        arguments = json.loads(raw) if raw else {}
        if not isinstance(arguments, dict):
            raise ValueError("arguments must be a JSON object")
    except ValueError as exc:
        return ToolUseBlock(partial["id"], partial["name"], {}, parse_error=str(exc))
    return ToolUseBlock(partial["id"], partial["name"], arguments)


def _translate(exc: anthropic.APIError) -> ModelError:
    if isinstance(exc, anthropic.APITimeoutError):
        return ModelTimeout("Anthropic did not answer in time")
    if isinstance(exc, anthropic.APIConnectionError):
        return ModelUnavailable("could not reach Anthropic")
    kind, detail = _error_detail(exc)
    status = getattr(exc, "status_code", None)
    if isinstance(exc, anthropic.RateLimitError) or kind == "rate_limit_error":
        return ModelRateLimited("Anthropic is rate-limiting requests; try again shortly")
    if isinstance(exc, anthropic.AuthenticationError | anthropic.PermissionDeniedError) or kind in (
        "authentication_error",
        "permission_error",
    ):
        return ModelAuthError("Anthropic rejected the configured API key")
    # An `error` event after a 200 (mid-stream) is a server-side failure whatever its status says.
    if status is None or status >= 500 or status < 400 or kind in ("overloaded_error", "api_error"):
        return ModelUnavailable(f"Anthropic failed ({detail})")
    if status == 413 or says_context_too_long(kind, detail):
        return ModelContextTooLong(f"the conversation is too long for the model ({detail})")
    return ModelBadRequest(f"Anthropic rejected the request ({status}: {detail})")


def _error_detail(exc: anthropic.APIError) -> tuple[str, str]:
    """The error's type and message from its JSON body, when there is one."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("type", "")), str(error.get("message", ""))[:300]
    return "", type(exc).__name__
