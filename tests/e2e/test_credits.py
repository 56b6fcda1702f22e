"""Running out of credits: the header, the composer and the refused message say what to do."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.e2e.conftest import Server
from tests.e2e.pages import answer_cost, send, turn, wait_answered, wait_balance

pytestmark = pytest.mark.e2e


def test_out_of_credits_is_clear_and_recoverable(open_browser: Any, server: Server) -> None:
    email, key = server.new_user()  # Free: 50 credits, 10 questions at 5

    def ask(n: int) -> int:
        return server.api("POST", "/api/chat", key, json={"message": f"Question number {n}"}).status_code

    with ThreadPoolExecutor(max_workers=5) as pool:
        assert list(pool.map(ask, range(10))) == [200] * 10
    assert server.api("GET", "/api/credits", key).json()["balance"] == 0

    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    wait_balance(page, 0)
    assert "empty" in (page.get_by_test_id("credits-badge").get_attribute("class") or "")
    assert "Out of credits" in page.get_by_test_id("credits-notice").inner_text()

    send(page, "One more question, please")
    refused = turn(page, 0).get_by_test_id("out-of-credits")
    refused.wait_for()
    text = refused.inner_text()
    assert "You're out of credits" in text
    assert "You have 0 credits; a question needs 5 credits." in text
    assert "00:00 UTC" in text  # what the user can do (from the 402's how_to_get_more)
    browsing.shot("07-out-of-credits")
    page.get_by_test_id("credits-badge").click()
    page.get_by_role("region", name="Credits").wait_for()
    browsing.shot("07b-credits-panel")
    page.keyboard.press("Escape")

    # After a top-up, "Try again" sends the same message.
    server.cli("credits", "grant", "--email", email, "--amount", "20", "--reason", "e2e top-up")
    refused.get_by_role("button", name="Try again").click()
    answered = wait_answered(page, 0)
    assert answer_cost(answered) == 5
    assert answered.locator(".user-text").inner_text() == "One more question, please"
    wait_balance(page, 15)
