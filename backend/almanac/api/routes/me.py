"""Who the caller is."""

from __future__ import annotations

from fastapi import APIRouter

from almanac.api.deps import CurrentUser
from almanac.api.responses import errors
from almanac.api.schemas import UserPublic

router = APIRouter(prefix="/api", tags=["account"])


@router.get("/me", response_model=UserPublic, responses=errors(401))
async def me(user: CurrentUser) -> UserPublic:
    """The authenticated user."""
    return UserPublic(id=user.id, email=user.email, plan=user.plan)
