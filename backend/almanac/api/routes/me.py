"""Who the caller is."""

from __future__ import annotations

from fastapi import APIRouter

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.responses import errors
from almanac.api.schemas import UserPublic, UserUpdate
from almanac.storage.records import UserRecord

router = APIRouter(prefix="/api", tags=["account"])


@router.get("/me", response_model=UserPublic, responses=errors(401))
async def me(user: CurrentUser) -> UserPublic:
    """The authenticated user."""
    return public_user(user)


@router.patch("/me", response_model=UserPublic, responses=errors(401, 403, 422))
async def update_me(body: UserUpdate, user: CurrentUser, services: ServicesDep) -> UserPublic:
    """Change the caller's own preferences (how their questions are answered by default)."""
    updated = await services.accounts.set_default_strategy(user_id=user.id, strategy=body.default_strategy)
    return public_user(updated)


def public_user(user: UserRecord) -> UserPublic:
    return UserPublic(
        id=user.id,
        email=user.email,
        plan=user.plan,
        role=user.role,  # type: ignore[arg-type]
        default_strategy=user.default_strategy,  # type: ignore[arg-type]
    )
