"""Stripe state: customers, subscriptions and the events already applied (each event counts once).

`claim_event` inserts the event's row with `ON CONFLICT DO NOTHING`: in the transaction that applies
the event, so the event row and the ledger rows it causes commit together — or neither does. A
second delivery (even a concurrent one, on PostgreSQL it waits for the first) finds the row and
changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.tables import BillingEvent, StripeCustomer, StripeSubscription, utcnow


@dataclass(frozen=True)
class SubscriptionRecord:
    subscription_id: str
    user_id: str
    status: str
    cancel_at_period_end: bool
    current_period_end: datetime | None
    event_created: int
    payment_failed_at: datetime | None
    updated_at: datetime


@dataclass(frozen=True)
class EventRecord:
    event_id: str
    type: str
    created: int
    user_id: str | None
    outcome: str
    processed_at: datetime


def insert_ignoring_conflicts(session: AsyncSession, table: Any) -> Any:
    """`INSERT … ON CONFLICT DO NOTHING` in the session's dialect (PostgreSQL or SQLite)."""
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    return dialect.insert(table).on_conflict_do_nothing()


async def claim_event(session: AsyncSession, *, event_id: str, type: str, created: int) -> bool:
    """Record that this event is being applied; False if it was applied (or skipped) before."""
    result = await session.execute(
        insert_ignoring_conflicts(session, BillingEvent).values(
            event_id=event_id, type=type[:100], created=created, outcome="", processed_at=utcnow()
        )
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def finish_event(session: AsyncSession, *, event_id: str, user_id: str | None, outcome: str) -> None:
    """Note what applying the event did (for the admin view and the logs)."""
    await session.execute(
        update(BillingEvent).where(BillingEvent.event_id == event_id).values(user_id=user_id, outcome=outcome[:200])
    )


async def recent_events(session: AsyncSession, *, user_id: str, limit: int = 20) -> list[EventRecord]:
    """A user's latest applied events, newest first."""
    rows = await session.execute(
        select(BillingEvent)
        .where(BillingEvent.user_id == user_id)
        .order_by(BillingEvent.created.desc(), BillingEvent.processed_at.desc())
        .limit(limit)
    )
    return [
        EventRecord(row.event_id, row.type, row.created, row.user_id, row.outcome, row.processed_at)
        for row in rows.scalars()
    ]


async def customer_of(session: AsyncSession, *, user_id: str) -> str | None:
    """The user's Stripe customer ID, if they have one."""
    return (
        await session.execute(select(StripeCustomer.customer_id).where(StripeCustomer.user_id == user_id))
    ).scalar_one_or_none()


async def user_of_customer(session: AsyncSession, *, customer_id: str) -> str | None:
    """The user a Stripe customer pays for, if known."""
    return (
        await session.execute(select(StripeCustomer.user_id).where(StripeCustomer.customer_id == customer_id))
    ).scalar_one_or_none()


async def link_customer(session: AsyncSession, *, user_id: str, customer_id: str) -> str:
    """Remember the user's customer unless they already have one; returns the one that counts."""
    await session.execute(
        insert_ignoring_conflicts(session, StripeCustomer).values(
            user_id=user_id, customer_id=customer_id, created_at=utcnow()
        )
    )
    linked = await customer_of(session, user_id=user_id)
    return linked or customer_id


async def get_subscription(session: AsyncSession, *, subscription_id: str) -> SubscriptionRecord | None:
    row = await session.get(StripeSubscription, subscription_id, populate_existing=True)
    return _subscription(row) if row is not None else None


async def subscriptions_of(session: AsyncSession, *, user_id: str) -> list[SubscriptionRecord]:
    """The user's subscriptions, most recently changed first."""
    rows = await session.execute(
        select(StripeSubscription)
        .where(StripeSubscription.user_id == user_id)
        .order_by(StripeSubscription.event_created.desc(), StripeSubscription.subscription_id)
    )
    return [_subscription(row) for row in rows.scalars()]


async def save_subscription(session: AsyncSession, *, record: SubscriptionRecord) -> None:
    """Insert or replace a subscription's row."""
    row = await session.get(StripeSubscription, record.subscription_id)
    values = dict(record.__dict__)
    if row is None:
        session.add(StripeSubscription(**values))
    else:
        for name, value in values.items():
            setattr(row, name, value)
    await session.flush()


def _subscription(row: StripeSubscription) -> SubscriptionRecord:
    return SubscriptionRecord(
        subscription_id=row.subscription_id,
        user_id=row.user_id,
        status=row.status,
        cancel_at_period_end=row.cancel_at_period_end,
        current_period_end=row.current_period_end,
        event_created=row.event_created,
        payment_failed_at=row.payment_failed_at,
        updated_at=row.updated_at,
    )
