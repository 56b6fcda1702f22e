"""The Stripe module against a local fake of Stripe's API (the official SDK, real HTTP), and
webhook verification exactly as Stripe signs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from tests.fakes import stripe_server as fake
from tests.fakes.server import ServerThread

from almanac.billing.errors import InvalidSignature, PaymentProviderError
from almanac.billing.payments import StripeConfig, StripePayments


@pytest.fixture
def stripe_api() -> Iterator[tuple[fake.FakeStripe, str]]:
    state = fake.FakeStripe()
    with ServerThread(state.app) as server:
        yield state, server.url


def payments_for(url: str, **changes: object) -> StripePayments:
    values: dict[str, object] = {
        "secret_key": fake.SECRET_KEY,
        "webhook_secret": fake.WEBHOOK_SECRET,
        "price_pro": fake.PRICE_PRO,
        "price_pack": fake.PRICE_PACK,
        "api_base": url,
        "max_retries": 2,
    }
    values.update(changes)
    return StripePayments(StripeConfig(**values))  # type: ignore[arg-type]


async def test_checkout_for_pro_is_a_subscription_that_names_the_user(stripe_api: tuple[fake.FakeStripe, str]) -> None:
    state, url = stripe_api
    payments = payments_for(url)
    try:
        customer = await payments.create_customer(user_id="u-1", email="a@example.com")
        session = await payments.create_checkout(
            user_id="u-1", customer_id=customer, product="pro", success_url="http://ui/ok", cancel_url="http://ui/no"
        )
    finally:
        await payments.close()
    assert session.url == f"{fake.CHECKOUT_HOST}/c/pay/{session.id}"
    sent = state.sessions[session.id]
    assert sent["mode"] == "subscription"
    assert sent["line_items"] == [{"price": fake.PRICE_PRO, "quantity": "1"}]
    assert sent["client_reference_id"] == "u-1"
    assert sent["metadata"] == {"almanac_user_id": "u-1", "almanac_product": "pro"}
    assert sent["_subscription_data"]["metadata"]["almanac_user_id"] == "u-1"  # so subscription events name the user
    assert (sent["customer"], sent["success_url"], sent["cancel_url"]) == (customer, "http://ui/ok", "http://ui/no")
    assert state.customers[customer]["metadata"] == {"almanac_user_id": "u-1"}


async def test_checkout_for_a_pack_is_a_one_time_payment(stripe_api: tuple[fake.FakeStripe, str]) -> None:
    state, url = stripe_api
    payments = payments_for(url)
    try:
        customer = await payments.create_customer(user_id="u-2", email="b@example.com")
        session = await payments.create_checkout(
            user_id="u-2", customer_id=customer, product="pack", success_url="http://ui/ok", cancel_url="http://ui/no"
        )
    finally:
        await payments.close()
    sent = state.sessions[session.id]
    assert (sent["mode"], sent["line_items"][0]["price"]) == ("payment", fake.PRICE_PACK)
    assert sent["metadata"]["almanac_product"] == "pack"


async def test_one_customer_per_user_even_when_asked_twice(stripe_api: tuple[fake.FakeStripe, str]) -> None:
    state, url = stripe_api
    payments = payments_for(url)
    try:
        first = await payments.create_customer(user_id="u-3", email="c@example.com")
        second = await payments.create_customer(user_id="u-3", email="c@example.com")
    finally:
        await payments.close()
    assert first == second and len(state.customers) == 1


async def test_the_portal_opens_for_a_customer(stripe_api: tuple[fake.FakeStripe, str]) -> None:
    state, url = stripe_api
    payments = payments_for(url)
    try:
        customer = await payments.create_customer(user_id="u-4", email="d@example.com")
        portal = await payments.create_portal(customer_id=customer, return_url="http://ui/billing")
    finally:
        await payments.close()
    assert portal == state.portal_sessions[0]["url"]
    assert state.portal_sessions[0]["return_url"] == "http://ui/billing"


@pytest.mark.parametrize(
    "change",
    [{"secret_key": "sk_test_wrong"}, {"price_pro": "price_unknown"}, {"price_pro": fake.PRICE_PACK}],
    ids=["wrong key", "unknown price", "one-time price for a subscription"],
)
async def test_stripe_refusals_become_our_error(
    stripe_api: tuple[fake.FakeStripe, str], change: dict[str, str]
) -> None:
    state, url = stripe_api
    state.customers["cus_known"] = {"id": "cus_known"}
    payments = payments_for(url, **change)
    try:
        with pytest.raises(PaymentProviderError) as caught:
            await payments.create_checkout(
                user_id="u",
                customer_id="cus_known",
                product="pro",
                success_url="http://ui/ok",
                cancel_url="http://ui/no",
            )
    finally:
        await payments.close()
    assert str(caught.value) == "the payment provider could not create a Checkout session; try again later"


async def test_a_failing_stripe_is_retried_then_reported(stripe_api: tuple[fake.FakeStripe, str]) -> None:
    state, url = stripe_api
    payments = payments_for(url, max_retries=1)
    try:
        state.failures.extend([500])
        assert await payments.create_customer(user_id="u-5", email="e@example.com")  # retried once, then fine
        state.failures.extend([500, 500])
        with pytest.raises(PaymentProviderError):
            await payments.create_customer(user_id="u-6", email="f@example.com")
    finally:
        await payments.close()


# --- webhook signatures ------------------------------------------------------------------------


def _payments() -> StripePayments:
    return payments_for("http://127.0.0.1:9")  # never called: verification is local


def test_a_stripe_signed_event_verifies() -> None:
    body, headers = fake.signed(fake.event("checkout.session.completed", {"id": "cs_1", "mode": "payment"}))
    event = _payments().verify(body, headers["Stripe-Signature"])
    assert (event.type, event.object["id"]) == ("checkout.session.completed", "cs_1")
    assert event.id.startswith("evt_") and event.created > 0


def _refused(body: bytes, header: str | None) -> None:
    with pytest.raises(InvalidSignature):
        _payments().verify(body, header)


def test_unsigned_requests_are_refused() -> None:
    body, _ = fake.signed(fake.event("checkout.session.completed", {}))
    _refused(body, None)
    _refused(body, "")


def test_a_signature_with_another_secret_is_refused() -> None:
    body, headers = fake.signed(fake.event("checkout.session.completed", {}), "whsec_someone_else")
    _refused(body, headers["Stripe-Signature"])


def test_a_stale_signature_is_refused() -> None:
    body, headers = fake.signed(fake.event("checkout.session.completed", {}), timestamp=int(time.time()) - 600)
    _refused(body, headers["Stripe-Signature"])


def test_a_changed_body_is_refused() -> None:
    original = fake.event("checkout.session.completed", {"id": "cs_1", "amount_total": 2000})
    _, headers = fake.signed(original)
    tampered = json.dumps({**original, "data": {"object": {"id": "cs_1", "amount_total": 1}}}).encode()
    _refused(tampered, headers["Stripe-Signature"])


@pytest.mark.parametrize("header", ["garbage", "t=abc,v1=00", "v1=" + "0" * 64, "t=1700000000"])
def test_malformed_signatures_are_refused(header: str) -> None:
    body, _ = fake.signed(fake.event("checkout.session.completed", {}))
    _refused(body, header)


def test_a_signed_body_that_is_not_an_event_is_refused() -> None:
    body = b'{"object": "customer", "id": "cus_1"}'
    _refused(body, fake.signature(body))
