"""Liveness and readiness probes."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from almanac.api.deps import ServicesDep
from almanac.api.responses import errors
from almanac.api.schemas import ErrorDetailPublic, HealthPublic

router = APIRouter(tags=["health"])


class UnavailablePublic(HealthPublic):
    error: ErrorDetailPublic


@router.get("/health", response_model=HealthPublic, responses=errors())
async def health() -> HealthPublic:
    """The process is up."""
    return HealthPublic(status="ok")


@router.get(
    "/ready",
    response_model=HealthPublic,
    responses={**errors(), 503: {"model": UnavailablePublic, "description": "the database does not answer"}},
)
async def ready(services: ServicesDep) -> HealthPublic | JSONResponse:
    """The database answers."""
    if await services.database.ping():
        return HealthPublic(status="ready")
    return JSONResponse(
        {"status": "unavailable", "error": {"code": "database_unreachable", "message": "the database does not answer"}},
        status_code=503,
    )
