"""The caller's conversations: list, read both tracks, fetch one item, rename, delete."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.errors import ApiError
from almanac.api.schemas import (
    ConversationDetail,
    ConversationPublic,
    ConversationsPublic,
    ConversationUpdate,
    ItemPublic,
)
from almanac.storage.records import ConversationRecord, ItemRecord

router = APIRouter(prefix="/api/conversations", tags=["conversations"])
_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "no such conversation (or not yours)"}}


def _public(conversation: ConversationRecord) -> ConversationPublic:
    return ConversationPublic(
        id=conversation.id,
        title=conversation.title,
        query_count=conversation.query_counter,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
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
    )


def _missing(conversation_id: str) -> ApiError:
    return ApiError(404, "conversation_not_found", f"no conversation {conversation_id}", field="conversation_id")


@router.get("", response_model=ConversationsPublic)
async def list_conversations(
    user: CurrentUser,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> ConversationsPublic:
    """The caller's conversations, most recently active first."""
    rows, count = await services.conversations.page(user_id=user.id, limit=limit, offset=offset)
    return ConversationsPublic(data=[_public(row) for row in rows], count=count)


@router.get("/{conversation_id}", response_model=ConversationDetail, responses=_NOT_FOUND)
async def get_conversation(conversation_id: str, user: CurrentUser, services: ServicesDep) -> ConversationDetail:
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
    responses={404: {"description": "no such conversation or item"}},
)
async def get_item(conversation_id: str, item_id: str, user: CurrentUser, services: ServicesDep) -> ItemPublic:
    """One history item by its ID (q3, q3-t1, q3-r, q3-r-sum…)."""
    item = await services.conversations.item(user_id=user.id, conversation_id=conversation_id, item_id=item_id)
    if item is None:
        raise ApiError(404, "item_not_found", f"no item {item_id} in conversation {conversation_id}", field="item_id")
    return _item(item)


@router.patch("/{conversation_id}", response_model=ConversationPublic, responses=_NOT_FOUND)
async def rename_conversation(
    conversation_id: str, body: ConversationUpdate, user: CurrentUser, services: ServicesDep
) -> ConversationPublic:
    """Rename a conversation."""
    renamed = await services.conversations.rename(
        user_id=user.id, conversation_id=conversation_id, title=body.title.strip() or body.title
    )
    if renamed is None:
        raise _missing(conversation_id)
    return _public(renamed)


@router.delete("/{conversation_id}", status_code=204, response_class=Response, responses=_NOT_FOUND)
async def delete_conversation(conversation_id: str, user: CurrentUser, services: ServicesDep) -> Response:
    """Delete a conversation and all its history."""
    if not await services.conversations.delete(user_id=user.id, conversation_id=conversation_id):
        raise _missing(conversation_id)
    return Response(status_code=204)
