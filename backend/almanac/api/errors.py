"""Every error leaves the API as JSON: `{"error": {"code", "message", ...}}` with a 4xx/5xx status.

Validation errors name each field at fault (`error.field` for the first, `error.fields` for all,
plus FastAPI's usual `detail`). A chat message over MAX_MESSAGE_CHARS is a 413, whichever layer
notices. Domain refusals from the chat service map to 402/404/409/413/422 here, and nowhere else.

An exception no handler takes becomes a 500 in `UnhandledErrors`, which logs it exactly once and
without any exception's message: messages of database errors quote the statement's parameters
(user messages, titles), so the log names the exception types and the stack, never their text.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from almanac.api.schemas import PATTERN_MESSAGES
from almanac.billing.plans import how_to_get_more
from almanac.chat.errors import (
    ChatRefused,
    ConversationBusy,
    ConversationNotFound,
    EmptyMessage,
    InsufficientCredits,
    MessageTooLarge,
    StrategyUnavailable,
)

log = logging.getLogger(__name__)
MAX_LOGGED_FRAMES = 40
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_TOO_LARGE_FIELDS = {("body", "message")}  # ChatCreate.message: over MAX_MESSAGE_CHARS is a 413, not a 422


class ApiError(Exception):
    """An error response: status, machine-readable code, human message, extra fields."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


def error_json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
    """A JSON error response that renders whatever text it quotes (ASCII-escaped, so even a lone
    surrogate in an echoed value cannot break the encoding)."""
    return _AsciiJSONResponse(body, status_code=status, headers=headers)


class _AsciiJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def refusal_error(exc: ChatRefused, *, payments_enabled: bool | None = None) -> ApiError:
    """The HTTP form of a chat refusal. A 402 says what to do according to `payments_enabled`
    (whether this server takes payments: buy more, or ask its operator)."""
    if isinstance(exc, InsufficientCredits):
        advice = exc.how_to_get_more
        if payments_enabled is not None:
            advice = how_to_get_more(exc.plan, payments=payments_enabled)
        return ApiError(
            402,
            exc.code,
            str(exc),
            balance=exc.balance,
            needed=exc.needed,
            plan=exc.plan,
            how_to_get_more=advice,
            **({} if payments_enabled is None else {"payments_enabled": payments_enabled}),
        )
    if isinstance(exc, MessageTooLarge):
        return ApiError(413, exc.code, str(exc), field="message", limit=exc.limit, size=exc.size)
    if isinstance(exc, EmptyMessage):
        return ApiError(422, exc.code, str(exc), field="message")
    if isinstance(exc, ConversationNotFound):
        return ApiError(404, exc.code, str(exc), field="conversation_id")
    if isinstance(exc, ConversationBusy):
        return ApiError(409, exc.code, str(exc), field="conversation_id")
    if isinstance(exc, StrategyUnavailable):
        return ApiError(422, exc.code, str(exc), field="strategy")
    return ApiError(400, exc.code, str(exc))


def _field_name(location: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(part) for part in location if part not in ("body", "query", "path", "header", "cookie")]
    return ".".join(parts) or "body"


def _message(error: dict[str, Any]) -> str:
    """A validation error's message, in words a client can act on."""
    kind = error.get("type")
    context = error.get("ctx") or {}
    if kind == "string_pattern_mismatch" and context.get("pattern") in PATTERN_MESSAGES:
        return PATTERN_MESSAGES[context["pattern"]]
    if kind == "string_unicode":
        return "must be valid Unicode text (no lone UTF-16 surrogates)"
    return str(error.get("msg", "invalid"))


def _too_large(errors: list[dict[str, Any]]) -> MessageTooLarge | None:
    """The chat message's length as a 413, when that is the request's only fault."""
    if not errors or any(
        e.get("type") != "string_too_long" or tuple(e.get("loc", ())) not in _TOO_LARGE_FIELDS for e in errors
    ):
        return None
    error = errors[0]
    value = error.get("input")
    limit = int((error.get("ctx") or {}).get("max_length", 0))
    return MessageTooLarge(size=len(value) if isinstance(value, str) else limit + 1, limit=limit)


