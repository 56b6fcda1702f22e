"""Credits on SQLite and PostgreSQL: lazy UTC-day renewal, allowance before packs, atomic debits,
exact refunds, and a ledger whose sums always equal the balances."""

import asyncio
from datetime import UTC, datetime, timedelta

from almanac.auth.service import AccountService
from almanac.billing.ledger import ChargeContext, CreditService, refund_key
from almanac.storage import credits as store
from almanac.storage.db import Database

CONTEXT = ChargeContext("test")


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


async def new_user(database: Database, plan: str = "free") -> str:
    created = await AccountService(database).create_user(email=f"{plan}-{id(database)}@example.com", plan=plan)
    return created.user.id


async def assert_ledger_matches(database: Database, user_id: str) -> None:
    async with database.session() as session:
        account = await store.get_account(session, user_id=user_id)
        sums = await store.ledger_sums(session, user_id=user_id)
    assert account is not None
    assert account.daily_balance >= 0 and account.pack_balance >= 0
    assert sums.get("daily", 0) == account.daily_balance
    assert sums.get("pack", 0) == account.pack_balance


async def test_first_use_of_a_day_grants_the_allowance(database: Database) -> None:
    user = await new_user(database)
    credits = CreditService(database)
    assert await credits.balance(user_id=user) == 50
    charge = await credits.debit(user_id=user, amount=5, context=CONTEXT)
    assert charge is not None and (charge.from_daily, charge.from_pack, charge.balance_after) == (5, 0, 45)
    await assert_ledger_matches(database, user)


async def test_a_debit_the_balance_cannot_cover_changes_nothing(database: Database) -> None:
    user = await new_user(database)
    credits = CreditService(database)
    assert await credits.debit(user_id=user, amount=51, context=CONTEXT) is None
    assert await credits.balance(user_id=user) == 50
    snapshot = await credits.snapshot(user_id=user)
    assert [row.kind for row in snapshot.recent] == ["allowance"]
    await assert_ledger_matches(database, user)


async def test_the_allowance_is_spent_before_packs_and_refunds_go_back_where_they_came_from(database: Database) -> None:
    user = await new_user(database)
    credits = CreditService(database)
    assert await credits.grant_pack(user_id=user, amount=500, reason="pack") == 550
    charge = await credits.debit(user_id=user, amount=60, context=CONTEXT)
    assert charge is not None and (charge.from_daily, charge.from_pack) == (50, 10)
    snapshot = await credits.snapshot(user_id=user)
    assert (snapshot.account.daily_balance, snapshot.account.pack_balance) == (0, 490)
    await credits.refund(user_id=user, charge=charge, context=CONTEXT)
    snapshot = await credits.snapshot(user_id=user)
    assert (snapshot.account.daily_balance, snapshot.account.pack_balance) == (50, 500)
    await assert_ledger_matches(database, user)


async def test_a_new_utc_day_expires_the_rest_and_renews_lazily(database: Database) -> None:
    user = await new_user(database)
    clock = Clock(datetime(2026, 11, 21, 23, 59, tzinfo=UTC))
    credits = CreditService(database, clock=clock)
    await credits.grant_pack(user_id=user, amount=500, reason="pack")
    await credits.debit(user_id=user, amount=20, context=CONTEXT)
    clock.now += timedelta(minutes=2)
    snapshot = await credits.snapshot(user_id=user)
    assert snapshot.account.daily_period == "2026-11-22"
    assert (snapshot.account.daily_balance, snapshot.account.pack_balance) == (50, 500)
    assert [(row.kind, row.delta) for row in snapshot.recent[:2]] == [("allowance", 50), ("expire", -30)]
    await assert_ledger_matches(database, user)


async def test_pro_allowance_stops_at_the_monthly_cap(database: Database) -> None:
    user = await new_user(database, plan="pro")
    clock = Clock(datetime(2026, 11, 1, 12, tzinfo=UTC))
    credits = CreditService(database, clock=clock)
    granted = 0
    for _day in range(30):
        balance = await credits.balance(user_id=user)
        granted += balance
        if balance:
            assert await credits.debit(user_id=user, amount=balance, context=CONTEXT) is not None
        clock.now += timedelta(days=1)
    assert granted == 3000  # 20 days of 150, then nothing until December
    assert await credits.balance(user_id=user) == 150  # December 1st
    await assert_ledger_matches(database, user)


async def test_debits_never_overspend_under_concurrency(database: Database) -> None:
    user = await new_user(database)
    credits = CreditService(database)
    await credits.grant_pack(user_id=user, amount=50, reason="top-up")  # 100 credits: covers 20 debits of 5
    start = asyncio.Event()

    async def attempt() -> bool:
        await start.wait()
        return await credits.debit(user_id=user, amount=5, context=CONTEXT) is not None

    tasks = [asyncio.create_task(attempt()) for _ in range(50)]
    await asyncio.sleep(0.05)
    start.set()
    results = await asyncio.gather(*tasks)
    assert sum(results) == 20
    assert await credits.balance(user_id=user) == 0
    await assert_ledger_matches(database, user)


