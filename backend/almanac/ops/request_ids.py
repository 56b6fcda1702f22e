"""Request IDs: one per HTTP request, in a context variable every log line reads, in the response's
`X-Request-ID` header and in the body of every JSON error (`error.request_id`).

A client (or a proxy in front) may send its own `X-Request-ID`; it is kept when it is sane — 1 to
128 characters of letters, digits and `._:=+/-` — so a request can be followed across services.
Anything else (spaces, quotes, control characters, over-long values: what could forge or flood a
log line) is replaced by a fresh random ID. Tasks started while a request is handled (a chat run,
its summaries) inherit the ID, so their log lines carry it too.

`RequestIds` stamps the ID into JSON error bodies as they leave, whoever wrote them (route
handlers, the request guards, the body limit, the gateway's Anthropic-shaped errors): the
guarantee holds for every route there is or will be, not only for those that remember it.
"""

from __future__ import annotations

import json
import re
import uuid
from contextvars import ContextVar
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = b"x-request-id"
_SANE = re.compile(r"[A-Za-z0-9._:=+/-]{1,128}")
_current: ContextVar[str | None] = ContextVar("almanac_request_id", default=None)
MAX_ERROR_BODY = 64 * 1024  # larger error bodies pass unchanged (none of ours is near this)


def current_request_id() -> str | None:
    """The ID of the request being handled in this context, or None outside any request."""
    return _current.get()


def accept_or_new(incoming: bytes | str | None) -> str:
    """`incoming` when it is a sane request ID, else a new random one (32 hex digits)."""
    if isinstance(incoming, bytes):
        incoming = incoming.decode("latin-1")
    if incoming and _SANE.fullmatch(incoming):
        return incoming
    return uuid.uuid4().hex


def stamp_error(body: bytes, request_id: str) -> bytes | None:
    """`body` with `error.request_id` set, if it is a JSON object with an `error` object; else None."""
    try:
        document: Any = json.loads(body)
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("error"), dict):
        return None
    document["error"]["request_id"] = request_id
    return json.dumps(document, ensure_ascii=True, separators=(",", ":")).encode("ascii")


class RequestIds:
    """ASGI middleware (outermost): give each HTTP request its ID, return it in `X-Request-ID`,
    and stamp it into JSON error bodies (status ≥ 400, `application/json`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = next((value for name, value in scope.get("headers") or () if name == HEADER), None)
        request_id = accept_or_new(incoming)
        token = _current.set(request_id)
        state = scope.setdefault("state", {})
        if isinstance(state, dict):
            state["request_id"] = request_id
        held: Message | None = None  # an error's response start, held until its body is complete
        parts: list[bytes] = []

        async def send_with_id(message: Message) -> None:
            nonlocal held
            kind = message["type"]
            if kind == "http.response.start":
                headers = [(n, v) for n, v in message.get("headers", ()) if n.lower() != HEADER]
                headers.append((HEADER, request_id.encode("latin-1")))
                message = {**message, "headers": headers}
                if message["status"] >= 400 and _is_json(headers):
                    held = message
                    return
            elif kind == "http.response.body" and held is not None:
                parts.append(message.get("body", b""))
                if message.get("more_body", False) and sum(map(len, parts)) <= MAX_ERROR_BODY:
                    return
                start, held = held, None
                body = b"".join(parts)
                stamped = stamp_error(body, request_id) if not message.get("more_body", False) else None
                if stamped is not None:
                    body = stamped
                    start = {**start, "headers": _with_length(start["headers"], len(body))}
                await send(start)
                message = {**message, "body": body}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            _current.reset(token)


def _is_json(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(name.lower() == b"content-type" and value.startswith(b"application/json") for name, value in headers)


def _with_length(headers: list[tuple[bytes, bytes]], length: int) -> list[tuple[bytes, bytes]]:
    kept = [(name, value) for name, value in headers if name.lower() != b"content-length"]
    return [*kept, (b"content-length", str(length).encode())]
