"""What subscriptions entitle a user to, which Stripe news wins, and an upgrade's top-up (pure)."""

import pytest

from almanac.billing.entitlement import plan_for, supersedes, upgrade_top_up
from almanac.billing.plans import PLANS, Plan

PRO = PLANS[Plan.PRO]


@pytest.mark.parametrize(
    ("statuses", "plan"),
    [
        ([], Plan.FREE),
        (["active"], Plan.PRO),
        (["trialing"], Plan.PRO),
        (["past_due"], Plan.PRO),  # Stripe is retrying a failed renewal: Pro stays meanwhile
        (["unpaid"], Plan.FREE),
        (["canceled"], Plan.FREE),
        (["incomplete"], Plan.FREE),
        (["incomplete_expired"], Plan.FREE),
        (["paused"], Plan.FREE),
        (["canceled", "active"], Plan.PRO),  # an old subscription ended, a new one runs
    ],
)
def test_the_plan_follows_the_subscriptions(statuses: list[str], plan: Plan) -> None:
    assert plan_for(statuses) is plan


@pytest.mark.parametrize(
    ("new", "new_at", "old", "old_at", "wins"),
    [
        ("active", 20, "incomplete", 10, True),  # later news wins
        ("incomplete", 10, "active", 20, False),  # older news, delivered late, does not
        ("active", 10, "canceled", 10, False),  # the same second: the state further along wins
        ("canceled", 10, "active", 10, True),
        ("active", 10, "incomplete", 10, True),
        ("past_due", 10, "active", 10, True),
        ("active", 30, "canceled", 20, False),  # canceled is final, whatever comes after
        ("active", 30, "incomplete_expired", 20, False),
        ("active", 10, "active", 10, True),  # the same state again changes nothing harmful
    ],
)
def test_only_newer_news_replaces_a_subscription_state(
    new: str, new_at: int, old: str, old_at: int, wins: bool
) -> None:
    assert supersedes(new_status=new, new_created=new_at, old_status=old, old_created=old_at) is wins


@pytest.mark.parametrize(
    ("granted", "daily", "used", "top_up"),
    [
        (50, 50, 0, 100),  # a fresh Free day becomes a Pro day
        (50, 10, 40, 100),  # what was spent today stays spent; the day still reaches Pro's 150
        (150, 150, 0, 0),  # already a Pro day (the renewal ran on the new plan): nothing more
        (0, 0, 0, 150),  # nothing granted yet today
        (50, 50, 2_900, 50),  # the month cap: 2,900 used + 50 left today + 50 more = 3,000
        (50, 50, 2_950, 0),  # nothing left of the month
        (50, 50, 3_000, 0),  # over it already: never negative
        (200, 200, 0, 0),  # an operator's bigger grant is not taken back
    ],
)
def test_an_upgrade_tops_today_up_to_pro_within_the_month_cap(granted: int, daily: int, used: int, top_up: int) -> None:
    assert upgrade_top_up(terms=PRO, granted_today=granted, daily_balance=daily, month_used=used) == top_up


def test_free_has_no_month_cap() -> None:
    free = PLANS[Plan.FREE]
    assert upgrade_top_up(terms=free, granted_today=0, daily_balance=0, month_used=10_000) == 50
