"""The Anthropic-compatible gateway: POST /v1/messages (JSON or SSE), POST /v1/messages/count_tokens,
GET /v1/models. Authenticated with Almanac API keys (`x-api-key` or `Authorization: Bearer`); every
error has Anthropic's shape (`{"type": "error", "error": {"type", "message"}}`), so the official
SDKs and Claude Code (ANTHROPIC_BASE_URL) raise the matching exceptions. Query strings such as
Claude Code's `?beta=true` and any `anthropic-version` / `anthropic-beta` headers are accepted."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from almanac.api.limits import BodySizeLimit
from almanac.gateway.errors import GatewayError, error_body
from almanac.gateway.http import sse_event
from almanac.gateway.service import GatewayService, JsonReply, StreamReply
from almanac.services import Services

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1", tags=["gateway (Anthropic Messages API)"])
GATEWAY_MAX_BODY = 16_000_000  # GATEWAY_MAX_BODY_MB's default (Anthropic's own limit is 32 MB)
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "invalid_request_error"},
    401: {"description": "authentication_error: missing or invalid Almanac API key"},
    402: {"description": "billing_error: out of credits (GATEWAY_CREDITS_PER_1K_TOKENS > 0)"},
    404: {"description": "not_found_error"},
    429: {"description": "rate_limit_error (from the upstream)"},
    500: {"description": "api_error"},
    529: {"description": "overloaded_error (from the upstream)"},
}
_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def _gateway(request: Request) -> GatewayService:
    # Read from the app directly rather than through a FastAPI dependency: the gateway's routes are
    # its hot path, and a sync dependency costs a thread-pool hop per request.
    services: Services = request.app.state.services
    if services.gateway is None:
        raise GatewayError(404, "the gateway is not enabled on this server")
    return services.gateway


def _response(reply: JsonReply | StreamReply) -> Response:
    if isinstance(reply, StreamReply):
        return StreamingResponse(reply.chunks, media_type="text/event-stream", headers=_SSE_HEADERS)
    return Response(reply.body, status_code=reply.status, headers=reply.headers)


def _error(exc: GatewayError) -> Response:
    return Response(exc.body(), status_code=exc.status, headers=exc.headers())


@router.post("/messages", response_class=Response, responses=_ERRORS)
async def messages(request: Request) -> Response:
    """Create a message (Anthropic Messages API); `"stream": true` answers with SSE."""
    try:
        return _response(await _gateway(request).messages(request.headers, await request.body()))
    except GatewayError as exc:
        return _error(exc)


@router.post("/messages/count_tokens", response_class=Response, responses=_ERRORS)
async def count_tokens(request: Request) -> Response:
    """Count a request's input tokens: `{"input_tokens": n}`. Under the per-user rate limit (a
    budget of its own) and GATEWAY_MAX_BODY_MB; the key is checked before the body is read."""
    try:
        gateway = _gateway(request)
        identity = await gateway.admit_count(request.headers)
        services: Services = request.app.state.services
        max_bytes = int(services.settings.gateway_max_body_mb * 1_000_000)
        body = await _read_body(_declared(request.headers, max_bytes, receive=request.receive), max_bytes)
        return _response(await gateway.count_tokens(request.headers, body, identity=identity))
    except GatewayError as exc:
        return _error(exc)


@router.get("/models", response_class=Response, responses=_ERRORS)
async def models(request: Request) -> Response:
    """The model names the gateway answers to, one per tier."""
    try:
        return _response(await _gateway(request).models(request.headers))
    except GatewayError as exc:
        return _error(exc)


@router.get("/models/{model_id}", response_class=Response, responses=_ERRORS)
async def model(model_id: str, request: Request) -> Response:
    """One model of the list."""
    try:
        return _response(await _gateway(request).model(request.headers, model_id))
    except GatewayError as exc:
        return _error(exc)


@router.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)
async def unknown(path: str) -> Response:
    return _error(GatewayError(404, f"/v1/{path} is not served here (this gateway serves /v1/messages and /v1/models)"))


class BodyLimits:
    """ASGI middleware in front of the app: `POST /v1/messages` (the gateway's hot path) is served
    here directly, without the framework's routing, exception middleware and response objects —
    the route above stays for the API docs. Request bodies may be up to `gateway_bytes` on /v1/
    (GATEWAY_MAX_BODY_MB: agent conversations are large) and up to `max_bytes` elsewhere; over that,
    413. The gateway's own routes read a body only after its key is accepted."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, gateway_bytes: int = GATEWAY_MAX_BODY) -> None:
        self.app = app
        self._default = BodySizeLimit(app, max_bytes=max_bytes)
        self._gateway = BodySizeLimit(app, max_bytes=gateway_bytes)
        self._gateway_bytes = gateway_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope.get("path", "").startswith("/v1/"):
            await self._default(scope, receive, send)
        elif scope["path"] == "/v1/messages" and scope["method"] == "POST" and "app" in scope:
            await serve_messages(scope, receive, send, max_bytes=self._gateway_bytes)
        elif scope["path"] == "/v1/messages/count_tokens":
            await self.app(scope, receive, send)  # the route admits the caller, then reads within the limit
        else:
            await self._gateway(scope, receive, send)


async def serve_messages(scope: Scope, receive: Receive, send: Send, *, max_bytes: int) -> None:
    """`POST /v1/messages` on bare ASGI: admit the caller from the headers (key, credits, rate), then
    read the body (up to `max_bytes`; a larger declared length is refused unread), answer JSON or
    SSE. Nothing of the body is read for a caller who would be refused. A client that goes away
    mid-stream stops the stream (and so the upstream call)."""
    services: Services = scope["app"].state.services
    try:
        if services.gateway is None:
            raise GatewayError(404, "the gateway is not enabled on this server")
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        identity = await services.gateway.admit(headers)
        body = await _read_body(_declared(headers, max_bytes, receive=receive), max_bytes)
        reply = await services.gateway.messages(headers, body, identity=identity)
    except GatewayError as exc:
        await _send(send, exc.status, exc.headers(), exc.body())
        return
    except Exception:  # boundary: a bug becomes an Anthropic-shaped 500, and is logged
        log.exception("gateway request failed")
        await _send(send, 500, {"content-type": "application/json"}, error_body("api_error", "internal error"))
        return
    if isinstance(reply, JsonReply):
        await _send(send, reply.status, reply.headers, reply.body)
        return
    await send({"type": "http.response.start", "status": 200, "headers": _SSE_RAW_HEADERS})
    gone = asyncio.ensure_future(_disconnected(receive))
    chunks = reply.chunks
    shutdown = services.ops.shutdown if services.ops is not None else None
    try:
        # At shutdown, a stream still open when the grace period ends is interrupted here.
        with shutdown.interruptible() if shutdown is not None else nullcontext() as stopping:
            async for chunk in chunks:
                if gone.done():
                    break
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if stopping is not None and stopping.cancelled_caught:
            await send({"type": "http.response.body", "body": _SHUTTING_DOWN, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    finally:
        gone.cancel()
        await chunks.aclose()  # type: ignore[attr-defined]


_SHUTTING_DOWN = sse_event(
    {"type": "error", "error": {"type": "overloaded_error", "message": "the server is shutting down; retry"}}
)
_SSE_RAW_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


def _declared(headers: Mapping[str, str], max_bytes: int, *, receive: Receive) -> Receive:
    """`receive`, after refusing (413) a body whose declared length is over `max_bytes` unread."""
    declared = headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > max_bytes:
        raise GatewayError(413, f"request body exceeds {max_bytes:,} bytes (GATEWAY_MAX_BODY_MB)")
    return receive


async def _read_body(receive: Receive, max_bytes: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise GatewayError(400, "the client went away before sending the whole request")
        part = message.get("body", b"")
        size += len(part)
        if size > max_bytes:
            raise GatewayError(413, f"request body exceeds {max_bytes:,} bytes (GATEWAY_MAX_BODY_MB)")
        parts.append(part)
        if not message.get("more_body"):
            return b"".join(parts)


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _send(send: Send, status: int, headers: dict[str, str], body: bytes) -> None:
    raw = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
