"""Dark theme (from the system setting) and a phone-sized screen."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Server
from tests.e2e.pages import turn, wait_answered

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def conversation(server: Server) -> tuple[str, str]:
    """A user with a conversation showing code, a table and a tool card."""
    _, key = server.new_user(credits=100)
    first = server.api("POST", "/api/chat", key, json={"message": "A long tour of Almanac, please"}).json()
    conversation_id = first["conversation_id"]
    follow_up = {"message": "show me the full answer from q1", "conversation_id": conversation_id}
    server.api("POST", "/api/chat", key, json=follow_up).raise_for_status()
    return key, conversation_id


def test_dark_theme_follows_the_system(open_browser: Any, server: Server, conversation: tuple[str, str]) -> None:
    key, conversation_id = conversation
    browsing = open_browser(color_scheme="dark", permissions=["clipboard-read", "clipboard-write"])
    browsing.sign_in_with_key(key)
    page = browsing.page
    page.goto(f"/c/{conversation_id}")
    wait_answered(page, 1)
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(21, 22, 26)"

    # Code blocks are highlighted and copy their text.
    block = turn(page, 0).locator(".code-block").first
    assert block.locator(".code-lang").inner_text() == "python"
    assert block.locator(".hljs-keyword").count() > 0
    copy = block.get_by_role("button", name="Copy python to the clipboard")
    copy.click()
    page.wait_for_function("() => document.querySelector('.copy-code')?.textContent === 'Copied'")
    assert page.evaluate("navigator.clipboard.readText()") == block.locator("pre code").inner_text()
    turn(page, 1).locator(".tool-head").click()
    turn(page, 1).evaluate("el => el.scrollIntoView({ block: 'end' })")
    browsing.shot("08-dark-mode")


def test_phone_sized_screen(open_browser: Any, server: Server, conversation: tuple[str, str]) -> None:
    key, conversation_id = conversation
    phone = {"width": 390, "height": 844}
    browsing = open_browser(viewport=phone, is_mobile=True, has_touch=True, device_scale_factor=2)
    browsing.sign_in_with_key(key)
    page = browsing.page
    page.goto(f"/c/{conversation_id}")
    wait_answered(page, 1)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert not page.locator("nav.sidebar").is_visible()
    turn(page, 1).scroll_into_view_if_needed()
    browsing.shot("09-phone")

    menu = page.get_by_role("button", name="Show conversations")
    menu.click()
    sidebar = page.get_by_role("navigation", name="Conversations")
    sidebar.wait_for()
    # The drawer has slid in: its left edge is at the screen's edge.
    page.wait_for_function("() => document.querySelector('nav.sidebar').getBoundingClientRect().left === 0")
    browsing.shot("10-phone-menu")
    page.keyboard.press("Escape")
    sidebar.wait_for(state="hidden")
    assert menu.get_attribute("aria-expanded") == "false"
