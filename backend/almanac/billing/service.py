"""Payments for the API: Checkout, the customer portal, the billing status, and webhooks.

Off (`payments` None) when STRIPE_SECRET_KEY is unset: every payment operation then raises
`PaymentsDisabled`, and the status says so (the web UI hides its buttons).
"""

from __future__ import annotations

from dataclasses import dataclass

from almanac.billing.errors import AlreadySubscribed, NoBillingAccount, PaymentsDisabled
from almanac.billing.events import Applied, BillingEvents
from almanac.billing.payments import Product, StripePayments
from almanac.billing.plans import Plan
from almanac.storage import billing_events as store
from almanac.storage import users as user_store
from almanac.storage.billing_events import SubscriptionRecord
from almanac.storage.db import Database
from almanac.storage.records import UserRecord


@dataclass(frozen=True)
class BillingStatus:
    payments_enabled: bool
    plan: str
    subscription: SubscriptionRecord | None  # the most recently changed one
    has_billing_account: bool  # a Stripe customer exists: the portal can open


class BillingService:
    def __init__(self, database: Database, events: BillingEvents, payments: StripePayments | None = None) -> None:
        self._db = database
        self.events = events
        self.payments = payments

    @property
    def enabled(self) -> bool:
        return self.payments is not None

    async def checkout(self, *, user: UserRecord, product: Product, base_url: str) -> str:
        """The URL of a Stripe Checkout page for `product`; the user returns to the billing page."""
        payments = self._payments()
        async with self._db.session() as session:
            current = await user_store.get_user(session, user_id=user.id)
        if product == "pro" and current is not None and current.plan == Plan.PRO:
            raise AlreadySubscribed(user.id)
        customer_id = await self._customer(payments, user)
        page = f"{base_url.rstrip('/')}/billing"
        checkout = await payments.create_checkout(
            user_id=user.id,
            customer_id=customer_id,
            product=product,
            success_url=f"{page}?checkout=success&product={product}&session_id={{CHECKOUT_SESSION_ID}}",
            cancel_url=f"{page}?checkout=cancelled&product={product}",
        )
        return checkout.url

    async def portal(self, *, user: UserRecord, base_url: str) -> str:
        """The URL of the user's Stripe customer portal (subscription, cards, invoices)."""
        payments = self._payments()
        async with self._db.session() as session:
            customer_id = await store.customer_of(session, user_id=user.id)
        if customer_id is None:
            raise NoBillingAccount(user.id)
        return await payments.create_portal(customer_id=customer_id, return_url=f"{base_url.rstrip('/')}/billing")

    async def status(self, *, user_id: str) -> BillingStatus:
        """The user's plan and subscription as Stripe's events described them."""
        async with self._db.session() as session:
            user = await user_store.get_user(session, user_id=user_id)
            subscriptions = await store.subscriptions_of(session, user_id=user_id)
            customer_id = await store.customer_of(session, user_id=user_id)
        return BillingStatus(
            payments_enabled=self.enabled,
            plan=user.plan if user is not None else Plan.FREE.value,
            subscription=subscriptions[0] if subscriptions else None,
            has_billing_account=customer_id is not None,
        )

    async def webhook(self, *, payload: bytes, signature: str | None) -> Applied:
        """Verify a webhook delivery and apply its event (once, however often it is delivered)."""
        event = self._payments().verify(payload, signature)
        return await self.events.apply(event)

    async def close(self) -> None:
        if self.payments is not None:
            await self.payments.close()

    def _payments(self) -> StripePayments:
        if self.payments is None:
            raise PaymentsDisabled("payments are not configured on this server (STRIPE_SECRET_KEY)")
        return self.payments

    async def _customer(self, payments: StripePayments, user: UserRecord) -> str:
        """The user's Stripe customer, created on first use (no database session is held while
        Stripe is asked)."""
        async with self._db.session() as session:
            known = await store.customer_of(session, user_id=user.id)
        if known is not None:
            return known
        created = await payments.create_customer(user_id=user.id, email=user.email)
        async with self._db.session() as session:
            return await store.link_customer(session, user_id=user.id, customer_id=created)
