"""Plans: Free 50/day; Pro 150/day with at most 3,000 of allowance spent per month; UTC days."""

from datetime import UTC, datetime, timedelta, timezone

from almanac.billing.plans import PLANS, Plan, day_period, how_to_get_more, month_period, renewal, terms_for


def test_plan_terms() -> None:
    assert PLANS[Plan.FREE].daily_allowance == 50 and PLANS[Plan.FREE].monthly_cap is None
    assert PLANS[Plan.PRO].daily_allowance == 150 and PLANS[Plan.PRO].monthly_cap == 3000
    assert terms_for("pro").price_usd_per_month == 19


def test_periods_are_utc() -> None:
    late_in_new_york = datetime(2026, 1, 31, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    assert day_period(late_in_new_york) == "2026-02-01"
    assert month_period(late_in_new_york) == "2026-02"


def test_renewal_expires_yesterdays_allowance_and_grants_today() -> None:
    change = renewal(
        terms=terms_for("free"),
        daily_balance=12,
        month_used=38,
        last_month="2026-11",
        now=datetime(2026, 11, 22, 8, tzinfo=UTC),
    )
    assert (change.expire, change.grant, change.daily_period, change.month_used) == (12, 50, "2026-11-22", 38)


def test_pro_grant_never_lets_the_month_exceed_its_cap() -> None:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    assert renewal(terms=terms_for("pro"), daily_balance=0, month_used=2900, last_month="2026-11", now=now).grant == 100
    assert renewal(terms=terms_for("pro"), daily_balance=0, month_used=3000, last_month="2026-11", now=now).grant == 0
    assert renewal(terms=terms_for("pro"), daily_balance=0, month_used=100, last_month="2026-11", now=now).grant == 150


def test_a_new_month_resets_the_monthly_usage() -> None:
    change = renewal(
        terms=terms_for("pro"),
        daily_balance=5,
        month_used=3000,
        last_month="2026-10",
        now=datetime(2026, 11, 1, tzinfo=UTC),
    )
    assert (change.grant, change.month_used, change.month_period) == (150, 0, "2026-11")


def test_out_of_credit_advice_names_the_options() -> None:
    assert "Pro" in how_to_get_more("free") and "500" in how_to_get_more("free")
    assert "500" in how_to_get_more("pro")
