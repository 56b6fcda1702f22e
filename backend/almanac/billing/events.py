"""Applying verified Stripe events, each exactly once.

Every event is applied in one transaction that first claims its ID (`billing_events`): a delivery
of an event already claimed changes nothing, and the event's row commits together with the ledger
rows and plan change it causes, or not at all (a failure answers 500 and Stripe delivers again).
Credits are granted only here, from verified events — never from the browser's return from
Checkout.

- `checkout.session.completed` / `checkout.session.async_payment_succeeded`, once paid: a pack adds
  `PACK_CREDITS` to the pack bucket (keyed by the Checkout session, so two events about one
  payment grant once); Pro records the subscription as active and upgrades the user at once.
- `customer.subscription.created|updated|deleted|paused|resumed`: the subscription's new state,
  unless an event created later already set it (see `entitlement.supersedes`); the user's plan
  then follows their subscriptions (`entitlement.plan_for`).
- `invoice.payment_failed`: noted on the subscription (the billing page asks the user to update
  their card). The plan does not change: Stripe marks the subscription `past_due` and retries the
  payment; Pro stays while it does. When the retries fail for good, Stripe cancels the subscription
  (or marks it `unpaid`, as the Stripe account's settings say) and that event ends Pro.
- `invoice.paid`: clears the failed-payment note.
- Anything else, and events for users we do not know, are recorded and ignored.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from almanac.billing.adjustments import CreditAdjustments
from almanac.billing.entitlement import plan_for, supersedes
from almanac.billing.payments import PRODUCT_KEY, USER_KEY, StripeEvent
from almanac.billing.plan_changes import change_plan_in
from almanac.billing.plans import PACK_CREDITS
from almanac.storage import billing_events as store
from almanac.storage import users as user_store
from almanac.storage.db import Database, Session
from almanac.storage.tables import utcnow

log = logging.getLogger(__name__)
PAID = ("paid", "no_payment_required")
SUBSCRIPTION_EVENTS = frozenset(
    {
        "customer.subscription.created",
        "customer.subscription.updated",
        "customer.subscription.deleted",
        "customer.subscription.paused",
        "customer.subscription.resumed",
    }
)


@dataclass(frozen=True)
class Applied:
    """What one delivery did: `duplicate` when the event had been applied before."""

    event_id: str
    outcome: str
    user_id: str | None = None
    duplicate: bool = False


class BillingEvents:
    """Applies Stripe events to plans and credits."""

    def __init__(self, database: Database, adjustments: CreditAdjustments) -> None:
        self._db = database
        self._adjustments = adjustments

    async def apply(self, event: StripeEvent) -> Applied:
        """Apply `event` unless it was applied before; says what happened."""
        async with self._db.session() as session:
            if not await store.claim_event(session, event_id=event.id, type=event.type, created=event.created):
                return Applied(event.id, "already applied", duplicate=True)
            user_id, outcome = await self._dispatch(session, event)
            await store.finish_event(session, event_id=event.id, user_id=user_id, outcome=outcome)
        log.info("Stripe event %s (%s): %s", event.id, event.type, outcome)
        return Applied(event.id, outcome, user_id)

    async def _dispatch(self, session: Session, event: StripeEvent) -> tuple[str | None, str]:
        obj = event.object
        if event.type in ("checkout.session.completed", "checkout.session.async_payment_succeeded"):
            return await self._checkout_paid(session, event, obj)
        if event.type in SUBSCRIPTION_EVENTS:
            return await self._subscription(session, event, obj)
        if event.type in ("invoice.payment_failed", "invoice.paid"):
            return await self._invoice(session, event, obj)
        return None, "ignored: not an event Almanac acts on"

    async def _checkout_paid(self, session: Session, event: StripeEvent, obj: dict[str, Any]) -> tuple[str | None, str]:
        user_id = await _known_user(session, _text(obj.get("client_reference_id")) or _meta(obj, USER_KEY))
        if user_id is None:
            return None, "ignored: the Checkout session names no user of this service"
        customer = _text(obj.get("customer"))
        if customer:
            await store.link_customer(session, user_id=user_id, customer_id=customer)
        if obj.get("payment_status") not in PAID:
            return user_id, "waiting: the payment has not succeeded yet"
        session_id = _text(obj.get("id")) or event.id
        if obj.get("mode") == "payment" and _meta(obj, PRODUCT_KEY) == "pack":
            done = await self._adjustments.grant_in(
                session,
                user_id=user_id,
                bucket="pack",
                amount=PACK_CREDITS,
                reason=f"credit pack bought (Stripe Checkout {session_id})",
                idem_key=f"stripe:checkout:{session_id}",
            )
            return user_id, f"pack: +{PACK_CREDITS} credits" if done.done else "pack: granted before"
        subscription_id = _text(obj.get("subscription"))
        if obj.get("mode") == "subscription" and subscription_id:
            if await store.get_subscription(session, subscription_id=subscription_id) is None:
                await store.save_subscription(
                    session,
                    record=store.SubscriptionRecord(
                        subscription_id, user_id, "active", False, None, event.created, None, utcnow()
                    ),
                )
            return user_id, await self._sync_plan(session, user_id, why=f"Pro subscribed ({subscription_id})")
        return user_id, "ignored: not a Checkout session of ours"

    async def _subscription(self, session: Session, event: StripeEvent, obj: dict[str, Any]) -> tuple[str | None, str]:
        subscription_id = _text(obj.get("id"))
        status = _text(obj.get("status"))
        if not subscription_id or not status:
            return None, "ignored: no subscription in the event"
        stored = await store.get_subscription(session, subscription_id=subscription_id)
        user_id = await _known_user(session, _meta(obj, USER_KEY))
        if user_id is None and stored is not None:
            user_id = stored.user_id
        if user_id is None and _text(obj.get("customer")):
            user_id = await store.user_of_customer(session, customer_id=_text(obj.get("customer")))
        if user_id is None:
            return None, "ignored: the subscription belongs to no user of this service"
        if stored is not None and not supersedes(
            new_status=status, new_created=event.created, old_status=stored.status, old_created=stored.event_created
        ):
            return user_id, f"stale: the subscription is already {stored.status} (from a later event)"
        await store.save_subscription(
            session,
            record=store.SubscriptionRecord(
                subscription_id=subscription_id,
                user_id=user_id,
                status=status,
                cancel_at_period_end=bool(obj.get("cancel_at_period_end")),
                current_period_end=_period_end(obj),
                event_created=event.created,
                payment_failed_at=stored.payment_failed_at if stored is not None else None,
                updated_at=utcnow(),
            ),
        )
        why = f"subscription {subscription_id} {status}" + (
            ", ends at period end" if obj.get("cancel_at_period_end") else ""
        )
        return user_id, await self._sync_plan(session, user_id, why=why)

    async def _invoice(self, session: Session, event: StripeEvent, obj: dict[str, Any]) -> tuple[str | None, str]:
        subscription_id = _invoice_subscription(obj)
        stored = await store.get_subscription(session, subscription_id=subscription_id) if subscription_id else None
        user_id = stored.user_id if stored is not None else None
        if user_id is None and _text(obj.get("customer")):
            user_id = await store.user_of_customer(session, customer_id=_text(obj.get("customer")))
        if stored is None:
            return user_id, "ignored: the invoice is for no subscription we know"
        failed = event.type == "invoice.payment_failed"
        if failed:
            await store.save_subscription(session, record=_with_failure(stored, _at(event.created)))
            return user_id, "payment failed: Pro stays while Stripe retries the payment"
        await store.save_subscription(session, record=_with_failure(stored, None))
        return user_id, "invoice paid"

    async def _sync_plan(self, session: Session, user_id: str, *, why: str) -> str:
        """Put the user on the plan their subscriptions entitle them to."""
        statuses = [row.status for row in await store.subscriptions_of(session, user_id=user_id)]
        plan = plan_for(statuses)
        change = await change_plan_in(session, self._adjustments, user_id=user_id, plan=plan, reason=why)
        if not change.changed:
            return f"{why}; plan stays {change.new}"
        extra = f" (+{change.top_up} credits today)" if change.top_up else ""
        return f"{why}; plan {change.old} → {change.new}{extra}"


async def _known_user(session: Session, user_id: str) -> str | None:
    if not user_id or len(user_id) > 36:
        return None
    return user_id if await user_store.get_user(session, user_id=user_id) is not None else None


def _text(value: Any) -> str:
    """A string field, or the `id` of an expanded object."""
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, str) else ""


def _meta(obj: dict[str, Any], key: str) -> str:
    metadata = obj.get("metadata")
    return _text(metadata.get(key)) if isinstance(metadata, dict) else ""


def _at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _period_end(obj: dict[str, Any]) -> datetime | None:
    """When the paid period ends: on the subscription (older API versions) or its items (newer)."""
    end = obj.get("current_period_end")
    if not isinstance(end, int):
        items = obj.get("items")
        data = items.get("data") if isinstance(items, dict) else None
        ends = [item.get("current_period_end") for item in data or [] if isinstance(item, dict)]
        end = max((value for value in ends if isinstance(value, int)), default=None)
    return _at(end) if isinstance(end, int) else None


def _invoice_subscription(obj: dict[str, Any]) -> str:
    """The subscription an invoice bills: `subscription` (older API versions) or
    `parent.subscription_details.subscription` (newer)."""
    direct = _text(obj.get("subscription"))
    if direct:
        return direct
    parent = obj.get("parent")
    details = parent.get("subscription_details") if isinstance(parent, dict) else None
    return _text(details.get("subscription")) if isinstance(details, dict) else ""


def _with_failure(record: store.SubscriptionRecord, failed_at: datetime | None) -> store.SubscriptionRecord:
    return replace(record, payment_failed_at=failed_at, updated_at=utcnow())
