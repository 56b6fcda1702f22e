"""Plans and allowances (pure).

Free: 50 credits a day. Pro ($19/month): 150 a day, but at most 3,000 of allowance spent in a
calendar month. Packs of 500 credits ($20) never expire and are spent only after the day's
allowance. Days and months are UTC; an allowance is renewed lazily, on the first use of a new day,
and whatever was left of the previous day's allowance expires then.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum


class Plan(StrEnum):
    FREE = "free"
    PRO = "pro"


@dataclass(frozen=True)
class PlanTerms:
    plan: Plan
    daily_allowance: int
    monthly_cap: int | None
    price_usd_per_month: int


PLANS: dict[Plan, PlanTerms] = {
    Plan.FREE: PlanTerms(Plan.FREE, daily_allowance=50, monthly_cap=None, price_usd_per_month=0),
    Plan.PRO: PlanTerms(Plan.PRO, daily_allowance=150, monthly_cap=3000, price_usd_per_month=19),
}
PACK_CREDITS = 500
PACK_PRICE_USD = 20


def terms_for(plan: str) -> PlanTerms:
    """The terms of a plan by name; unknown names raise ValueError."""
    return PLANS[Plan(plan)]


def day_period(now: datetime) -> str:
    """The UTC day of `now` as YYYY-MM-DD."""
    return now.astimezone(UTC).strftime("%Y-%m-%d")


def month_period(now: datetime) -> str:
    """The UTC month of `now` as YYYY-MM."""
    return now.astimezone(UTC).strftime("%Y-%m")


@dataclass(frozen=True)
class Renewal:
    """What renewing an account for a new day does."""

    expire: int
    grant: int
    daily_period: str
    month_period: str
    month_used: int


def renewal(*, terms: PlanTerms, daily_balance: int, month_used: int, last_month: str, now: datetime) -> Renewal:
    """The renewal for the day of `now`: the old allowance expires, a new one is granted.

    A Pro grant never lets the month's spent allowance exceed the monthly cap.
    """
    this_month = month_period(now)
    used = month_used if last_month == this_month else 0
    grant = terms.daily_allowance
    if terms.monthly_cap is not None:
        grant = max(0, min(grant, terms.monthly_cap - used))
    return Renewal(
        expire=daily_balance, grant=grant, daily_period=day_period(now), month_period=this_month, month_used=used
    )


def how_to_get_more(plan: str, *, payments: bool = True) -> str:
    """What a user out of credits can do, for error messages: wait for the allowance, and buy more
    (`payments`: the server takes payments) or ask the server's operator (it does not)."""
    if not payments:
        allowance = "Your free allowance of 50 credits" if plan == Plan.FREE else "Your daily allowance"
        return (
            f"{allowance} renews at 00:00 UTC. This server does not take payments: ask its operator for more "
            "credits or a plan change."
        )
    if plan == Plan.FREE:
        return (
            "Your free allowance of 50 credits renews at 00:00 UTC. Upgrade to Pro ($19/month, "
            "150 credits a day) or buy a pack of 500 credits ($20, never expires)."
        )
    return "Your daily allowance renews at 00:00 UTC. Buy a pack of 500 credits ($20, never expires)."
