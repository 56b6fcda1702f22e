"""Browser sign-in: an API key (or, on a local run, the one-time token of the sign-in link that
`almanac serve` prints) is exchanged for an HttpOnly session cookie, so the web UI never keeps a
key where page scripts can read it. Sign-in and sign-out requests that come from a browser page must
come from this server's own pages (`Origin`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Cookie, Request, Response
from pydantic import BaseModel, Field

from almanac.api.deps import ServicesDep, account_disabled, require_same_origin
from almanac.api.errors import ApiError
from almanac.api.guards import SESSION_COOKIE
from almanac.api.responses import errors
from almanac.api.routes.me import public_user
from almanac.api.schemas import NO_NUL_PATTERN, UserPublic
from almanac.auth.service import UnknownUser

router = APIRouter(prefix="/api/auth", tags=["account"])


class SessionCreate(BaseModel):
    api_key: str = Field(min_length=1, max_length=300, pattern=NO_NUL_PATTERN, description="An API key (alm_…).")


class LocalLoginPublic(BaseModel):
    available: bool
    email: str | None = None


class LocalSessionCreate(BaseModel):
    token: str = Field(
        min_length=1,
        max_length=300,
        pattern=NO_NUL_PATTERN,
        description="The token of the sign-in link (after #sign-in=).",
    )


def _set_cookie(response: Response, token: str, services: ServicesDep, request: Request) -> None:
    settings = services.settings
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=int(settings.session_ttl_s),
        httponly=True,
        samesite="strict",
        secure=settings.session_cookie_secure or request.url.scheme == "https",
        path="/",
    )


@router.post(
    "/session",
    response_model=UserPublic,
    responses=errors(
        401,
        403,
        422,
        e401="invalid or revoked API key (`account_disabled`: its owner was disabled)",
        e403="sent from another site's page",
    ),
)
async def sign_in(body: SessionCreate, request: Request, response: Response, services: ServicesDep) -> UserPublic:
    """Exchange an API key for a session cookie (HttpOnly, SameSite=Strict). The session ends when
    the key is revoked."""
    require_same_origin(request, when_absent=False)
    identity = await services.accounts.identify(body.api_key.strip())
    if identity is None:
        if await services.accounts.is_disabled(api_key=body.api_key.strip()):
            raise account_disabled()
        raise ApiError(401, "unauthorized", "invalid or revoked API key", field="api_key")
    user = identity.user
    token = await services.accounts.open_session(
        user_id=user.id, ttl_s=services.settings.session_ttl_s, api_key_id=identity.api_key_id
    )
    _set_cookie(response, token, services, request)
    return public_user(user)


@router.get("/local", response_model=LocalLoginPublic, responses=errors())
async def local_login_available(services: ServicesDep) -> LocalLoginPublic:
    """Whether this server offers key-less sign-in to its local user (local runs, by the one-time
    link `almanac serve` prints and writes to `<DATA_DIR>/local-sign-in-url`)."""
    if services.local_sign_in is None:
        return LocalLoginPublic(available=False)
    return LocalLoginPublic(available=True, email=services.settings.local_user_email)


@router.post(
    "/local",
    response_model=UserPublic,
    responses=errors(
        401,
        403,
        422,
        e401="the local user is disabled (`account_disabled`)",
        e403="not offered here, a wrong or used token, or sent from another site's page",
    ),
)
async def sign_in_locally(
    body: LocalSessionCreate, request: Request, response: Response, services: ServicesDep
) -> UserPublic:
    """Sign in as the local user with the token of the one-time sign-in link (proof that the
    person can read the server's data folder or its terminal)."""
    require_same_origin(request, when_absent=False)
    if services.local_sign_in is None:
        raise ApiError(403, "local_login_unavailable", "key-less sign-in is only offered to local runs")
    if not await services.local_sign_in.redeem(body.token.strip()):
        raise ApiError(
            403,
            "invalid_sign_in_token",
            "that sign-in link is wrong or was already used; open the link in "
            f"{services.local_sign_in.link_file.name} in the server's data folder",
            field="token",
        )
    try:
        user = await services.accounts.by_email(services.settings.local_user_email)
    except UnknownUser:
        raise ApiError(403, "local_login_unavailable", "this server has no local user") from None
    if user.disabled_at is not None:
        raise account_disabled()
    token = await services.accounts.open_session(user_id=user.id, ttl_s=services.settings.session_ttl_s)
    _set_cookie(response, token, services, request)
    return public_user(user)


@router.delete(
    "/session", status_code=204, response_class=Response, responses=errors(403, e403="sent from another site's page")
)
async def sign_out(
    request: Request,
    services: ServicesDep,
    session: Annotated[str | None, Cookie(alias=SESSION_COOKIE, include_in_schema=False)] = None,
) -> Response:
    """End the browser session and clear its cookie."""
    require_same_origin(request, when_absent=False)
    if session:
        await services.accounts.close_session(session)
    response = Response(status_code=204)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response
