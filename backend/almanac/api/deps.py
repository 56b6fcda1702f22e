"""Every FastAPI dependency, as `Annotated` aliases routes declare (`ServicesDep`, `CurrentUser`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Cookie, Depends, Header, Request

from almanac.api.errors import ApiError
from almanac.services import Services
from almanac.storage.records import UserRecord


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
SESSION_COOKIE = "almanac_session"


async def get_current_user(
    services: ServicesDep,
    authorization: Annotated[str | None, Header(description="`Bearer <API key>`")] = None,
    session: Annotated[str | None, Cookie(alias=SESSION_COOKIE, include_in_schema=False)] = None,
) -> UserRecord:
    """The user whose API key is in `Authorization: Bearer …` (or, for the web UI, whose session
    cookie is valid); 401 otherwise."""
    if not authorization and session:
        user = await services.accounts.session_user(session)
        if user is None:
            raise ApiError(401, "unauthorized", "the session has expired; sign in again")
        return user
    if not authorization:
        raise ApiError(401, "unauthorized", "missing Authorization header (expected 'Bearer <API key>')")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "unauthorized", "Authorization header must be 'Bearer <API key>'")
    user = await services.accounts.authenticate(token.strip())
    if user is None:
        raise ApiError(401, "unauthorized", "invalid or revoked API key")
    return user


CurrentUser = Annotated[UserRecord, Depends(get_current_user)]
