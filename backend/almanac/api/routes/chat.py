"""POST /api/chat (JSON, or SSE with `Accept: text/event-stream`) and POST /api/chat/stream (SSE)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.errors import ApiError
from almanac.api.schemas import ChatCreate, ChatPublic, ErrorInfo, ToolResultPublic
from almanac.api.sse import sse_response
from almanac.chat.events import ChatOutcome
from almanac.chat.run import ChatRun

router = APIRouter(prefix="/api", tags=["chat"])

_REFUSALS: dict[int | str, dict[str, Any]] = {
    401: {"description": "missing or invalid API key"},
    402: {"description": "not enough credits; body has balance, needed, how_to_get_more"},
    404: {"description": "no such conversation"},
    409: {"description": "the conversation is answering another message"},
    413: {"description": "message too large"},
    422: {"description": "invalid body; error.fields names each field"},
    502: {"description": "the model failed before producing anything (the query was refunded)"},
}
_STREAM: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {"text/event-stream": {}},
        "description": "SSE: message_start, text_delta, tool_call, tool_result, usage, message_end (or error)",
    }
}


@router.post("/chat", response_model=ChatPublic, responses={**_REFUSALS, **_STREAM})
async def chat(body: ChatCreate, user: CurrentUser, services: ServicesDep, request: Request) -> Any:
    """Answer a message. Streams SSE instead when the request accepts `text/event-stream`."""
    run = await services.chat.start(user=user, message=body.message, conversation_id=body.conversation_id)
    if "text/event-stream" in request.headers.get("accept", ""):
        return sse_response(run.events(), heartbeat_s=services.settings.sse_heartbeat_s)
    return await _complete(run)


@router.post("/chat/stream", response_class=Response, responses={**_REFUSALS, **_STREAM})
async def chat_stream(body: ChatCreate, user: CurrentUser, services: ServicesDep) -> Response:
    """Answer a message as a Server-Sent Events stream."""
    run = await services.chat.start(user=user, message=body.message, conversation_id=body.conversation_id)
    return sse_response(run.events(), heartbeat_s=services.settings.sse_heartbeat_s)


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
        error=ErrorInfo(code=error.code, message=error.message) if error else None,
    )
