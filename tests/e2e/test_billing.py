"""Buying a credit pack in the browser with payments on (a local fake of Stripe's API): the page
sends the user to Stripe, the return from Checkout grants nothing, Stripe's signed webhook does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import Server, _open, running_server
from tests.fakes import stripe_server as fake
from tests.fakes.server import ServerThread

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, fake.FakeStripe]]:
    stripe = fake.FakeStripe()
    with ServerThread(stripe.app) as stripe_api:
        settings = {
            "STRIPE_SECRET_KEY": fake.SECRET_KEY,
            "STRIPE_WEBHOOK_SECRET": fake.WEBHOOK_SECRET,
            "STRIPE_PRICE_PRO": fake.PRICE_PRO,
            "STRIPE_PRICE_PACK": fake.PRICE_PACK,
            "STRIPE_API_BASE": stripe_api.url,
        }
        with running_server(Path(tmp_path_factory.mktemp("e2e-shop")), **settings) as server:
            yield server, stripe


def test_buying_a_pack_grants_credits_only_when_stripe_confirms(
    browser: Any, shop: tuple[Server, fake.FakeStripe]
) -> None:
    server, stripe = shop
    _, key = server.new_user()
    browsing = _open(browser, server, viewport={"width": 1280, "height": 820}, color_scheme="light")
    page = browsing.page
    # Stripe's Checkout page is not ours: the browser is stopped there with a stand-in page.
    page.route(
        f"{fake.CHECKOUT_HOST}/**",
        lambda route: route.fulfill(body="<title>Stripe Checkout</title>", content_type="text/html"),
    )
    try:
        browsing.sign_in_with_key(key)
        page.goto("/billing")
        pack = page.get_by_test_id("product-pack")
        pack.get_by_role("button", name="Buy a pack").wait_for()
        assert page.get_by_test_id("product-pro").get_by_role("button", name="Upgrade to Pro").is_visible()
        assert_accessible(page, "the billing page with payments")
        browsing.shot("33-billing")
        pack.get_by_role("button", name="Buy a pack").click()
        page.wait_for_url(f"{fake.CHECKOUT_HOST}/c/pay/**")
        session_id = page.url.rsplit("/", 1)[1]
        assert stripe.sessions[session_id]["client_reference_id"] == server.api("GET", "/api/me", key).json()["id"]
        assert browsing.watch.foreign_requests == [page.url]
        browsing.watch.foreign_requests.clear()  # the one expected: Stripe's page, served by the stand-in

        # Back from Checkout before Stripe's webhook: the page waits, nothing is granted.
        success = stripe.sessions[session_id]["success_url"].replace("{CHECKOUT_SESSION_ID}", session_id)
        assert parse_qs(urlsplit(success).query)["checkout"] == ["success"]
        page.goto(success)
        notice = page.get_by_test_id("checkout-return")
        notice.filter(has_text="Confirming your payment").wait_for()
        assert server.api("GET", "/api/credits", key).json()["buckets"]["pack"] == 0

        (completed,) = stripe.complete_checkout(session_id)
        body, headers = fake.signed(completed)
        forged = httpx.post(
            server.url + "/api/billing/webhook", content=body, headers={**headers, "Stripe-Signature": "t=1,v1=00"}
        )
        assert forged.status_code == 400
        delivered = httpx.post(server.url + "/api/billing/webhook", content=body, headers=headers)
        assert delivered.json() == {"received": True, "duplicate": False}
        notice.filter(has_text="500 credits were added").wait_for()
        page.get_by_test_id("pack-balance").filter(has_text="500 credits").wait_for()
        assert server.api("GET", "/api/credits", key).json()["buckets"]["pack"] == 500
        assert json.loads(httpx.post(server.url + "/api/billing/webhook", content=body, headers=headers).text)[
            "duplicate"
        ]
        browsing.shot("34-billing-confirmed")
        assert browsing.watch.page_errors == [] and browsing.watch.csp_violations == []
        assert browsing.watch.foreign_requests == []
    finally:
        browsing.context.close()
