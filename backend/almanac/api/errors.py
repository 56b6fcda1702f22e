"""Every error leaves the API as JSON: `{"error": {"code", "message", ...}}` with a 4xx/5xx status.

Validation errors name each field at fault (`error.fields`, plus FastAPI's usual `detail`).
Domain refusals from the chat service map to 402/404/409/413/422 here, and nowhere else.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from almanac.chat.errors import (
    ChatRefused,
    ConversationBusy,
    ConversationNotFound,
    EmptyMessage,
    InsufficientCredits,
    MessageTooLarge,
)

log = logging.getLogger(__name__)


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


def refusal_error(exc: ChatRefused) -> ApiError:
    """The HTTP form of a chat refusal."""
    if isinstance(exc, InsufficientCredits):
        return ApiError(
            402,
            exc.code,
            str(exc),
            balance=exc.balance,
            needed=exc.needed,
            plan=exc.plan,
            how_to_get_more=exc.how_to_get_more,
        )
    if isinstance(exc, MessageTooLarge):
        return ApiError(413, exc.code, str(exc), field="message", limit=exc.limit, size=exc.size)
    if isinstance(exc, EmptyMessage):
        return ApiError(422, exc.code, str(exc), field="message")
    if isinstance(exc, ConversationNotFound):
        return ApiError(404, exc.code, str(exc), field="conversation_id")
    if isinstance(exc, ConversationBusy):
        return ApiError(409, exc.code, str(exc), field="conversation_id")
    return ApiError(400, exc.code, str(exc))


def _field_name(location: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(part) for part in location if part not in ("body", "query", "path", "header")]
    return ".".join(parts) or "body"


def install_error_handlers(app: FastAPI) -> None:
    """Route every error through one JSON shape."""

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        body = error_body(exc.code, exc.message, **exc.extra)
        if exc.status == 402:
            body.update({k: exc.extra[k] for k in ("balance", "needed", "how_to_get_more")})
        return JSONResponse(body, status_code=exc.status, headers=headers)

    @app.exception_handler(ChatRefused)
    async def _refused(request: Request, exc: ChatRefused) -> JSONResponse:
        return await _api_error(request, refusal_error(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        fields = [{"field": _field_name(e.get("loc", ())), "message": e.get("msg", "invalid")} for e in exc.errors()]
        summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
        body = error_body("invalid_request", summary or "invalid request", fields=fields)
        body["detail"] = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg"), "type": e.get("type")} for e in exc.errors()
        ]
        return JSONResponse(body, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized"}.get(exc.status_code, "http_error")
        return JSONResponse(
            error_body(code, str(exc.detail)), status_code=exc.status_code, headers=getattr(exc, "headers", None)
        )

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:  # boundary: log, never leak internals
        log.exception("unhandled error")
        return JSONResponse(
            error_body("internal_error", "an internal error occurred; it has been logged"), status_code=500
        )
