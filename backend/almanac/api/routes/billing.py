"""Payments: the caller's billing status, Stripe Checkout (Pro or a pack), the customer portal,
and Stripe's webhook (the only way anything is granted)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.errors import ApiError
from almanac.api.responses import errors
from almanac.api.schemas import (
    BillingPublic,
    CheckoutCreate,
    ProductPublic,
    RedirectPublic,
    SubscriptionPublic,
    WebhookPublic,
)
from almanac.billing.errors import (
    AlreadySubscribed,
    InvalidSignature,
    NoBillingAccount,
    PaymentProviderError,
    PaymentsDisabled,
    PaymentsError,
)
from almanac.billing.plans import PACK_CREDITS, PACK_PRICE_USD, PLANS, Plan
from almanac.billing.service import BillingService
from almanac.services import Services
from almanac.storage.billing_events import SubscriptionRecord

router = APIRouter(prefix="/api/billing", tags=["billing"])
_PAYMENT_ERRORS = {
    "e409": "payments are off on this server, or the caller already has Pro / has nothing to manage yet",
    "e502": "the payment provider (Stripe) failed or refused the request; nothing was charged",
}
_WEBHOOK_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"type": "object", "description": "A Stripe event, exactly as Stripe sent it."}
            }
        },
    }
}


def _billing(services: Services) -> BillingService:
    if services.billing is None:  # pragma: no cover - the composition root always builds it
        raise ApiError(409, "payments_disabled", "payments are not configured on this server")
    return services.billing


def _refusal(exc: PaymentsError) -> ApiError:
    if isinstance(exc, PaymentsDisabled):
        return ApiError(409, "payments_disabled", "payments are not configured on this server")
    if isinstance(exc, AlreadySubscribed):
        return ApiError(409, "already_pro", "you already have Pro; manage it in the customer portal")
    if isinstance(exc, NoBillingAccount):
        return ApiError(
            409, "no_billing_account", "you have not paid through Stripe yet, so there is nothing to manage"
        )
    if isinstance(exc, InvalidSignature):
        return ApiError(400, "invalid_signature", str(exc), field="Stripe-Signature")
    if isinstance(exc, PaymentProviderError):
        return ApiError(502, "payment_provider_error", str(exc))
    raise exc  # pragma: no cover - every PaymentsError is mapped above


def _products() -> list[ProductPublic]:
    pro = PLANS[Plan.PRO]
    return [
        ProductPublic(
            id="pro",
            name="Pro",
            price_usd=pro.price_usd_per_month,
            interval="month",
            credits=pro.daily_allowance,
            description=f"{pro.daily_allowance} credits a day (at most {pro.monthly_cap:,} a month)",
        ),
        ProductPublic(
            id="pack",
            name="Credit pack",
            price_usd=PACK_PRICE_USD,
            interval=None,
            credits=PACK_CREDITS,
            description=f"{PACK_CREDITS} credits that never expire, spent after the day's allowance",
        ),
    ]


def subscription_public(record: SubscriptionRecord | None) -> SubscriptionPublic | None:
    if record is None:
        return None
    return SubscriptionPublic(
        status=record.status,
        cancel_at_period_end=record.cancel_at_period_end,
        current_period_end=record.current_period_end,
        payment_failed=record.payment_failed_at is not None,
    )


@router.get("", response_model=BillingPublic, responses=errors(401))
async def get_billing(user: CurrentUser, services: ServicesDep) -> BillingPublic:
    """The caller's plan and subscription, whether this server takes payments, and what it sells."""
    status = await _billing(services).status(user_id=user.id)
    return BillingPublic(
        payments_enabled=status.payments_enabled,
        plan=status.plan,
        subscription=subscription_public(status.subscription),
        portal_available=status.payments_enabled and status.has_billing_account,
        products=_products(),
    )


@router.post("/checkout", response_model=RedirectPublic, responses=errors(401, 403, 409, 422, 502, **_PAYMENT_ERRORS))
async def checkout(body: CheckoutCreate, request: Request, user: CurrentUser, services: ServicesDep) -> RedirectPublic:
    """A Stripe Checkout page for Pro (a monthly subscription) or a credit pack (paid once).
    Nothing is granted when the browser comes back: only Stripe's signed webhook grants."""
    try:
        url = await _billing(services).checkout(user=user, product=body.product, base_url=str(request.base_url))
    except PaymentsError as exc:
        raise _refusal(exc) from None
    return RedirectPublic(url=url)


@router.post("/portal", response_model=RedirectPublic, responses=errors(401, 403, 409, 502, **_PAYMENT_ERRORS))
async def portal(request: Request, user: CurrentUser, services: ServicesDep) -> RedirectPublic:
    """Stripe's customer portal for the caller: cancel or change the subscription, cards, invoices."""
    try:
        url = await _billing(services).portal(user=user, base_url=str(request.base_url))
    except PaymentsError as exc:
        raise _refusal(exc) from None
    return RedirectPublic(url=url)


@router.post(
    "/webhook",
    response_model=WebhookPublic,
    openapi_extra=_WEBHOOK_BODY,
    responses=errors(
        400,
        403,
        409,
        422,
        e400="the Stripe-Signature does not verify (missing, wrong or older than 5 minutes)",
        e409="payments are off on this server",
        e422="the Stripe-Signature header is too long",
    ),
)
async def webhook(
    request: Request,
    services: ServicesDep,
    stripe_signature: Annotated[
        str | None,
        Header(alias="Stripe-Signature", max_length=2_000, description="Stripe's signature (`t=…,v1=…`)."),
    ] = None,
) -> WebhookPublic:
    """Stripe's events (no API key: the signature is the authentication). Each event is applied
    exactly once, whatever the order or number of deliveries."""
    billing = _billing(services)
    try:
        applied = await billing.webhook(payload=await request.body(), signature=stripe_signature)
    except PaymentsError as exc:
        raise _refusal(exc) from None
    return WebhookPublic(received=True, duplicate=applied.duplicate)
