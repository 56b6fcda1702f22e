"""Running out of credits on a server that takes no payments: the refused message says once what
the user can do — when the allowance comes back (with the time), that the operator grants credits,
with the Billing page a click away — offers no purchase and no "Try again" that would fail, and
offers it again as soon as credits are back."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import Server
from tests.e2e.pages import answer_cost, send, turn, wait_answered, wait_balance

pytestmark = pytest.mark.e2e
PHONE: dict[str, Any] = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


def spend_everything(server: Server, key: str) -> None:
    """Ten answers the offline model gives (long tours, 5 credits each): a Free day's 50 credits."""

    def ask(n: int) -> int:
        message = f"Give me a detailed tour of Almanac, number {n}"
        return server.api("POST", "/api/chat", key, json={"message": message}).status_code

    with ThreadPoolExecutor(max_workers=5) as pool:
        assert list(pool.map(ask, range(10))) == [200] * 10
    assert server.api("GET", "/api/credits", key).json()["balance"] == 0


@pytest.mark.parametrize("setting", ["light", "dark", "phone"])
def test_out_of_credits_says_what_to_do_once_and_recovers(open_browser: Any, server: Server, setting: str) -> None:
    email, key = server.new_user()  # Free: 50 credits, 10 answers at 5
    spend_everything(server, key)

    options = PHONE if setting == "phone" else {}
    browsing = open_browser(color_scheme="dark" if setting == "dark" else "light", **options)
    browsing.sign_in_with_key(key)
    page = browsing.page
    wait_balance(page, 0)
    assert "empty" in (page.get_by_test_id("credits-badge").get_attribute("class") or "")
    banner = page.get_by_test_id("credits-notice")
    assert "Out of credits" in banner.inner_text()
    assert "00:00 UTC" in banner.get_by_test_id("renewal").inner_text()
    assert "does not take payments" in banner.inner_text()

    send(page, "One more question, please")
    refused = turn(page, 0).get_by_test_id("out-of-credits")
    refused.wait_for()
    text = refused.inner_text()
    assert "You're out of credits" in text
    assert "You have 0 credits; a question needs 5 credits." in text
    assert "Your allowance of 50 credits comes back at 00:00 UTC (in " in text
    assert "This server does not take payments: ask its operator for more credits or a plan change." in text
    assert "Upgrade" not in text and "$" not in text  # nothing to buy here
    assert refused.get_by_role("button", name="Try again").count() == 0  # it would fail at once
    # Said once: the card replaces the banner.
    assert page.get_by_test_id("credits-notice").count() == 0
    assert page.get_by_text("does not take payments").count() == 1
    assert_accessible(page, f"the out-of-credits card ({setting})")
    browsing.shot(f"07-out-of-credits-{setting}", full_page=False)

    # The credits panel leads to Billing too.
    page.get_by_test_id("credits-badge").click()
    panel = page.get_by_role("region", name="Credits")
    panel.wait_for()
    assert panel.get_by_role("link", name="Billing: your plan, packs and how to get more credits").is_visible()
    browsing.shot(f"07b-credits-panel-{setting}")
    page.keyboard.press("Escape")

    # The card's link opens the Billing page, which says the same.
    refused.get_by_role("link", name="Your plan and credits").click()
    page.wait_for_url("**/billing")
    page.get_by_test_id("payments-off").wait_for()
    page.go_back()
    refused = turn(page, 0).get_by_test_id("out-of-credits")
    refused.wait_for()

    # The operator grants credits; back on the tab, "Try again" is offered and sends the same message.
    server.cli("credits", "grant", "--email", email, "--amount", "20", "--reason", "e2e top-up")
    page.evaluate("window.dispatchEvent(new Event('focus'))")  # the user comes back to the tab
    retry = refused.get_by_role("button", name="Try again")
    retry.wait_for()
    wait_balance(page, 20)
    retry.click()
    answered = wait_answered(page, 0)
    assert answered.locator(".user-text").inner_text() == "One more question, please"
    assert answer_cost(answered) == 0  # the offline model cannot answer it: free
    wait_balance(page, 20)
