"""Stripe events applied to plans and credits: exactly once however often and in whatever order
they arrive; the event row and the ledger rows commit together (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import func, select
from tests.fakes import stripe_server as fake

from almanac.auth.service import AccountService
from almanac.billing.adjustments import CreditAdjustments
from almanac.billing.events import BillingEvents
from almanac.billing.ledger import ChargeContext, CreditService
from almanac.billing.payments import StripeEvent, event_from
from almanac.storage import billing_events as store
from almanac.storage.db import Database
from almanac.storage.tables import BillingEvent, LedgerEntry


@dataclass
class World:
    database: Database
    credits: CreditService
    events: BillingEvents
    stripe: fake.FakeStripe
    user_id: str

    async def deliver(self, *events: dict[str, Any]) -> list[str]:
        outcomes = []
        for raw in events:
            outcomes.append((await self.events.apply(event_from(raw))).outcome)
        return outcomes

    async def plan(self) -> str:
        return (await self.credits.snapshot(user_id=self.user_id)).account.plan

    async def buckets(self) -> tuple[int, int]:
        account = (await self.credits.snapshot(user_id=self.user_id)).account
        return account.daily_balance, account.pack_balance

    async def ledger_matches_balances(self) -> bool:
        daily, pack = await self.buckets()
        sums = await self.credits.ledger_sums(user_id=self.user_id)
        return (sums.get("daily", 0), sums.get("pack", 0)) == (daily, pack)

    def checkout(self, product: str, customer: str = "cus_test_1") -> str:
        """A Checkout session as our code creates it (see test_payments.py)."""
        self.stripe.customers.setdefault(customer, {"id": customer})
        session_id = f"cs_test_{len(self.stripe.sessions) + 1}"
        metadata = {"almanac_user_id": self.user_id, "almanac_product": product}
        self.stripe.sessions[session_id] = {
            "id": session_id,
            "object": "checkout.session",
            "mode": "subscription" if product == "pro" else "payment",
            "payment_status": "unpaid",
            "customer": customer,
            "client_reference_id": self.user_id,
            "metadata": metadata,
            "subscription": None,
            "_subscription_data": {"metadata": metadata},
        }
        return session_id


@pytest.fixture
async def world(database: Database) -> World:
    credits = CreditService(database)
    created = await AccountService(database).create_user(email="buyer@example.com")
    return World(
        database, credits, BillingEvents(database, CreditAdjustments(credits)), fake.FakeStripe(), created.user.id
    )


async def _event_rows(database: Database) -> int:
    async with database.session() as session:
        return int((await session.execute(select(func.count(BillingEvent.event_id)))).scalar_one())


async def test_a_paid_pack_adds_500_to_the_pack_bucket_once(world: World) -> None:
    completed = world.stripe.complete_checkout(world.checkout("pack"))
    assert await world.deliver(*completed) == ["pack: +500 credits"]
    assert await world.deliver(*completed, *completed) == ["already applied", "already applied"]
    assert await world.buckets() == (50, 500)
    assert await world.ledger_matches_balances()
    assert await _event_rows(world.database) == 1


async def test_two_events_about_one_payment_grant_once(world: World) -> None:
    session_id = world.checkout("pack")
    completed = world.stripe.complete_checkout(session_id)[0]
    again = fake.event("checkout.session.async_payment_succeeded", completed["data"]["object"])
    assert await world.deliver(completed, again) == ["pack: +500 credits", "pack: granted before"]
    assert (await world.buckets())[1] == 500


async def test_nothing_is_granted_before_the_payment_succeeds(world: World) -> None:
    session_id = world.checkout("pack")
    pending = world.stripe.complete_checkout(session_id, paid=False)
    assert await world.deliver(*pending) == ["waiting: the payment has not succeeded yet"]
    assert (await world.buckets())[1] == 0
    world.stripe.sessions[session_id]["payment_status"] = "paid"
    public = {k: v for k, v in world.stripe.sessions[session_id].items() if not k.startswith("_")}
    assert await world.deliver(fake.event("checkout.session.async_payment_succeeded", public)) == ["pack: +500 credits"]
    assert (await world.buckets())[1] == 500


async def test_concurrent_deliveries_of_one_event_grant_once(world: World) -> None:
    event = event_from(world.stripe.complete_checkout(world.checkout("pack"))[0])
    results = await asyncio.gather(*(world.events.apply(event) for _ in range(6)))
    assert sum(not result.duplicate for result in results) == 1
    assert (await world.buckets())[1] == 500
    assert await world.ledger_matches_balances()


@pytest.mark.parametrize("order", ["as sent", "reversed"])
async def test_pro_is_active_at_once_and_today_becomes_a_pro_day(world: World, order: str) -> None:
    await world.credits.debit(user_id=world.user_id, amount=20, context=ChargeContext("query"))
    events = world.stripe.complete_checkout(world.checkout("pro"))
    if order == "reversed":
        events.reverse()
    outcomes = await world.deliver(*events, *events)
    assert any("plan free → pro (+100 credits today)" in outcome for outcome in outcomes)
    assert outcomes[2:] == ["already applied", "already applied"]
    assert await world.plan() == "pro"
    assert await world.buckets() == (130, 0)  # 50 - 20 spent + 100: today's allowance is Pro's 150
    assert await world.ledger_matches_balances()
    async with world.database.session() as session:
        allowance = (
            await session.execute(
                select(LedgerEntry.delta, LedgerEntry.reason).where(
                    LedgerEntry.user_id == world.user_id, LedgerEntry.kind == "allowance", LedgerEntry.delta == 100
                )
            )
        ).all()
    assert len(allowance) == 1
    assert allowance[0][1].startswith(("Pro subscribed", "subscription sub_"))


async def _pro(world: World) -> str:
    events = world.stripe.complete_checkout(world.checkout("pro"), now=1_800_000_000)
    await world.deliver(*events)
    assert await world.plan() == "pro"
    return next(iter(world.stripe.subscriptions))


async def test_a_cancellation_ends_pro_at_the_end_of_the_paid_period(world: World) -> None:
    subscription = await _pro(world)
    cancelled = world.stripe.cancel_at_period_end(subscription, now=1_800_000_100)
    await world.deliver(cancelled)
    assert await world.plan() == "pro"  # paid until the period ends
    async with world.database.session() as session:
        stored = await store.get_subscription(session, subscription_id=subscription)
    assert stored is not None and stored.cancel_at_period_end and stored.current_period_end is not None
    ended = world.stripe.end_subscription(subscription, now=1_800_000_200)
    await world.deliver(ended)
    assert await world.plan() == "free"
    assert await world.buckets() == (150, 0)  # today's allowance stays; tomorrow renews on Free


async def test_news_delivered_late_does_not_undo_newer_news(world: World) -> None:
    subscription = await _pro(world)
    late_update = world.stripe.cancel_at_period_end(subscription, now=1_800_000_100)
    ended = world.stripe.end_subscription(subscription, now=1_800_000_200)
    outcomes = await world.deliver(ended, late_update)
    assert outcomes[1].startswith("stale")
    assert await world.plan() == "free"


async def test_a_deleted_subscription_is_final_even_in_the_same_second(world: World) -> None:
    subscription = await _pro(world)
    ended = world.stripe.end_subscription(subscription, now=1_800_000_500)
    revived = fake.event(
        "customer.subscription.updated", {**ended["data"]["object"], "status": "active"}, created=1_800_000_500
    )
    await world.deliver(ended, revived)
    assert await world.plan() == "free"


async def test_a_failed_renewal_keeps_pro_while_stripe_retries(world: World) -> None:
    subscription = await _pro(world)
    outcomes = await world.deliver(*world.stripe.fail_renewal(subscription, now=1_800_000_300))
    assert outcomes[0] == "payment failed: Pro stays while Stripe retries the payment"
    assert await world.plan() == "pro"
    async with world.database.session() as session:
        stored = await store.get_subscription(session, subscription_id=subscription)
    assert stored is not None and stored.status == "past_due" and stored.payment_failed_at is not None
    # The retries failed for good: Stripe cancels the subscription (or marks it unpaid).
    unpaid = fake.event(
        "customer.subscription.updated",
        {**world.stripe.subscriptions[subscription], "status": "unpaid"},
        created=1_800_000_400,
    )
    await world.deliver(unpaid)
    assert await world.plan() == "free"


async def test_a_paid_invoice_clears_the_failure(world: World) -> None:
    subscription = await _pro(world)
    failed, _ = world.stripe.fail_renewal(subscription, now=1_800_000_300)
    paid = fake.event("invoice.paid", failed["data"]["object"], created=1_800_000_400)
    await world.deliver(failed, paid)
    async with world.database.session() as session:
        stored = await store.get_subscription(session, subscription_id=subscription)
    assert stored is not None and stored.payment_failed_at is None


async def test_events_for_unknown_users_are_recorded_and_ignored(world: World) -> None:
    strange = fake.event(
        "checkout.session.completed",
        {"id": "cs_x", "mode": "payment", "payment_status": "paid", "client_reference_id": "nobody"},
    )
    other = fake.event("charge.refunded", {"id": "ch_1"})
    outcomes = await world.deliver(strange, other)
    assert outcomes == [
        "ignored: the Checkout session names no user of this service",
        "ignored: not an event Almanac acts on",
    ]
    assert await _event_rows(world.database) == 2
    assert await world.buckets() == (50, 0)


async def test_a_failure_while_applying_leaves_no_trace(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The event row and the ledger rows commit together: when applying fails, neither stays, so
    Stripe's next delivery applies it."""
    completed = event_from(world.stripe.complete_checkout(world.checkout("pack"))[0])

    async def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(store, "finish_event", broken)
    with pytest.raises(RuntimeError):
        await world.events.apply(completed)
    assert await _event_rows(world.database) == 0
    assert await world.buckets() == (50, 0)
    monkeypatch.undo()
    assert (await world.events.apply(completed)).outcome == "pack: +500 credits"


def test_stripe_event_values_are_plain() -> None:
    event = event_from(fake.event("invoice.paid", {"id": "in_1"}, created=5))
    assert event == StripeEvent(event.id, "invoice.paid", 5, {"id": "in_1"})
