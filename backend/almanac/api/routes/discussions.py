"""Discussions between models: POST /api/discussions (JSON, or SSE with `Accept: text/event-stream`),
the caller's discussions (list, read, delete), and GET /api/models (the models a participant may be).

The router is built per application (`build_router`), so the body's schema names the configured
models and states DISCUSSION_MAX_TURNS and DISCUSSION_MAX_PARTICIPANTS."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.errors import ApiError, validation_response
from almanac.api.responses import Responses, errors
from almanac.api.schemas import (
    DiscussionCreate,
    DiscussionDetail,
    DiscussionItemPublic,
    DiscussionParticipantPublic,
    DiscussionPublic,
    DiscussionsPublic,
    DiscussionTermsPublic,
    ErrorInfo,
    ModelPublic,
    ModelsPublic,
    Offset,
    UuidPath,
    discussion_create_model,
)
from almanac.api.sse import sse_response
from almanac.billing.pricing import DISCUSSION_TURN_COST
from almanac.chat.events import ErrorEvent
from almanac.discussions.events import discussion_payload
from almanac.discussions.service import DiscussionService
from almanac.discussions.spec import DiscussionInvalid, DiscussionRequest, PairRequest, ParticipantRequest
from almanac.services import Services
from almanac.storage.discussions import DiscussionEntry, DiscussionRecord

_START_REFUSALS: Responses = errors(
    401, 402, 403, 422, e402="not enough credits for the first turn; nothing was started or charged"
)
_SSE = {
    "schema": {
        "type": "object",
        "description": "One Server-Sent Event: `event` is its type, `data` its JSON (whose `type` is the same).",
        "properties": {"event": {"type": "string"}, "data": {"type": "string"}},
        "required": ["data"],
    }
}
_STREAM = (
    "The discussion, held to its end. With `Accept: text/event-stream`, as SSE: discussion_start, then per turn "
    "message_start, text_delta, tool_call, tool_result, escalation, usage (each with `turn` and `speaker`), "
    "message_end; error; discussion_end."
)
_NO_SUCH = "no such discussion (or not yours)"


def _discussions(services: Services) -> DiscussionService:
    if services.discussions is None:  # pragma: no cover - the composition root always builds it
        raise ApiError(404, "not_found", "discussions are not offered here")
    return services.discussions


def _missing(discussion_id: str) -> ApiError:
    return ApiError(404, "discussion_not_found", f"no discussion {discussion_id}", field="discussion_id")


def _request(body: DiscussionCreate) -> DiscussionRequest:
    collaboration = body.collaboration
    pairs = collaboration.pairs if collaboration is not None else []
    return DiscussionRequest(
        goal=body.goal,
        turns=body.turns,
        participants=[ParticipantRequest(p.model, p.role, p.name) for p in body.participants],
        tools=body.tools,
        collaboration=collaboration is not None and collaboration.enabled,
        pairs=[PairRequest(p.primary, p.secondary, p.threshold, p.max_retries) for p in pairs],
    )


def _public(record: DiscussionRecord) -> DiscussionPublic:
    config = record.config
    return DiscussionPublic(
        id=record.id,
        title=record.title,
        goal=record.goal,
        status=record.status,
        stop_reason=record.stop_reason,
        turns=record.turns,
        turns_done=record.turns_done,
        credits_used=record.credits_used,
        participants=[
            DiscussionParticipantPublic(index=index, **participant)
            for index, participant in enumerate(config.get("participants", []))
        ],
        tools=list(config.get("tools", [])),
        collaboration=bool(config.get("collaboration", {}).get("enabled")),
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def _item(entry: DiscussionEntry) -> DiscussionItemPublic:
    item = entry.item
    return DiscussionItemPublic(
        id=item.item_id,
        kind=item.kind,
        ref=item.ref,
        content=item.content,
        status=item.status,
        tool_name=item.tool_name,
        tool_input=item.tool_input,
        is_error=item.is_error,
        credits=item.credits,
        duration_ms=item.duration_ms,
        created_at=item.created_at,
        turn=item.query_number,
        speaker=entry.speaker,
        model=entry.model,
    )


def _detail(record: DiscussionRecord, entries: list[DiscussionEntry], error: ErrorEvent | None) -> DiscussionDetail:
    return DiscussionDetail(
        **_public(record).model_dump(),
        items=[_item(entry) for entry in entries],
        error=ErrorInfo(code=error.code, message=error.message) if error else None,
    )


def build_router(*, models: list[str], max_turns: int, max_participants: int) -> APIRouter:
    """The discussion routes, validating against this server's models and limits."""
    router = APIRouter(prefix="/api", tags=["discussions"])
    body_model = discussion_create_model(models=models, max_turns=max_turns, max_participants=max_participants)

    async def start_discussion(
        body: DiscussionCreate, user: CurrentUser, services: ServicesDep, request: Request
    ) -> Any:
        """Hold a discussion between models, turn by turn, to its end (or until the credits run out).
        Streams SSE when the request accepts `text/event-stream`."""
        discussions = _discussions(services)
        try:
            run = await discussions.start(user=user, request=_request(body))
        except DiscussionInvalid as exc:
            return validation_response(
                [{"loc": ("body", *exc.field.split(".")), "msg": exc.message, "type": "value_error"}]
            )
        if "text/event-stream" in request.headers.get("accept", ""):
            return sse_response(run.events(), heartbeat_s=services.settings.sse_heartbeat_s, encode=discussion_payload)
        error: ErrorEvent | None = None
        async for event in run.events():
            if isinstance(event, ErrorEvent):
                error = event
        found = await discussions.get(user_id=user.id, discussion_id=run.discussion_id)
        if found is None:  # pragma: no cover - deleted while it ran
            raise _missing(run.discussion_id)
        return _detail(*found, error)

    start_discussion.__annotations__["body"] = body_model  # validate (and document) the app's own limits
    router.post(
        "/discussions",
        response_model=DiscussionDetail,
        responses={**_START_REFUSALS, 200: {"content": {"text/event-stream": _SSE}, "description": _STREAM}},
    )(start_discussion)

    @router.get("/discussions", response_model=DiscussionsPublic, responses=errors(401, 422))
    async def list_discussions(
        user: CurrentUser,
        services: ServicesDep,
        limit: Annotated[int, Query(ge=1, le=200, description="How many to return.")] = 50,
        offset: Offset = 0,
    ) -> DiscussionsPublic:
        """The caller's discussions, newest activity first."""
        records, count = await _discussions(services).page(user_id=user.id, limit=limit, offset=offset)
        return DiscussionsPublic(data=[_public(record) for record in records], count=count)

    @router.get(
        "/discussions/{discussion_id}", response_model=DiscussionDetail, responses=errors(401, 404, 422, e404=_NO_SUCH)
    )
    async def get_discussion(discussion_id: UuidPath, user: CurrentUser, services: ServicesDep) -> DiscussionDetail:
        """One of the caller's discussions, with its messages and tool results."""
        found = await _discussions(services).get(user_id=user.id, discussion_id=discussion_id)
        if found is None:
            raise _missing(discussion_id)
        return _detail(*found, None)

    @router.delete(
        "/discussions/{discussion_id}",
        status_code=204,
        response_class=Response,
        responses=errors(401, 403, 404, 409, 422, e404=_NO_SUCH, e409="the discussion is still running"),
    )
    async def delete_discussion(discussion_id: UuidPath, user: CurrentUser, services: ServicesDep) -> Response:
        """Delete one of the caller's discussions and its items (not while it runs)."""
        outcome = await _discussions(services).delete(user_id=user.id, discussion_id=discussion_id)
        if outcome == "missing":
            raise _missing(discussion_id)
        if outcome == "running":
            raise ApiError(409, "discussion_running", "the discussion is still running", field="discussion_id")
        return Response(status_code=204)

    @router.get("/models", response_model=ModelsPublic, responses=errors(401))
    async def list_models(user: CurrentUser, services: ServicesDep) -> ModelsPublic:
        """The configured models a discussion participant (or a collaboration pair) may name, and what a
        discussion costs."""
        discussions = _discussions(services)
        entries = discussions.catalog.entries()
        return ModelsPublic(
            data=[
                ModelPublic(
                    name=e.name, provider=e.provider, model=e.model, roles=list(e.roles), aliases=list(e.aliases)
                )
                for e in entries
            ],
            count=len(entries),
            discussions=DiscussionTermsPublic(
                turn_credits=DISCUSSION_TURN_COST,
                max_turns=discussions.limits.spec.max_turns,
                max_participants=discussions.limits.spec.max_participants,
            ),
        )

    return router
