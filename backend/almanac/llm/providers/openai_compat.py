"""Any OpenAI-compatible Chat Completions server (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter…),
through the official async SDK, streaming.

Retries with backoff (honouring Retry-After) are the SDK's. Usage is asked for
(`stream_options.include_usage`); a server that ignores it (llama-cpp-python) gets its tokens
estimated (`llm/usage.py`). Tool-call arguments arrive as string
fragments per call index and are parsed when the stream ends; invalid JSON becomes a parse error
the turn loop reports back to the model.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai

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
from almanac.llm.render import openai_tools
from almanac.llm.usage import ensure_usage

_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens"}


class OpenAICompatModel:
    provider = "openai"
    supports_tools = True
    supports_streaming = True

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
    ) -> None:
        self.name = model
        # Local servers (Ollama, llama.cpp) need no key, but the SDK insists on one.
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "not-needed", base_url=base_url, timeout=timeout_s, max_retries=max_retries
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        try:
            stream = await self._client.chat.completions.create(**request_params(request, self.name), stream=True)
            async for event in ensure_usage(_events(stream), request):
                yield event
        except openai.APIError as exc:
            raise _translate(exc) from None
        except TIMEOUTS:
            raise ModelTimeout("the model server did not answer in time") from None
        except TRANSPORT_ERRORS:
            raise ModelUnavailable("the connection to the model server broke") from None


def request_params(request: ModelRequest, model: str) -> dict[str, Any]:
    """The body of a Chat Completions call for `request` (pure)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
    for message in request.messages:
        messages.extend(_messages(message))
    params: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        params["tools"] = openai_tools(request.tools)
        params["tool_choice"] = request.tool_choice
    return params


def _messages(message: Message) -> list[dict[str, Any]]:
    """One of our messages as Chat Completions messages (tool results are messages of their own)."""
    text = "".join(block.text for block in message.content if isinstance(block, TextBlock))
    if message.role == "assistant":
        calls = [block for block in message.content if isinstance(block, ToolUseBlock)]
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(dict(call.input))},
                }
                for call in calls
            ]
        return [out]
    results = [
        {"role": "tool", "tool_call_id": block.tool_use_id, "content": block.content}
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]
    return results + ([{"role": "user", "content": text}] if text or not results else [])


async def _events(stream: AsyncIterator[Any]) -> AsyncIterator[ModelEvent]:
    calls: dict[int, dict[str, Any]] = {}
    finish = "end_turn"
    async for chunk in stream:
        if getattr(chunk, "usage", None):
            yield UsageReport(Usage(chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0))
        for choice in chunk.choices or ():
            delta = choice.delta
            if delta is not None and delta.content:
                yield TextDelta(delta.content)
            for fragment in (delta.tool_calls or ()) if delta is not None else ():
                entry = calls.setdefault(fragment.index, {"id": None, "name": "", "arguments": []})
                entry["id"] = fragment.id or entry["id"]
                if fragment.function is not None:
                    entry["name"] += fragment.function.name or ""
                    entry["arguments"].append(fragment.function.arguments or "")
            if choice.finish_reason:
                finish = _STOP_REASONS.get(choice.finish_reason, choice.finish_reason)
    for index in sorted(calls):
        yield ToolCallReady(tool_call(calls[index], index))
    yield StreamEnd("tool_use" if calls else finish)


def tool_call(entry: dict[str, Any], index: int) -> ToolUseBlock:
    """A complete call from its fragments; invalid JSON arguments are kept as a parse error."""
    call_id = entry["id"] or f"call_{index}"
    raw = "".join(entry["arguments"]).strip()
    try:
        arguments = json.loads(raw) if raw else {}
        if not isinstance(arguments, dict):
            raise ValueError("arguments must be a JSON object")
    except ValueError as exc:
        return ToolUseBlock(call_id, entry["name"], {}, parse_error=str(exc))
    return ToolUseBlock(call_id, entry["name"], arguments)


def _translate(exc: openai.APIError) -> ModelError:
    if isinstance(exc, openai.APITimeoutError):
        return ModelTimeout("the model server did not answer in time")
    if isinstance(exc, openai.APIConnectionError):
        return ModelUnavailable("could not reach the model server")
    if isinstance(exc, openai.RateLimitError):
        return ModelRateLimited("the model server is rate-limiting requests; try again shortly")
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return ModelAuthError("the model server rejected the configured API key")
    status = getattr(exc, "status_code", None)
    detail = _error_message(exc)
    if status is None or status >= 500:
        return ModelUnavailable(f"the model server failed ({detail})")
    if says_context_too_long(str(getattr(exc, "code", "") or ""), detail):
        return ModelContextTooLong(f"the conversation is too long for the model ({detail})")
    return ModelBadRequest(f"the model server rejected the request ({status}: {detail})")


def _error_message(exc: openai.APIError) -> str:
    return str(getattr(exc, "message", "") or type(exc).__name__)[:300]
