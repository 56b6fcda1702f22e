"""Stripe: the only module that imports the `stripe` SDK (one vendor, one module).

It creates customers, Checkout sessions (a subscription for Pro, a one-time payment for a pack)
and customer-portal sessions through the official SDK's async client — pointed at
`STRIPE_API_BASE` when set, so tests and staging talk to a local fake — and verifies webhook
signatures exactly as Stripe signs them (`Stripe-Signature: t=…,v1=HMAC-SHA256(secret, "t.body")`,
at most `tolerance_s` old). Every SDK error becomes a `PaymentProviderError` here, and a failed
verification an `InvalidSignature`; nothing of Stripe's types leaves this module: events are plain
`StripeEvent` values holding Stripe's JSON.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Literal

import stripe

from almanac.billing.errors import InvalidSignature, PaymentProviderError

log = logging.getLogger(__name__)
Product = Literal["pro", "pack"]
USER_KEY = "almanac_user_id"  # the metadata key naming the Almanac user on every Stripe object we create
PRODUCT_KEY = "almanac_product"


@dataclass(frozen=True)
class StripeConfig:
    secret_key: str
    webhook_secret: str
    price_pro: str
    price_pack: str
    api_base: str | None = None  # None: Stripe's own API
    timeout_s: float = 30.0
    max_retries: int = 2
    tolerance_s: int = 300  # how old a signed webhook may be


@dataclass(frozen=True)
class StripeEvent:
    """A verified Stripe event: its ID, type, creation time (Unix seconds) and `data.object`."""

    id: str
    type: str
    created: int
    object: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckoutSession:
    id: str
    url: str


class StripePayments:
    """Stripe's API for Almanac: customers, Checkout, the customer portal, webhook verification."""

    def __init__(self, config: StripeConfig) -> None:
        self.config = config
        self._http = stripe.HTTPXClient(timeout=config.timeout_s)
        self._client = stripe.StripeClient(
            config.secret_key,
            base_addresses={"api": config.api_base.rstrip("/")} if config.api_base else None,
            http_client=self._http,
            max_network_retries=config.max_retries,
        )

    async def create_customer(self, *, user_id: str, email: str) -> str:
        """A Stripe customer for the user; the same one however often this is called for them
        within a day (Stripe's idempotency key)."""
        params: Any = {"email": email, "metadata": {USER_KEY: user_id}}
        customer = await self._call(
            "create a customer",
            self._client.v1.customers.create_async(params, {"idempotency_key": f"almanac-customer-{user_id}"}),
        )
        return str(customer.id)

    async def create_checkout(
        self, *, user_id: str, customer_id: str, product: Product, success_url: str, cancel_url: str
    ) -> CheckoutSession:
        """A Checkout session: Pro as a monthly subscription, or one credit pack as a one-time
        payment. The session, and the subscription or payment it makes, name the user."""
        metadata = {USER_KEY: user_id, PRODUCT_KEY: product}
        params: dict[str, Any] = {
            "customer": customer_id,
            "client_reference_id": user_id,
            "metadata": metadata,
            "success_url": success_url,
            "cancel_url": cancel_url,
        }
        if product == "pro":
            params |= {
                "mode": "subscription",
                "line_items": [{"price": self.config.price_pro, "quantity": 1}],
                "subscription_data": {"metadata": metadata},
            }
        else:
            params |= {
                "mode": "payment",
                "line_items": [{"price": self.config.price_pack, "quantity": 1}],
                "payment_intent_data": {"metadata": metadata},
            }
        session = await self._call("create a Checkout session", self._client.v1.checkout.sessions.create_async(params))  # type: ignore[arg-type]
        if not session.url:
            raise PaymentProviderError("Stripe returned a Checkout session without a URL")
        return CheckoutSession(str(session.id), str(session.url))

    async def create_portal(self, *, customer_id: str, return_url: str) -> str:
        """A customer-portal session's URL (manage or cancel the subscription, cards, invoices)."""
        params: Any = {"customer": customer_id, "return_url": return_url}
        portal = await self._call(
            "open the customer portal", self._client.v1.billing_portal.sessions.create_async(params)
        )
        return str(portal.url)

    def verify(self, payload: bytes, signature: str | None) -> StripeEvent:
        """The event in a webhook body, if `signature` proves Stripe sent it with our secret within
        the tolerance; `InvalidSignature` otherwise (also for a body that is not an event)."""
        try:
            stripe.WebhookSignature.verify_header(
                payload, signature, self.config.webhook_secret, self.config.tolerance_s
            )
            body = json.loads(payload)
        except (stripe.SignatureVerificationError, UnicodeDecodeError, ValueError) as exc:
            raise InvalidSignature("the Stripe-Signature header does not verify (missing, wrong or too old)") from exc
        return event_from(body)

    async def close(self) -> None:
        """Close the HTTP client's connections."""
        try:
            await self._http.close_async()
        except Exception:  # boundary: closing at shutdown must not fail it
            log.debug("closing the Stripe client failed", exc_info=True)

    async def _call(self, what: str, request: Any) -> Any:
        try:
            return await request
        except stripe.StripeError as exc:
            # Stripe's own message may echo parameters; the log gets the kind and Stripe's request ID.
            log.warning("Stripe: could not %s (%s, request %s)", what, type(exc).__name__, exc.request_id or "-")
            raise PaymentProviderError(f"the payment provider could not {what}; try again later") from exc


def event_from(body: Any) -> StripeEvent:
    """A `StripeEvent` from a (verified) event's JSON; `InvalidSignature` if it is not an event."""
    if not isinstance(body, dict) or body.get("object") != "event":
        raise InvalidSignature("the body is not a Stripe event")
    data = body.get("data")
    obj = data.get("object") if isinstance(data, dict) else None
    event_id, event_type, created = body.get("id"), body.get("type"), body.get("created")
    if not (isinstance(event_id, str) and isinstance(event_type, str) and isinstance(created, int)):
        raise InvalidSignature("the event lacks an id, type or created time")
    return StripeEvent(event_id, event_type, created, obj if isinstance(obj, dict) else {})
