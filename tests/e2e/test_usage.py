"""The Usage and Billing pages (payments off on this server): charts, tables, no buy buttons."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import Server

pytestmark = pytest.mark.e2e


def _open_menu_item(page: Any, email: str, item: str) -> None:
    page.get_by_role("button", name=f"Account: {email}").click()
    page.get_by_role("menuitem", name=item).click()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_usage_page_charts_where_the_credits_went(open_browser: Any, server: Server, scheme: str) -> None:
    email, key = server.new_user()
    first = server.api("POST", "/api/chat", key, json={"message": "How do I cancel an asyncio task?"}).json()
    second = server.api(
        "POST",
        "/api/chat",
        key,
        json={"message": "show me the full answer from earlier", "conversation_id": first["conversation_id"]},
    ).json()
    spent = first["credits_used"] + second["credits_used"]

    browsing = open_browser(color_scheme=scheme)
    browsing.sign_in_with_key(key)
    page = browsing.page
    _open_menu_item(page, email, "Usage")
    page.wait_for_url("**/usage")
    page.get_by_test_id("usage-total").wait_for()
    assert page.get_by_test_id("usage-total").inner_text() == str(spent)
    chart = page.get_by_test_id("daily-chart")
    assert chart.locator(".chart-bar").count() == 30
    assert chart.locator(".chart-bar").last.get_attribute("data-credits") == str(spent)
    assert "retrieve_full_context" in page.get_by_test_id("tool-mix").inner_text()
    top = page.get_by_test_id("top-queries")
    assert "show me the full answer from earlier" in top.locator("tbody tr").first.inner_text()
    page.get_by_role("button", name="7 days").click()
    page.wait_for_function("() => document.querySelectorAll('[data-testid=daily-chart] .chart-bar').length === 7")
    assert_accessible(page, f"the usage page ({scheme})")
    browsing.shot(f"30-usage-{scheme}")

    top.locator("tbody a").first.click()  # back to the conversation
    page.wait_for_url(f"**/c/{first['conversation_id']}")
    page.locator("article.turn").first.wait_for()


def test_billing_page_without_payments_shows_plans_and_no_buttons(open_browser: Any, server: Server) -> None:
    email, key = server.new_user()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    _open_menu_item(page, email, "Billing")
    page.get_by_test_id("payments-off").wait_for()
    assert page.get_by_test_id("billing-plan").inner_text() == "Free"
    assert "50 of 50" in page.get_by_test_id("left-today").inner_text()
    assert page.get_by_test_id("product-pro").get_by_role("button").count() == 0
    assert page.get_by_test_id("product-pack").get_by_role("button").count() == 0
    assert_accessible(page, "the billing page without payments")
    browsing.shot("31-billing-off")
    # Not an administrator: no Admin entry, and /admin is no page of theirs.
    page.get_by_role("button", name=f"Account: {email}").click()
    assert page.get_by_role("menuitem", name="Admin").count() == 0
    page.keyboard.press("Escape")
    page.goto("/admin")
    page.get_by_text("There is no such page.").wait_for()
