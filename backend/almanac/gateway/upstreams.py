"""Where the gateway sends a request: an OpenAI-compatible server (converted both ways), the
Anthropic API (passed through, model name aside), or a local `Model` (the offline model).

Every upstream answers an Anthropic Messages request with an Anthropic event stream (`stream`) or a
`Message` (`create`), and counts tokens. Failures before the first event are `GatewayError`s with
the status the caller should get; failures after it end the stream with an `error` event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any, Protocol

import orjson

from almanac.gateway.accumulate import accumulate
from almanac.gateway.errors import GatewayError
from almanac.gateway.estimate import body_tokens, content_pieces, text_tokens
from almanac.gateway.http import HttpPool, raise_for_status, sse_blocks, stream_error
from almanac.gateway.llm_bridge import anthropic_events, model_request
from almanac.gateway.openai_stream import OpenAIStreamConverter
from almanac.gateway.openai_wire import anthropic_message, openai_request
from almanac.gateway.wire import MessagesRequest
from almanac.llm.base import (
    Model,
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelRateLimited,
    ModelTimeout,
    ModelUnavailable,
)
from almanac.llm.events import ModelEvent, UsageReport
from almanac.llm.text_tools import refuses_tools

Event = dict[str, Any]
ANTHROPIC_VERSION = "2023-06-01"


class Upstream(Protocol):
    kind: str

    async def create(self, request: MessagesRequest, model: str) -> dict[str, Any]:
        """The complete `Message` for `request`, answered by `model`."""
        ...

    def stream(self, request: MessagesRequest, model: str) -> AsyncIterator[list[Event]]:
        """The Anthropic event stream for `request` (message_start … message_stop), in batches
        (the events one read from the upstream produced)."""
        ...

    async def count_tokens(self, body: dict[str, Any], model: str) -> int:
        """Input tokens of a count_tokens body."""
        ...


def estimate_tokens(body: dict[str, Any]) -> int:
    """About how many tokens a request's system, messages and tools take (≈ 3.5 bytes of JSON
    per token); used where the upstream cannot count."""
    size = sum(len(orjson.dumps(body.get(key))) for key in ("system", "messages", "tools") if body.get(key))
    return max(1, int(size / 3.5))


class OpenAIUpstream:
    kind = "openai"

    def __init__(
        self, http: HttpPool, *, base_url: str, api_key: str | None, timeout_s: float, max_tokens: int | None = None
    ) -> None:
        self._http = http
        self._max_tokens = max_tokens  # many servers refuse Claude Code's 32,000; None: no cap
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout_s

    async def create(self, request: MessagesRequest, model: str) -> dict[str, Any]:
        body = self._capped(openai_request(request.body, model, stream=False))
        async with self._http.post(self._url, body, self._headers, timeout_s=self._timeout) as response:
            await raise_for_status(response)
            completion = orjson.loads(await response.read())
        message = anthropic_message(completion, request.model)
        if not (isinstance(completion, dict) and completion.get("usage")):  # a server that reports none
            message["usage"] = {
                "input_tokens": body_tokens(request.body),
                "output_tokens": text_tokens(content_pieces(message["content"])),
            }
            request.usage.estimated = True
        return message

    async def stream(self, request: MessagesRequest, model: str) -> AsyncIterator[list[Event]]:
        body = self._capped(openai_request(request.body, model, stream=True))
        async with self._http.post(self._url, body, self._headers, timeout_s=self._timeout) as response:
            await raise_for_status(response)
            converter = OpenAIStreamConverter(request.model, input_tokens=estimate_tokens(request.body))
            events = converter.start()
            done = False
            async for block in sse_blocks(response):
                for data in block:
                    if data == b"[DONE]":
                        done = True
                        break
                    chunk = orjson.loads(data)
                    if isinstance(chunk, dict) and chunk.get("error"):
                        raise stream_error({"error": {"type": "api_error", "message": str(chunk["error"])}})
                    events += converter.feed(chunk)
                if events:
                    yield events
                    events = []
                if done:
                    break
            if not converter.reported:  # llama-cpp-python ignores stream_options.include_usage
                converter.estimate(
                    input_tokens=body_tokens(request.body), output_tokens=text_tokens(converter.produced)
                )
                request.usage.estimated = True
            yield events + converter.finish()

    def _capped(self, body: dict[str, Any]) -> dict[str, Any]:
        if self._max_tokens is not None and body["max_tokens"] > self._max_tokens:
            body["max_tokens"] = self._max_tokens
        return body

    async def count_tokens(self, body: dict[str, Any], model: str) -> int:
        return estimate_tokens(body)


class AnthropicUpstream:
    kind = "anthropic"

    def __init__(self, http: HttpPool, *, base_url: str | None, api_key: str | None, timeout_s: float) -> None:
        self._http = http
        self._base = (base_url or "https://api.anthropic.com").rstrip("/")
        self._key = api_key or ""
        self._timeout = timeout_s

    def _headers(self, request: MessagesRequest | None = None) -> dict[str, str]:
        """Our key, and the caller's anthropic-version / anthropic-beta (beta fields in the body
        need their header)."""
        headers = {"x-api-key": self._key, "anthropic-version": ANTHROPIC_VERSION}
        if request is not None:
            headers.update(request.headers)
        return headers

    async def create(self, request: MessagesRequest, model: str) -> dict[str, Any]:
        body = {**request.body, "model": model, "stream": False}
        async with self._http.post(
            f"{self._base}/v1/messages", body, self._headers(request), timeout_s=self._timeout
        ) as response:
            await raise_for_status(response)
            message: dict[str, Any] = orjson.loads(await response.read())
        message["model"] = request.model
        return message

    async def stream(self, request: MessagesRequest, model: str) -> AsyncIterator[list[Event]]:
        body = {**request.body, "model": model, "stream": True}
        url = f"{self._base}/v1/messages"
        async with self._http.post(url, body, self._headers(request), timeout_s=self._timeout) as response:
            await raise_for_status(response)
            async for block in sse_blocks(response):
                events: list[Event] = []
                for data in block:
                    event = orjson.loads(data)
                    kind = event.get("type")
                    if kind == "ping":
                        continue
                    if kind == "error":
                        if events:
                            yield events
                        raise stream_error(event)
                    if kind == "message_start":
                        event["message"]["model"] = request.model
                    events.append(event)
                if events:
                    yield events

    async def count_tokens(self, body: dict[str, Any], model: str) -> int:
        payload = {**body, "model": model}
        async with self._http.post(
            f"{self._base}/v1/messages/count_tokens", payload, self._headers(), timeout_s=self._timeout
        ) as response:
            await raise_for_status(response)
            return int(orjson.loads(await response.read()).get("input_tokens") or 0)


class ModelUpstream:
    """A local `Model` (the offline model) behind the Anthropic wire format."""

    kind = "offline"

    def __init__(self, model: Model) -> None:
        self.model = model

    async def create(self, request: MessagesRequest, model: str) -> dict[str, Any]:
        return accumulate([event async for batch in self.stream(request, model) for event in batch])

    async def stream(self, request: MessagesRequest, model: str) -> AsyncIterator[list[Event]]:
        async for batch in model_stream(self.model, request, max_tokens=None):
            yield batch

    async def count_tokens(self, body: dict[str, Any], model: str) -> int:
        return estimate_tokens(body)


async def model_stream(model: Model, request: MessagesRequest, *, max_tokens: int | None) -> AsyncIterator[list[Event]]:
    """`request` answered by a `Model`, as an Anthropic event stream (one event per batch)."""
    asked = model_request(request.body)
    if max_tokens is not None and asked.max_tokens > max_tokens:
        asked = replace(asked, max_tokens=max_tokens)
    try:
        async for event in anthropic_events(_noting_estimates(model.stream(asked), request), request.model):
            yield [event]
    except ModelError as exc:
        raise GatewayError(_model_error_status(exc), str(exc)) from None


async def _noting_estimates(events: AsyncIterator[ModelEvent], request: MessagesRequest) -> AsyncIterator[ModelEvent]:
    """`events`; an estimated usage report (the model's server reported none) is noted on `request`."""
    async for event in events:
        if isinstance(event, UsageReport) and event.usage.estimated:
            request.usage.estimated = True
        yield event


def _model_error_status(exc: ModelError) -> int:
    if isinstance(exc, ModelBadRequest):
        return 400
    if isinstance(exc, ModelRateLimited):
        return 429
    if isinstance(exc, ModelTimeout):
        return 504
    if isinstance(exc, ModelAuthError):
        return 500  # the operator's credentials, not the caller's
    return 503 if isinstance(exc, ModelUnavailable) else 500


class TextToolUpstream:
    """An OpenAI-compatible server whose models cannot call tools natively (OPENAI_NATIVE_TOOLS).

    Requests without tools go to `native` unchanged. With `mode` "false", a request's tools reach
    the server as a text manifest in the system prompt (earlier calls and results written out as
    text) and the reply is parsed for calls, which the caller gets as ordinary `tool_use` blocks
    (`llm.text_tools`). With "auto", a model is asked natively until the server refuses a request
    for its tools; that model then uses the text protocol for good. `text_model(name)` builds the
    text-protocol model for an upstream model name."""

    kind = "openai"

    def __init__(
        self, native: OpenAIUpstream, text_model: Callable[[str], Model], *, mode: str, max_tokens: int | None
    ) -> None:
        self._native = native
        self._build = text_model
        self._mode = mode
        self._max_tokens = max_tokens
        self._models: dict[str, Model] = {}
        self.refused: set[str] = set()  # upstream models that refused native tools ("auto")

    def _text(self, request: MessagesRequest, model: str) -> bool:
        return bool(request.body.get("tools")) and (self._mode == "false" or model in self.refused)

    def _model(self, model: str) -> Model:
        if model not in self._models:
            self._models[model] = self._build(model)
        return self._models[model]

    def _refusal(self, exc: GatewayError, request: MessagesRequest, model: str) -> bool:
        """True (and the model remembered) if `exc` is the server refusing the tools themselves."""
        if exc.status != 400 or not request.body.get("tools") or not refuses_tools(exc.message):
            return False
        self.refused.add(model)
        return True

    async def create(self, request: MessagesRequest, model: str) -> dict[str, Any]:
        if not self._text(request, model):
            try:
                return await self._native.create(request, model)
            except GatewayError as exc:
                if not self._refusal(exc, request, model):
                    raise
        events = [event async for batch in self._text_stream(request, model) for event in batch]
        return accumulate(events)

    async def stream(self, request: MessagesRequest, model: str) -> AsyncIterator[list[Event]]:
        if not self._text(request, model):
            started = False
            try:
                async for batch in self._native.stream(request, model):
                    started = True
                    yield batch
                return
            except GatewayError as exc:
                if started or not self._refusal(exc, request, model):
                    raise
        async for batch in self._text_stream(request, model):
            yield batch

    def _text_stream(self, request: MessagesRequest, model: str) -> AsyncIterator[list[Event]]:
        return model_stream(self._model(model), request, max_tokens=self._max_tokens)

    async def count_tokens(self, body: dict[str, Any], model: str) -> int:
        return estimate_tokens(body)
