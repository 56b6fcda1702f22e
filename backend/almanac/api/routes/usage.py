"""The caller's usage: credits per day and per tool, tokens per model, the questions that cost most."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.errors import ApiError
from almanac.api.responses import errors
from almanac.api.schemas import (
    ErrorPublic,
    UsageDayPublic,
    UsageItemPublic,
    UsageModelPublic,
    UsagePublic,
    UsageQueryPublic,
    UsageUserPublic,
)
from almanac.services import Services
from almanac.usage.service import MAX_DAYS, DayRange, InvalidRange, UsageReport, UsageService, parse_day

router = APIRouter(prefix="/api", tags=["usage"])
USAGE_REFUSALS: dict[int | str, dict[str, Any]] = {
    **errors(401),
    422: {"model": ErrorPublic, "description": "`from` or `to` is not a day (YYYY-MM-DD); `error.field` names it"},
}
DAY_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
FromDay = Annotated[
    str | None,
    Query(
        alias="from",
        pattern=DAY_PATTERN,
        max_length=10,
        json_schema_extra={"format": "date"},
        description="First UTC day (YYYY-MM-DD). Default: 30 days before `to`.",
    ),
]
ToDay = Annotated[
    str | None,
    Query(
        alias="to",
        pattern=DAY_PATTERN,
        max_length=10,
        json_schema_extra={"format": "date"},
        description=f"Last UTC day, inclusive. Default: today. A range longer than {MAX_DAYS} days keeps its "
        "last days; a reversed one is turned round (the response says which days it covers).",
    ),
]


def usage_service(services: Services) -> UsageService:
    assert services.usage is not None  # the composition root always builds it
    return services.usage


def day_range(services: Services, start: str | None, end: str | None) -> DayRange:
    """The requested range, or 422 naming the parameter that is not a day."""
    try:
        return usage_service(services).range(parse_day(start, "from"), parse_day(end, "to"))
    except InvalidRange as exc:
        raise ApiError(
            422, "invalid_request", str(exc), field=exc.field, fields=[{"field": exc.field, "message": str(exc)}]
        ) from None


def usage_public(report: UsageReport) -> UsagePublic:
    """The public form of a usage report."""
    return UsagePublic.model_validate(
        {
            "from": report.range.start.isoformat(),
            "to": report.range.end.isoformat(),
            "credits": report.credits,
            "days": [
                UsageDayPublic(day=d.day, credits=d.daily + d.pack, daily=d.daily, pack=d.pack) for d in report.days
            ],
            "items": [UsageItemPublic.model_validate({**vars(i), "name": i.tool}) for i in report.items],
            "models": [UsageModelPublic(**vars(m), estimated=m.estimated_calls > 0) for m in report.models],
            "top_queries": [UsageQueryPublic(**vars(q)) for q in report.top_queries],
            "top_users": [UsageUserPublic(**vars(u)) for u in report.top_users],
        }
    )


@router.get("/usage", response_model=UsagePublic, responses=USAGE_REFUSALS)
async def get_usage(user: CurrentUser, services: ServicesDep, start: FromDay = None, end: ToDay = None) -> UsagePublic:
    """Where the caller's credits and tokens went, per UTC day from `from` to `to` (inclusive)."""
    days = day_range(services, start, end)
    return usage_public(await usage_service(services).report(user_id=user.id, days=days))
