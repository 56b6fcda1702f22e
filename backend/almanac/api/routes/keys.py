"""The caller's own API keys: list, create (shown once), revoke (which ends the browser sessions
made from that key at once)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from almanac.api.deps import CurrentUser, ServicesDep, current_key_id
from almanac.api.errors import ApiError
from almanac.api.responses import errors
from almanac.api.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyPublic, ApiKeysPublic, UuidPath
from almanac.storage.records import ApiKeyRecord

router = APIRouter(prefix="/api/keys", tags=["account"])


def _public(key: ApiKeyRecord, current: str | None) -> ApiKeyPublic:
    return ApiKeyPublic(
        id=key.id,
        name=key.name,
        prefix=key.prefix,
        created_at=key.created_at,
        last_used_at=key.last_used_at,
        revoked_at=key.revoked_at,
        current=key.id == current,
    )


@router.get("", response_model=ApiKeysPublic, responses=errors(401))
async def list_keys(request: Request, user: CurrentUser, services: ServicesDep) -> ApiKeysPublic:
    """The caller's keys, newest first (revoked ones included; never the keys themselves)."""
    keys = await services.accounts.keys(user_id=user.id)
    current = current_key_id(request)
    return ApiKeysPublic(data=[_public(key, current) for key in keys], count=len(keys))


@router.post("", response_model=ApiKeyCreated, status_code=201, responses=errors(401, 403, 422))
async def create_key(body: ApiKeyCreate, user: CurrentUser, services: ServicesDep) -> ApiKeyCreated:
    """A new key for the caller; the response is the only time the key itself is shown."""
    record, key = await services.accounts.add_key(user_id=user.id, name=body.name.strip())
    return ApiKeyCreated(**_public(record, None).model_dump(), api_key=key)


@router.delete(
    "/{key_id}",
    status_code=204,
    response_class=Response,
    responses=errors(401, 403, 404, 422, e404="no such active key of yours"),
)
async def revoke_key(key_id: UuidPath, user: CurrentUser, services: ServicesDep) -> Response:
    """Revoke one of the caller's keys. Requests with it get 401 from now on, and the browser
    sessions made from it end at once (revoking the key of this very session signs it out)."""
    if not await services.accounts.revoke_key(user_id=user.id, key_id=key_id):
        raise ApiError(404, "key_not_found", f"no active key {key_id} of yours", field="key_id")
    if services.gateway is not None:
        services.gateway.keys.forget_user(user.id)
    return Response(status_code=204)
