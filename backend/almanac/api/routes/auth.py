"""Browser sign-in: an API key (or, on a local run, nothing) is exchanged for an HttpOnly
session cookie, so the web UI never keeps a key where page scripts can read it."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from fastapi import APIRouter, Cookie, Request, Response
from pydantic import BaseModel, Field

from almanac.api.deps import SESSION_COOKIE, ServicesDep
from almanac.api.errors import ApiError
from almanac.api.schemas import UserPublic
from almanac.auth.service import UnknownUser

router = APIRouter(prefix="/api/auth", tags=["account"])


class SessionCreate(BaseModel):
    api_key: str = Field(min_length=1, max_length=300)


class LocalLoginPublic(BaseModel):
    available: bool
    email: str | None = None


def _set_cookie(response: Response, token: str, services: ServicesDep) -> None:
    settings = services.settings
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=int(settings.session_ttl_s),
        httponly=True,
        samesite="strict",
        secure=settings.session_cookie_secure,
        path="/",
    )


def _is_loopback(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host in ("localhost", "testclient")


@router.post("/session", response_model=UserPublic, responses={401: {"description": "invalid API key"}})
async def sign_in(body: SessionCreate, response: Response, services: ServicesDep) -> UserPublic:
    """Exchange an API key for a session cookie (HttpOnly, SameSite=Strict)."""
    user = await services.accounts.authenticate(body.api_key.strip())
    if user is None:
        raise ApiError(401, "unauthorized", "invalid or revoked API key", field="api_key")
    token = await services.accounts.open_session(user_id=user.id, ttl_s=services.settings.session_ttl_s)
    _set_cookie(response, token, services)
    return UserPublic(id=user.id, email=user.email, plan=user.plan)


@router.get("/local", response_model=LocalLoginPublic)
async def local_login_available(request: Request, services: ServicesDep) -> LocalLoginPublic:
    """Whether this server offers key-less sign-in to its local user (local runs, from this machine)."""
    if not (services.settings.local_user and _is_loopback(request)):
        return LocalLoginPublic(available=False)
    return LocalLoginPublic(available=True, email=services.settings.local_user_email)


@router.post("/local", response_model=UserPublic, responses={403: {"description": "not offered here"}})
async def sign_in_locally(request: Request, response: Response, services: ServicesDep) -> UserPublic:
    """Sign in as the local user without a key: only with LOCAL_USER on, and only from this machine."""
    if not (services.settings.local_user and _is_loopback(request)):
        raise ApiError(403, "local_login_unavailable", "key-less sign-in is only offered to local runs, locally")
    try:
        user = await services.accounts.by_email(services.settings.local_user_email)
    except UnknownUser:
        raise ApiError(403, "local_login_unavailable", "this server has no local user") from None
    token = await services.accounts.open_session(user_id=user.id, ttl_s=services.settings.session_ttl_s)
    _set_cookie(response, token, services)
    return UserPublic(id=user.id, email=user.email, plan=user.plan)


@router.delete("/session", status_code=204, response_class=Response)
async def sign_out(
    services: ServicesDep, session: Annotated[str | None, Cookie(alias=SESSION_COOKIE)] = None
) -> Response:
    """End the browser session and clear its cookie."""
    if session:
        await services.accounts.close_session(session)
    response = Response(status_code=204)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response
