"""What a user's subscriptions entitle them to, and in which order Stripe's news counts (pure).

- A subscription makes its user Pro while Stripe says `active` or `trialing`, and also while it is
  `past_due`: a renewal payment failed and Stripe is retrying it (the user keeps Pro during those
  retries). `unpaid`, `canceled`, `incomplete`, `incomplete_expired` and `paused` mean Free.
- A cancellation takes effect at the end of the paid period: until then Stripe keeps the
  subscription `active` with `cancel_at_period_end`, and only its deletion (status `canceled`)
  ends Pro.
- Stripe may deliver events late, twice, or out of order. A subscription's state is replaced only
  by an event created later than the one that set it; for events of the same second, a state
  further along (`canceled` over `active` over `incomplete`) wins. `canceled` and
  `incomplete_expired` are final: no event brings such a subscription back.
- An upgrade to Pro raises today's allowance to Pro's at once: the day gets the difference between
  what it was granted and Pro's daily allowance, within what the monthly cap still allows.
"""

from __future__ import annotations

from collections.abc import Iterable

from almanac.billing.plans import Plan, PlanTerms

ENTITLED = frozenset({"active", "trialing", "past_due"})
FINAL = frozenset({"canceled", "incomplete_expired"})
_PROGRESS = {
    "incomplete": 0,
    "trialing": 1,
    "active": 2,
    "past_due": 3,
    "unpaid": 4,
    "paused": 4,
    "incomplete_expired": 5,
    "canceled": 5,
}


def plan_for(statuses: Iterable[str]) -> Plan:
    """The plan a user's subscriptions (their statuses) entitle them to."""
    return Plan.PRO if any(status in ENTITLED for status in statuses) else Plan.FREE


def supersedes(*, new_status: str, new_created: int, old_status: str, old_created: int) -> bool:
    """Whether a subscription state reported by an event created at `new_created` replaces the
    stored one (set by an event created at `old_created`)."""
    if old_status in FINAL:
        return False
    if new_created != old_created:
        return new_created > old_created
    return _PROGRESS.get(new_status, 0) >= _PROGRESS.get(old_status, 0)


def upgrade_top_up(*, terms: PlanTerms, granted_today: int, daily_balance: int, month_used: int) -> int:
    """Credits to add to today's allowance when a user moves to `terms` during the day: up to the
    new daily allowance, and never so much that today's allowance plus what the month already
    spent exceeds the monthly cap."""
    top_up = max(0, terms.daily_allowance - granted_today)
    if terms.monthly_cap is not None:
        top_up = min(top_up, max(0, terms.monthly_cap - month_used - daily_balance))
    return top_up
