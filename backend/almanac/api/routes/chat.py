"""POST /api/chat (JSON, or SSE with `Accept: text/event-stream`) and POST /api/chat/stream (SSE).

The router is built per application (`build_router`), so the body's schema states the configured
MAX_MESSAGE_CHARS."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.errors import ApiError
from almanac.api.responses import Responses, errors
from almanac.api.schemas import ChatCreate, ChatPublic, ErrorInfo, ToolResultPublic, chat_create_model
from almanac.api.sse import sse_response
from almanac.chat.events import ChatOutcome
from almanac.chat.run import ChatRun

_REFUSALS: Responses = errors(
    401,
    402,
    403,
    404,
    409,
    413,
    422,
    502,
    e404="no such conversation (or not yours)",
    e413="message over MAX_MESSAGE_CHARS (`message_too_large`, with `limit` and `size`), or body over the size limit",
)
_SSE = {
    "schema": {
        "type": "object",
        "description": "One Server-Sent Event: `event` is its type, `data` its JSON (whose `type` is the same).",
        "properties": {"event": {"type": "string"}, "data": {"type": "string"}},
        "required": ["data"],
    }
}
_STREAM_DESCRIPTION = "SSE: message_start, text_delta, tool_call, tool_result, usage, message_end (or error)"
Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


def _validating(model: type[ChatCreate]) -> Callable[[Endpoint], Endpoint]:
    """Make FastAPI validate (and document) an endpoint's `body: ChatCreate` as `model`, the
    subclass made for this app; the code keeps the static type."""

    def annotate(endpoint: Endpoint) -> Endpoint:
        endpoint.__annotations__["body"] = model
        return endpoint

    return annotate


def build_router(*, max_message_chars: int) -> APIRouter:
    """The chat routes, validating messages against the configured MAX_MESSAGE_CHARS."""
    router = APIRouter(prefix="/api", tags=["chat"])
    body_model = chat_create_model(max_message_chars)

    @router.post(
        "/chat",
        response_model=ChatPublic,
        responses={**_REFUSALS, 200: {"content": {"text/event-stream": _SSE}, "description": "The answer."}},
    )
    @_validating(body_model)
    async def chat(body: ChatCreate, user: CurrentUser, services: ServicesDep, request: Request) -> Any:
        """Answer a message. Streams SSE instead when the request accepts `text/event-stream`."""
        run = await services.chat.start(
            user=user, message=body.message, conversation_id=body.conversation_id, strategy=body.strategy
        )
        if "text/event-stream" in request.headers.get("accept", ""):
            return sse_response(run.events(), heartbeat_s=services.settings.sse_heartbeat_s)
        return await _complete(run)

    @router.post(
        "/chat/stream",
        response_class=Response,
        responses={**_REFUSALS, 200: {"content": {"text/event-stream": _SSE}, "description": _STREAM_DESCRIPTION}},
    )
    @_validating(body_model)
    async def chat_stream(body: ChatCreate, user: CurrentUser, services: ServicesDep) -> Response:
        """Answer a message as a Server-Sent Events stream."""
        run = await services.chat.start(
            user=user, message=body.message, conversation_id=body.conversation_id, strategy=body.strategy
        )
        return sse_response(run.events(), heartbeat_s=services.settings.sse_heartbeat_s)

    return router


async def _complete(run: ChatRun) -> ChatPublic:
    outcome = ChatOutcome()
    async for event in run.events():
        outcome.add(event)
    end, error = outcome.end, outcome.error
    if end is None:
        code, message = (error.code, error.message) if error else ("internal_error", "the answer was lost")
        raise ApiError(502, code, message, refunded=bool(error and error.refunded), conversation_id=run.conversation_id)
    return ChatPublic(
        response=end.response,
        summary=end.summary,
        conversation_id=end.conversation_id,
        message_id=end.message_id,
        summary_id=end.summary_id,
        query_id=end.query_id,
        tools_used=end.tools_used,
        tool_results=[
            ToolResultPublic(**{k: getattr(r, k) for k in ToolResultPublic.model_fields}) for r in outcome.tool_results
        ],
        credits_used=end.credits_used,
        credits_remaining=end.credits_remaining,
        turns=end.turns,
        stop_reason=end.stop_reason,
        credit_limit=end.credit_limit,
        credit_limit_reached=end.credit_limit_reached,
        error=ErrorInfo(code=error.code, message=error.message) if error else None,
    )
