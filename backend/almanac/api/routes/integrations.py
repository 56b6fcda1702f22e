"""The caller's own tokens for outside services (GitHub): status (masked), connect or replace,
disconnect. Only the owner ever sees their token, and only masked; it is never logged."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.errors import ApiError
from almanac.api.responses import errors
from almanac.api.schemas import ErrorPublic, IntegrationPublic, IntegrationTokenUpdate
from almanac.integrations import MalformedToken, TokensDisabled, TokenStatus, TokenVault
from almanac.services import Services

router = APIRouter(prefix="/api/integrations", tags=["account"])
_PUT_REFUSALS: dict[int | str, dict[str, Any]] = {
    **errors(401, 403),
    422: {"model": ErrorPublic, "description": "the token cannot be a GitHub token (`error.fields` says why)"},
    409: {
        "model": ErrorPublic,
        "description": "this server has no GitHub tools (`github_unavailable`), or does not keep users' own tokens "
        "(`integration_tokens_disabled`: its operator has not set SECRET_KEY)",
    },
}


def github_available(services: Services) -> bool:
    """Whether a started MCP server runs GitHub tools with each user's own token (else there is
    nothing a token of theirs would be used for)."""
    return services.mcp is not None and "github" in services.mcp.integrations()


def _vault(services: Services) -> TokenVault:
    if services.integrations is None:
        raise ApiError(409, "integration_tokens_disabled", "this server does not keep users' own tokens")
    return services.integrations


def _public(status: TokenStatus, services: Services) -> IntegrationPublic:
    settings = services.settings
    return IntegrationPublic(
        connected=status.connected,
        masked=status.masked,
        updated_at=status.updated_at,
        shared_token_available=settings.github_shared_token and settings.github_personal_access_token is not None,
        available=github_available(services),
    )


@router.get("/github", response_model=IntegrationPublic, responses=errors(401))
async def get_github(user: CurrentUser, services: ServicesDep) -> IntegrationPublic:
    """Whether the caller has connected a GitHub token of their own (masked), and whether the
    operator's token serves users who have none."""
    vault = services.integrations
    status = await vault.status(user_id=user.id, integration="github") if vault else TokenStatus(False)
    return _public(status, services)


@router.put("/github", response_model=IntegrationPublic, responses=_PUT_REFUSALS)
async def put_github(body: IntegrationTokenUpdate, user: CurrentUser, services: ServicesDep) -> IntegrationPublic:
    """Connect (or replace) the caller's GitHub token: the GitHub tools then run with it. It is
    stored encrypted and shown only masked from now on. Refused (409) where no GitHub tools run."""
    if not github_available(services):
        raise ApiError(
            409,
            "github_unavailable",
            "this server has no GitHub tools (its GitHub MCP server is not configured), so a GitHub token would "
            "not be used",
        )
    try:
        status = await _vault(services).connect(user_id=user.id, integration="github", token=body.token)
    except MalformedToken as exc:
        message = f"token {exc}"
        raise ApiError(
            422, "invalid_token", message, field="token", fields=[{"field": "token", "message": str(exc)}]
        ) from None
    except TokensDisabled as exc:
        raise ApiError(409, "integration_tokens_disabled", str(exc)) from None
    return _public(status, services)


@router.delete("/github", status_code=204, response_class=Response, responses=errors(401, 403))
async def delete_github(user: CurrentUser, services: ServicesDep) -> Response:
    """Forget the caller's GitHub token (nothing happens if there is none)."""
    if services.integrations is not None:
        await services.integrations.disconnect(user_id=user.id, integration="github")
    return Response(status_code=204)