async def test_grants_must_be_positive(database: Database) -> None:
    user = await new_user(database)
    credits = CreditService(database)
    for amount in (0, -5):
        try:
            await credits.grant_pack(user_id=user, amount=amount, reason="x")
        except ValueError:
            continue
        raise AssertionError("a non-positive grant was accepted")


async def test_several_debits_at_once_split_across_buckets_in_order(database: Database) -> None:
    user = await new_user(database)
    credits = CreditService(database)
    await credits.grant_pack(user_id=user, amount=10, reason="pack")  # 50 daily + 10 pack
    assert await credits.debit(user_id=user, amount=44, context=CONTEXT) is not None  # 6 daily left
    charges = await credits.debit_many(user_id=user, items=[(3, CONTEXT), (5, CONTEXT), (2, CONTEXT)])
    assert [(c.from_daily, c.from_pack, c.balance_after) for c in charges if c] == [(3, 0, 13), (3, 2, 8), (0, 2, 6)]
    refused = await credits.debit_many(user_id=user, items=[(5, CONTEXT), (9, CONTEXT), (1, CONTEXT)])
    assert [c.amount if c else None for c in refused] == [5, None, 1]
    assert await credits.balance(user_id=user) == 0
    await assert_ledger_matches(database, user)


async def test_a_refund_after_utc_midnight_never_lifts_todays_allowance(database: Database) -> None:
    """The reproduced bug: 300 of a 150 allowance. Credits taken yesterday go back to yesterday,
    which has ended, so they expire again at once; today's allowance stays at its size."""
    user = await new_user(database, plan="pro")
    clock = Clock(datetime(2026, 11, 21, 23, 59, tzinfo=UTC))
    credits = CreditService(database, clock=clock)
    charge = await credits.debit(user_id=user, amount=150, context=CONTEXT)
    assert charge is not None and charge.period == "2026-11-21"
    clock.now += timedelta(minutes=2)
    assert await credits.balance(user_id=user) == 150
    await credits.refund(user_id=user, charge=charge, context=CONTEXT)
    snapshot = await credits.snapshot(user_id=user)
    assert snapshot.account.daily_balance == 150  # not 300
    assert snapshot.account.month_used == 0  # the month got its 150 back: they were never used
    kinds = [(row.kind, row.delta, row.period) for row in snapshot.recent[:2]]
    assert kinds == [("expire", -150, "2026-11-21"), ("refund", 150, "2026-11-21")]
    await assert_ledger_matches(database, user)


async def test_a_refund_after_a_month_end_never_makes_the_months_use_negative(database: Database) -> None:
    user = await new_user(database, plan="pro")
    clock = Clock(datetime(2026, 11, 30, 23, 59, tzinfo=UTC))
    credits = CreditService(database, clock=clock)
    await credits.grant_pack(user_id=user, amount=500, reason="pack")
    charge = await credits.debit(user_id=user, amount=160, context=CONTEXT)
    assert charge is not None and (charge.from_daily, charge.from_pack) == (150, 10)
    clock.now += timedelta(minutes=2)  # 1 December
    spent = await credits.debit(user_id=user, amount=5, context=CONTEXT)
    assert spent is not None
    await credits.refund(user_id=user, charge=charge, context=CONTEXT)
    snapshot = await credits.snapshot(user_id=user)
    assert snapshot.account.month_period == "2026-12"
    assert snapshot.account.month_used == 5  # November's refund does not touch December
    assert snapshot.account.daily_balance == 145 and snapshot.account.pack_balance == 500
    await assert_ledger_matches(database, user)


async def test_a_keyed_refund_happens_once_even_when_raced(database: Database) -> None:
    user = await new_user(database)
    credits = CreditService(database)
    charge = await credits.debit(user_id=user, amount=10, context=CONTEXT)
    assert charge is not None
    done = await asyncio.gather(
        *(credits.refund(user_id=user, charge=charge, context=CONTEXT, key="refund:c:q1:q1-t1") for _ in range(5))
    )
    assert sorted(done) == [False, False, False, False, True]
    assert await credits.balance(user_id=user) == 50
    await assert_ledger_matches(database, user)


async def test_what_a_query_still_holds_is_refunded_once_from_the_ledger(database: Database) -> None:
    user = await new_user(database)
    credits = CreditService(database)
    base = ChargeContext("query", "c1", "q1")
    [paid, tool, refunded_tool] = await credits.debit_many(
        user_id=user,
        items=[
            (5, base),
            (2, ChargeContext("tool", "c1", "q1", "q1-t1")),
            (2, ChargeContext("tool", "c1", "q1", "q1-t2")),
        ],
    )
    assert paid and tool and refunded_tool
    await credits.refund(user_id=user, charge=refunded_tool, context=CONTEXT, key=refund_key("c1", "q1", "q1-t2"))
    assert await credits.balance(user_id=user) == 50 - 7
    given = await credits.refund_remainder(user_id=user, conversation_id="c1", query_id="q1", reason="swept")
    assert given == 7 and await credits.balance(user_id=user) == 50
    again = await credits.refund_remainder(user_id=user, conversation_id="c1", query_id="q1", reason="swept")
    assert again == 0 and await credits.balance(user_id=user) == 50
    await assert_ledger_matches(database, user)
