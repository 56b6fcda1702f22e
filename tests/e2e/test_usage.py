"""The Usage and Billing pages (payments off on this server): charts and tables that name every
charge (discussion turns, tools of deleted chats), readable on a phone; no buy buttons."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import Server

pytestmark = pytest.mark.e2e


def _open_menu_item(page: Any, email: str, item: str) -> None:
    page.get_by_role("button", name=f"Account: {email}").click()
    page.get_by_role("menuitem", name=item).click()


PHONE: dict[str, Any] = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
TOURING = [{"model": "offline", "role": "gives a detailed tour"}, {"model": "offline", "role": "a detailed tour"}]


@pytest.mark.parametrize("setting", ["light", "dark", "phone"])
def test_usage_page_charts_where_the_credits_went(open_browser: Any, server: Server, setting: str) -> None:
    email, key = server.new_user()
    first = server.api("POST", "/api/chat", key, json={"message": "How do I cancel an asyncio task?"}).json()
    second = server.api(
        "POST",
        "/api/chat",
        key,
        json={"message": "show me the full answer from earlier", "conversation_id": first["conversation_id"]},
    ).json()
    # A chat deleted since (its tool charge keeps its tool's name) and a discussion (its turns are
    # named as such, not as deleted conversations).
    gone = server.api("POST", "/api/chat", key, json={"message": "A detailed tour, please"}).json()
    again = {"message": "show me the full answer from earlier", "conversation_id": gone["conversation_id"]}
    gone_cost = gone["credits_used"] + server.api("POST", "/api/chat", key, json=again).json()["credits_used"]
    assert server.api("DELETE", f"/api/conversations/{gone['conversation_id']}", key).status_code == 204
    held = server.api(
        "POST", "/api/discussions", key, json={"goal": "Tour Almanac", "turns": 2, "participants": TOURING}
    ).json()
    spent = first["credits_used"] + second["credits_used"] + gone_cost + held["credits_used"]

    phone = setting == "phone"
    browsing = open_browser(color_scheme="dark" if setting == "dark" else "light", **(PHONE if phone else {}))
    browsing.sign_in_with_key(key)
    page = browsing.page
    _open_menu_item(page, email, "Usage")
    page.wait_for_url("**/usage")
    page.get_by_test_id("usage-total").wait_for()
    assert page.get_by_test_id("usage-total").inner_text() == str(spent)
    chart = page.get_by_test_id("daily-chart")
    assert chart.locator(".chart-bar").count() == 30
    assert chart.locator(".chart-bar").last.get_attribute("data-credits") == str(spent)
    mix = page.get_by_test_id("tool-mix").inner_text()
    assert "retrieve_full_context" in mix and "discussion turns" in mix
    assert "deleted" not in mix  # the deleted chat's tool call kept its name
    items = page.get_by_test_id("usage-items").inner_text()
    assert "tools of deleted conversations" not in items and "discussion turns" in items
    top = page.get_by_test_id("top-queries")
    rows = top.locator("tbody tr").all_inner_texts()
    assert any("Discussion: " in row and "turn 2" in row for row in rows)
    assert not any("(conversation deleted)" in row and "Discussion" in row for row in rows)
    assert "show me the full answer from earlier" in top.inner_text()

    # The Day column keeps a day on one line; chart text keeps a readable size on any screen.
    day = top.locator("tbody tr td:nth-child(2)").first
    assert day.evaluate("el => getComputedStyle(el).whiteSpace") == "nowrap"
    for text in (chart.locator("text.chart-axis").first, page.get_by_test_id("tool-mix").locator("text").first):
        height = text.evaluate("el => el.getBoundingClientRect().height")
        assert height >= 10, height  # ~11–13 px text, not a picture scaled down to 6 px
    # No colour means "packs" in one chart and a tool in the next.
    pack = page.locator(".legend-swatch.bar-pack").evaluate("el => getComputedStyle(el).backgroundColor")
    daily = page.locator(".legend-swatch.bar-daily").evaluate("el => getComputedStyle(el).backgroundColor")
    bars = page.get_by_test_id("tool-mix").locator("rect.mix-bar")
    fills = {bars.nth(i).evaluate("el => getComputedStyle(el).fill") for i in range(bars.count())}
    assert not fills & {pack, daily}, (fills, pack, daily)

    page.get_by_role("button", name="7 days").click()
    page.wait_for_function("() => document.querySelectorAll('[data-testid=daily-chart] .chart-bar').length === 7")
    assert_accessible(page, f"the usage page ({setting})")
    browsing.shot(f"30-usage-{setting}", full_page=True)

    top.get_by_role("link", name="show me the full answer from earlier").click()  # back to the conversation
    page.wait_for_url(f"**/c/{first['conversation_id']}")
    page.locator("article.turn").first.wait_for()
    page.go_back()
    page.get_by_test_id("top-queries").get_by_role("link", name="Discussion: ").first.click()
    page.wait_for_url(f"**/discussions/{held['id']}")


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
