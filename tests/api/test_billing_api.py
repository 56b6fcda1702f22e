"""Payments over HTTP: Checkout and the portal through the official SDK against a local fake of
Stripe's API, and webhooks signed as Stripe signs them (SQLite and PostgreSQL)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from tests.fakes import stripe_server as fake
from tests.fakes.server import ServerThread
from tests.support import api_client, make_user

from almanac.main import Services


@pytest.fixture
def stripe_api() -> Iterator[tuple[fake.FakeStripe, str]]:
    state = fake.FakeStripe()
    with ServerThread(state.app) as server:
        yield state, server.url


def stripe_settings(url: str) -> dict[str, str]:
    return {
        "stripe_secret_key": fake.SECRET_KEY,
        "stripe_webhook_secret": fake.WEBHOOK_SECRET,
        "stripe_price_pro": fake.PRICE_PRO,
        "stripe_price_pack": fake.PRICE_PACK,
        "stripe_api_base": url,
    }


@dataclass
class Shop:
    services: Services
    client: httpx.AsyncClient  # the buyer's
    anonymous: httpx.AsyncClient  # Stripe's side: no API key
    stripe: fake.FakeStripe
    user_id: str

    async def deliver(self, event: dict[str, Any], **signing: Any) -> httpx.Response:
        body, headers = fake.signed(event, **signing)
        return await self.anonymous.post("/api/billing/webhook", content=body, headers=headers)

    async def credits(self) -> dict[str, Any]:
        return (await self.client.get("/api/credits")).json()  # type: ignore[no-any-return]

    async def checkout(self, product: str) -> str:
        response = await self.client.post("/api/billing/checkout", json={"product": product})
        assert response.status_code == 200, response.text
        url = response.json()["url"]
        return url.rsplit("/", 1)[1]  # the session ID


@pytest.fixture
async def shop(database_url: str, build: Any, stripe_api: tuple[fake.FakeStripe, str]) -> AsyncIterator[Shop]:
    state, url = stripe_api
    services, settings = build(database_url, **stripe_settings(url))
    created = await make_user(services, "buyer@example.com")
    async with (
        api_client(services, settings, created.api_key) as client,
        api_client(services, settings) as anonymous,
    ):
        yield Shop(services, client, anonymous, state, created.user.id)


async def test_with_payments_off_billing_says_so_and_refuses(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    created = await make_user(services)
    async with api_client(services, settings, created.api_key) as client:
        status = (await client.get("/api/billing")).json()
        assert status["payments_enabled"] is False and status["portal_available"] is False
        assert [p["id"] for p in status["products"]] == ["pro", "pack"]
        for path, body in (("/api/billing/checkout", {"product": "pack"}), ("/api/billing/portal", None)):
            refused = await client.post(path, json=body)
            assert (refused.status_code, refused.json()["error"]["code"]) == (409, "payments_disabled")
        body, headers = fake.signed(fake.event("checkout.session.completed", {}))
        hook = await client.post("/api/billing/webhook", content=body, headers=headers)
        assert hook.status_code == 409


async def test_checkout_sends_the_user_to_stripe_and_back_to_the_billing_page(shop: Shop) -> None:
    session_id = await shop.checkout("pro")
    sent = shop.stripe.sessions[session_id]
    assert sent["mode"] == "subscription" and sent["client_reference_id"] == shop.user_id
    success = urlsplit(sent["success_url"])
    assert (success.scheme, success.netloc, success.path) == ("http", "localhost", "/billing")
    assert parse_qs(success.query)["checkout"] == ["success"]
    assert urlsplit(sent["cancel_url"]).path == "/billing"
    assert (await shop.client.get("/api/billing")).json()["portal_available"] is True  # a customer exists now


async def test_nothing_is_granted_by_coming_back_from_checkout(shop: Shop) -> None:
    session_id = await shop.checkout("pack")
    before = await shop.credits()
    success_url = shop.stripe.sessions[session_id]["success_url"].replace("{CHECKOUT_SESSION_ID}", session_id)
    page = await shop.client.get(success_url)
    assert page.status_code in (200, 404)  # the web UI's page (not built here); nothing else happens
    assert await shop.credits() == before


async def test_a_signed_pack_payment_adds_500_credits_once(shop: Shop) -> None:
    session_id = await shop.checkout("pack")
    (completed,) = shop.stripe.complete_checkout(session_id)
    first = await shop.deliver(completed)
    assert first.status_code == 200 and first.json() == {"received": True, "duplicate": False}
    replay = await shop.deliver(completed)
    assert replay.status_code == 200 and replay.json()["duplicate"] is True
    credits = await shop.credits()
    assert (credits["buckets"]["pack"], credits["balance"]) == (500, 550)
    assert credits["recent"][0]["reason"].startswith("credit pack bought (Stripe Checkout cs_")


@pytest.mark.parametrize(
    "signing",
    [{"secret": "whsec_not_ours"}, {"timestamp": int(time.time()) - 3600}],
    ids=["another secret", "stale"],
)
async def test_badly_signed_webhooks_are_refused_and_change_nothing(shop: Shop, signing: dict[str, Any]) -> None:
    (completed,) = shop.stripe.complete_checkout(await shop.checkout("pack"))
    refused = await shop.deliver(completed, **signing)
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_signature")
    assert (await shop.credits())["buckets"]["pack"] == 0
    assert (await shop.deliver(completed)).json()["duplicate"] is False  # the genuine delivery still counts


async def test_unsigned_webhooks_are_refused(shop: Shop) -> None:
    (completed,) = shop.stripe.complete_checkout(await shop.checkout("pack"))
    body, _ = fake.signed(completed)
    refused = await shop.anonymous.post(
        "/api/billing/webhook", content=body, headers={"Content-Type": "application/json"}
    )
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_signature")
    assert (await shop.credits())["buckets"]["pack"] == 0


async def test_pro_from_checkout_to_cancellation(shop: Shop) -> None:
    events = shop.stripe.complete_checkout(await shop.checkout("pro"))
    for event in reversed(events):  # Stripe does not promise an order
        assert (await shop.deliver(event)).status_code == 200
    assert (await shop.client.get("/api/me")).json()["plan"] == "pro"
    credits = await shop.credits()
    assert (credits["plan"], credits["left_today"], credits["daily_allowance"]) == ("pro", 150, 150)
    billing = (await shop.client.get("/api/billing")).json()
    assert billing["subscription"]["status"] == "active" and billing["subscription"]["cancel_at_period_end"] is False
    again = await shop.client.post("/api/billing/checkout", json={"product": "pro"})
    assert (again.status_code, again.json()["error"]["code"]) == (409, "already_pro")

    subscription = next(iter(shop.stripe.subscriptions))
    await shop.deliver(shop.stripe.cancel_at_period_end(subscription, now=int(time.time()) + 1))
    billing = (await shop.client.get("/api/billing")).json()
    assert billing["plan"] == "pro" and billing["subscription"]["cancel_at_period_end"] is True
    await shop.deliver(shop.stripe.end_subscription(subscription, now=int(time.time()) + 2))
    assert (await shop.client.get("/api/me")).json()["plan"] == "free"


async def test_the_portal_needs_a_purchase_first(shop: Shop) -> None:
    refused = await shop.client.post("/api/billing/portal")
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "no_billing_account")
    await shop.checkout("pack")
    opened = await shop.client.post("/api/billing/portal")
    assert opened.status_code == 200
    assert opened.json()["url"] == shop.stripe.portal_sessions[0]["url"]
    assert shop.stripe.portal_sessions[0]["return_url"] == "http://localhost/billing"


async def test_a_failing_stripe_is_a_502_and_charges_nothing(shop: Shop) -> None:
    shop.stripe.failures.extend([500, 500, 500, 500])
    failed = await shop.client.post("/api/billing/checkout", json={"product": "pack"})
    assert (failed.status_code, failed.json()["error"]["code"]) == (502, "payment_provider_error")
    assert "500" not in failed.json()["error"]["message"]


async def test_checkout_takes_only_known_products(shop: Shop) -> None:
    refused = await shop.client.post("/api/billing/checkout", json={"product": "gold"})
    assert refused.status_code == 422 and refused.json()["error"]["field"] == "product"


async def test_a_cookie_session_needs_this_sites_origin_to_buy(shop: Shop) -> None:
    """Buying is a state change: the CSRF check covers it like every cookie request."""
    key_client = shop.client
    signed_in = await key_client.post("/api/auth/session", json={"api_key": key_client.headers["Authorization"][7:]})
    cookie = signed_in.cookies.get("almanac_session")
    assert cookie
    foreign = await shop.anonymous.post(
        "/api/billing/checkout",
        json={"product": "pack"},
        headers={"Origin": "https://evil.example", "Cookie": f"almanac_session={cookie}"},
    )
    assert foreign.status_code == 403
