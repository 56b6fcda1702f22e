"""Every FastAPI dependency, as `Annotated` aliases routes declare (`ServicesDep`, `CurrentUser`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Cookie, Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from almanac.api.errors import ApiError
from almanac.api.guards import CROSS_ORIGIN_MESSAGE, SAFE_METHODS, SESSION_COOKIE, same_origin
from almanac.auth.service import Identity
from almanac.services import Services
from almanac.storage.records import UserRecord


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
# Declares the scheme in OpenAPI (`security: [{ApiKey: []}]`); the header itself is read below, so
# that a malformed one gets its own message.
_BEARER = HTTPBearer(
    auto_error=False, scheme_name="ApiKey", description="`Authorization: Bearer <API key>` (`almanac keys create`)."
)


def require_same_origin(request: Request, *, when_absent: bool = True) -> None:
    """Refuse (403) a state-changing request that a browser sent from another site's page.

    Browsers send `Origin` with every non-GET request, so one without it did not come from a
    page of ours: cookie-authenticated requests that change state must name this server (the
    `RequestGuard` middleware enforces that for every route; this is its second line). Sign-in
    routes (no cookie yet) pass `when_absent=False`: a client that is not a browser sends none."""
    if request.method in SAFE_METHODS:
        return
    origin = request.headers.get("origin")
    if origin is None and not when_absent:
        return
    if not same_origin(origin or "", request.headers.get("host", "")):
        raise ApiError(403, "cross_origin_request", CROSS_ORIGIN_MESSAGE)


IDENTITY_STATE = "almanac_identity"  # request state: the caller `admission` already authenticated


async def authenticate(request: Request, services: Services) -> Identity:
    """The caller by the request's headers alone: the owner of the API key in `Authorization: Bearer
    …`, or (for the web UI) of a valid session cookie — for requests that change state, only from
    our own pages; 401 otherwise. Never reads the body (the admission middleware calls it first)."""
    authorization = request.headers.get("authorization")
    session = request.cookies.get(SESSION_COOKIE)
    if not authorization and session:
        require_same_origin(request)
        identity = await services.accounts.session_identity(session)
        if identity is None:
            if await services.accounts.is_disabled(session_token=session):
                raise account_disabled()
            raise ApiError(401, "unauthorized", "the session has expired or was ended; sign in again")
        return identity
    if not authorization:
        raise ApiError(401, "unauthorized", "missing Authorization header (expected 'Bearer <API key>')")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "unauthorized", "Authorization header must be 'Bearer <API key>'")
    identity = await services.accounts.identify(token.strip())
    if identity is None:
        if await services.accounts.is_disabled(api_key=token.strip()):
            raise account_disabled()
        raise ApiError(401, "unauthorized", "invalid or revoked API key")
    return identity


async def get_current_user(
    request: Request,
    services: ServicesDep,
    _bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_BEARER)] = None,
    _session: Annotated[str | None, Cookie(alias=SESSION_COOKIE, include_in_schema=False)] = None,
) -> UserRecord:
    """The user whose API key is in `Authorization: Bearer …` (or, for the web UI, whose session
    cookie is valid and, for requests that change state, whose page is ours); 401 otherwise. A
    caller the admission middleware already authenticated (before reading the body) is not
    looked up again."""
    identity = getattr(request.state, IDENTITY_STATE, None)
    if not isinstance(identity, Identity):
        identity = await authenticate(request, services)
    request.state.api_key_id = identity.api_key_id
    return identity.user


def account_disabled() -> ApiError:
    """401 for a key or session whose owner an administrator disabled: the client is told why."""
    return ApiError(
        401, "account_disabled", "this account is disabled; ask the operator of this server to enable it again"
    )


def current_key_id(request: Request) -> str | None:
    """The API key the current request authenticated with (directly or through its session)."""
    return getattr(request.state, "api_key_id", None)


CurrentUser = Annotated[UserRecord, Depends(get_current_user)]


async def get_admin_user(user: CurrentUser) -> UserRecord:
    """The caller, if an administrator; anyone else gets 404, as if the route did not exist."""
    if not user.is_admin:
        raise ApiError(404, "not_found", "Not Found")
    return user


AdminUser = Annotated[UserRecord, Depends(get_admin_user)]
