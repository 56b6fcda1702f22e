"""The caller's credits: balance by bucket, plan, what is left today and this month, recent entries."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.responses import errors
from almanac.api.schemas import BucketsPublic, CreditsPublic, LedgerEntryPublic
from almanac.billing.plans import terms_for
from almanac.billing.pricing import BASE_COST, DOCUMENTATION_COST, GITHUB_TOOL_COST, OTHER_TOOL_COST

router = APIRouter(prefix="/api", tags=["credits"])
PRICES = {
    "query": BASE_COST,
    "retrieve_documentation": DOCUMENTATION_COST,
    "github_tool": GITHUB_TOOL_COST,
    "other_tool": OTHER_TOOL_COST,
}


@router.get("/credits", response_model=CreditsPublic, responses=errors(401, 422))
async def get_credits(
    user: CurrentUser,
    services: ServicesDep,
    recent: Annotated[int, Query(ge=0, le=200, description="How many ledger entries to show.")] = 20,
) -> CreditsPublic:
    """Balances and the latest ledger entries (the allowance renews first if a new UTC day began)."""
    snapshot = await services.credits.snapshot(user_id=user.id, recent=recent)
    account = snapshot.account
    terms = terms_for(account.plan)
    return CreditsPublic(
        plan=account.plan,
        balance=account.balance,
        buckets=BucketsPublic(daily=account.daily_balance, pack=account.pack_balance),
        daily_allowance=terms.daily_allowance,
        left_today=account.daily_balance,
        period=account.daily_period,
        monthly_cap=terms.monthly_cap,
        used_this_month=account.month_used,
        left_this_month=snapshot.left_this_month,
        prices=PRICES,
        recent=[LedgerEntryPublic(**vars(row)) for row in snapshot.recent],
    )
