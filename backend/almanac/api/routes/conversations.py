"""The caller's conversations: list, read both tracks, fetch one item, rename or choose the answer
strategy, delete."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.errors import ApiError
from almanac.api.responses import errors
from almanac.api.schemas import (
    ConversationDetail,
    ConversationIdPath,
    ConversationPublic,
    ConversationsPublic,
    ConversationUpdate,
    ItemIdPath,
    ItemPublic,
    Offset,
)
from almanac.storage.records import ConversationRecord, ItemRecord

router = APIRouter(prefix="/api/conversations", tags=["conversations"])
_NO_SUCH = "no such conversation (or not yours)"


def _public(conversation: ConversationRecord) -> ConversationPublic:
    return ConversationPublic(
        id=conversation.id,
        title=conversation.title,
        query_count=conversation.query_counter,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
        strategy=conversation.strategy,  # type: ignore[arg-type]
    )


def _item(item: ItemRecord) -> ItemPublic:
    return ItemPublic(
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
        model=item.model,
    )


def _missing(conversation_id: str) -> ApiError:
    return ApiError(404, "conversation_not_found", f"no conversation {conversation_id}", field="conversation_id")


@router.get("", response_model=ConversationsPublic, responses=errors(401, 422))
async def list_conversations(
    user: CurrentUser,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=200, description="How many to return.")] = 50,
    offset: Offset = 0,
) -> ConversationsPublic:
    """The caller's conversations, most recently active first."""
    rows, count = await services.conversations.page(user_id=user.id, limit=limit, offset=offset)
    return ConversationsPublic(data=[_public(row) for row in rows], count=count)


@router.get("/{conversation_id}", response_model=ConversationDetail, responses=errors(401, 404, 422, e404=_NO_SUCH))
async def get_conversation(
    conversation_id: ConversationIdPath, user: CurrentUser, services: ServicesDep
) -> ConversationDetail:
    """A conversation with both tracks of its history."""
    view = await services.conversations.view(user_id=user.id, conversation_id=conversation_id)
    if view is None:
        raise _missing(conversation_id)
    return ConversationDetail(
        **_public(view.conversation).model_dump(),
        full=[_item(i) for i in view.full],
        summarised=[_item(i) for i in view.summarised],
    )


@router.get(
    "/{conversation_id}/items/{item_id}",
    response_model=ItemPublic,
    responses=errors(401, 404, 422, e404="no such conversation or item"),
)
async def get_item(
    conversation_id: ConversationIdPath, item_id: ItemIdPath, user: CurrentUser, services: ServicesDep
) -> ItemPublic:
    """One history item by its ID (q3, q3-t1, q3-r, q3-r-sum…)."""
    item = await services.conversations.item(user_id=user.id, conversation_id=conversation_id, item_id=item_id)
    if item is None:
        raise ApiError(404, "item_not_found", f"no item {item_id} in conversation {conversation_id}", field="item_id")
    return _item(item)


@router.patch(
    "/{conversation_id}", response_model=ConversationPublic, responses=errors(401, 403, 404, 422, e404=_NO_SUCH)
)
async def update_conversation(
    conversation_id: ConversationIdPath, body: ConversationUpdate, user: CurrentUser, services: ServicesDep
) -> ConversationPublic:
    """Rename a conversation, or choose how its questions are answered (`strategy`; null: the default)."""
    changes: dict[str, str | None] = {}
    if "title" in body.model_fields_set:
        changes["title"] = body.title.strip()
    if "strategy" in body.model_fields_set:
        changes["strategy"] = body.strategy
    updated = await services.conversations.update(user_id=user.id, conversation_id=conversation_id, changes=changes)
    if updated is None:
        raise _missing(conversation_id)
    return _public(updated)


@router.delete(
    "/{conversation_id}",
    status_code=204,
    response_class=Response,
    responses=errors(401, 403, 404, 409, 422, e404=_NO_SUCH, e409="the conversation is answering a message"),
)
async def delete_conversation(
    conversation_id: ConversationIdPath, user: CurrentUser, services: ServicesDep
) -> Response:
    """Delete a conversation and all its history."""
    await services.chat.settle_abandoned(user_id=user.id, conversation_id=conversation_id)
    outcome = await services.conversations.delete(user_id=user.id, conversation_id=conversation_id)
    if outcome == "missing":
        raise _missing(conversation_id)
    if outcome == "busy":
        raise ApiError(
            409,
            "conversation_busy",
            f"conversation {conversation_id} is answering a message; stop it or wait until it has finished",
            field="conversation_id",
        )
    return Response(status_code=204)
