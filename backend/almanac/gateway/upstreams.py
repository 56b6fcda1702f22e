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
from almanac.gateway.errors import GatewayError, UpstreamError
from almanac.gateway.http import HttpPool, raise_for_status, sse_blocks, stream_error
from almanac.gateway.llm_bridge import anthropic_events, model_request
from almanac.gateway.openai_upstream import OpenAIUpstream, estimate_tokens
from almanac.gateway.refusals import prompt_too_long
from almanac.gateway.stops import with_stop_sequences
from almanac.gateway.wire import MessagesRequest
from almanac.llm.base import (
    Model,
    ModelAuthError,
    ModelBadRequest,
    ModelContextTooLong,
    ModelError,
    ModelRateLimited,
    ModelTimeout,
    ModelUnavailable,
)
from almanac.llm.events import ModelEvent, UsageReport
from almanac.llm.text_tools import refuses_tools
from almanac.llm.tokens import context_window

__all__ = ["AnthropicUpstream", "ModelUpstream", "OpenAIUpstream", "TextToolUpstream", "Upstream", "estimate_tokens"]

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

    @staticmethod
    def _body(request: MessagesRequest, model: str, *, stream: bool) -> dict[str, Any]:
        body = {**request.body, "model": model, "stream": stream}
        if request.output_cap is not None and request.max_tokens > request.output_cap:
            body["max_tokens"] = request.output_cap
        return body

    async def create(self, request: MessagesRequest, model: str) -> dict[str, Any]:
        body = self._body(request, model, stream=False)
        async with self._http.post(
            f"{self._base}/v1/messages", body, self._headers(request), timeout_s=self._timeout
        ) as response:
            await _anthropic_status(response)
            message: dict[str, Any] = orjson.loads(await response.read())
        message["model"] = request.model
        return message

    async def stream(self, request: MessagesRequest, model: str) -> AsyncIterator[list[Event]]:
        body = self._body(request, model, stream=True)
        url = f"{self._base}/v1/messages"
        async with self._http.post(url, body, self._headers(request), timeout_s=self._timeout) as response:
            await _anthropic_status(response)
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


async def _anthropic_status(response: Any) -> None:
    """An Anthropic upstream's refusal reaches the caller as Anthropic sent it (status, type and
    message: "prompt is too long: …" stays word for word), except a rejection of the gateway's own
    credentials, which is the operator's problem (500)."""
    try:
        await raise_for_status(response)
    except UpstreamError as exc:
        kind = (exc.fields or {}).get("type")
        if exc.upstream_status in (401, 403) or not isinstance(kind, str):
            raise
        raise GatewayError(exc.upstream_status, exc.detail, error_type=kind, retry_after=exc.retry_after) from None


class ModelUpstream:
    """A local `Model` (the offline model) behind the Anthropic wire format."""

    kind = "offline"

    def __init__(self, model: Model) -> None:
        self.model = model

    async def create(self, request: MessagesRequest, model: str) -> dict[str, Any]:
        return accumulate([event async for batch in self.stream(request, model) for event in batch])

    def stream(self, request: MessagesRequest, model: str) -> AsyncIterator[list[Event]]:
        return model_stream(self.model, request)

    async def count_tokens(self, body: dict[str, Any], model: str) -> int:
        return estimate_tokens(body)


def model_stream(model: Model, request: MessagesRequest) -> AsyncIterator[list[Event]]:
    """`request` answered by a `Model`, as an Anthropic event stream (one event per batch), its
    stop sequences applied; `max_tokens` within `request.output_cap`."""
    return with_stop_sequences(
        _model_events(model, request), request.body.get("stop_sequences") or (), on_cut=request.usage.note_estimate
    )


async def _model_events(model: Model, request: MessagesRequest) -> AsyncIterator[list[Event]]:
    asked = model_request(request.body)
    if request.output_cap is not None and asked.max_tokens > request.output_cap:
        asked = replace(asked, max_tokens=request.output_cap)
    try:
        events = _noting_estimates(model.stream(asked), request)
        async for event in anthropic_events(events, request.model, tools=request.tools_allowed):
            yield [event]
    except ModelContextTooLong:
        raise prompt_too_long(estimate_tokens(request.body), context_window(model.name)) from None
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

    def __init__(self, native: OpenAIUpstream, text_model: Callable[[str], Model], *, mode: str) -> None:
        self._native = native
        self._build = text_model
        self._mode = mode
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
        return model_stream(self._model(model), request)

    async def count_tokens(self, body: dict[str, Any], model: str) -> int:
        return estimate_tokens(body)