def validation_response(errors: list[dict[str, Any]]) -> JSONResponse:
    """422 naming each field at fault (never quoting the values sent)."""
    too_large = _too_large(errors)
    if too_large is not None:
        refusal = refusal_error(too_large)
        return error_json(refusal.status, error_body(refusal.code, refusal.message, **refusal.extra))
    fields = [{"field": _field_name(e.get("loc", ())), "message": _message(e)} for e in errors]
    summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
    extra: dict[str, Any] = {"field": fields[0]["field"]} if fields else {}
    body = error_body("invalid_request", summary or "invalid request", **extra, fields=fields)
    body["detail"] = [
        {
            "loc": [str(part) if not isinstance(part, int) else part for part in e.get("loc", ())],
            "msg": _message(e),
            "type": str(e.get("type")),
        }
        for e in errors
    ]
    return error_json(422, body)


def api_error_response(exc: ApiError) -> JSONResponse:
    """The response of an `ApiError` (also for middleware that refuses before any route runs)."""
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    if exc.status == 429 and "retry_after" in exc.extra:
        headers = {"Retry-After": str(exc.extra["retry_after"])}
    body = error_body(exc.code, exc.message, **exc.extra)
    if exc.status == 402:
        body.update({k: exc.extra[k] for k in ("balance", "needed", "how_to_get_more")})
    return error_json(exc.status, body, headers)


def install_error_handlers(app: FastAPI) -> None:
    """Route every error through one JSON shape."""

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return api_error_response(exc)

    @app.exception_handler(ChatRefused)
    async def _refused(request: Request, exc: ChatRefused) -> JSONResponse:
        billing = getattr(getattr(request.app.state, "services", None), "billing", None)
        payments = billing is not None and billing.enabled
        return await _api_error(request, refusal_error(exc, payments_enabled=payments))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_response(list(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized"}.get(exc.status_code, "http_error")
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(sorted(allowed_methods(app, request.url.path)))
        return error_json(exc.status_code, error_body(code, str(exc.detail)), headers or None)


def allowed_methods(app: FastAPI, path: str) -> set[str]:
    """Every method some operation of the API schema serves at `path` (the router alone would name
    only the first route that matched the path, not all of them)."""
    allowed: set[str] = set()
    for template, operations in app.openapi().get("paths", {}).items():
        if compile_path(template)[0].match(path):
            allowed |= {method.upper() for method in operations if method in _METHODS}
    if "GET" in allowed:
        allowed.add("HEAD")
    return allowed


class UnhandledErrors:
    """ASGI middleware (innermost, so the 500 still passes the security headers): an exception no
    handler took becomes `500 {"error": {"code": "internal_error"}}` and one log record. Nothing is
    re-raised, so the server does not log the same traceback a second time."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:  # boundary: every unexpected failure ends here, logged once, never leaked
            log.error(describe_failure(scope, exc))  # as the message itself: arguments get cut to a bound
            if started:
                return  # the response is under way; the server closes the connection
            response = error_json(500, error_body("internal_error", "an internal error occurred; it has been logged"))
            await response(scope, receive, send)


def describe_failure(scope: Scope, exc: BaseException) -> str:
    """One bounded log text for an unexpected error: the route, the exception types (with any
    SQLSTATE) and the stack — no exception message, since those can quote user content."""
    route = getattr(scope.get("route"), "path", None) or _bounded(str(scope.get("path", "")))
    chain = list(_chain(exc))
    names = " <- ".join(_describe_type(error) for error in chain)
    lines = [f"unhandled error in {scope.get('method', '?')} {route}: {names}"]
    for error in reversed(chain):
        frames = traceback.extract_tb(error.__traceback__)[-MAX_LOGGED_FRAMES:]
        lines.append(f"Traceback of {_qualified(error)} (message withheld):")
        lines.extend(line.rstrip("\n") for line in traceback.format_list(frames))
    return "\n".join(lines)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 10:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)


def _qualified(error: BaseException) -> str:
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _describe_type(error: BaseException) -> str:
    state = getattr(error, "sqlstate", None) or getattr(getattr(error, "orig", None), "sqlstate", None)
    return _qualified(error) + (f" (SQLSTATE {_bounded(str(state), 8)})" if state else "")


def _bounded(text: str, limit: int = 200) -> str:
    shown = text[:limit].encode("ascii", "backslashreplace").decode("ascii")
    return shown + (f"… ({len(text):,} characters)" if len(text) > limit else "")
