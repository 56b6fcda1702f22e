"""axe-core finds no serious or critical WCAG 2.1 A/AA violations: sign-in, a finished chat, the API keys dialog,
in the light and dark themes and on a phone-sized screen."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.a11y import assert_accessible, axe_violations
from tests.e2e.conftest import Server
from tests.e2e.pages import turn, wait_answered

pytestmark = pytest.mark.e2e

PHONE: dict[str, Any] = {
    "viewport": {"width": 390, "height": 844},
    "is_mobile": True,
    "has_touch": True,
    "device_scale_factor": 2,
}
SETTINGS: dict[str, dict[str, Any]] = {
    "light": {"color_scheme": "light"},
    "dark": {"color_scheme": "dark"},
    "phone": {"color_scheme": "light", **PHONE},
}


@pytest.fixture(scope="module")
def answered(server: Server) -> tuple[str, str, str]:
    """A user and a conversation whose answers show a tool card with citations, and a code block."""
    server.require_docs()
    email, key = server.new_user(credits=100)
    first = server.api("POST", "/api/chat", key, json={"message": "How do I use frobnicate.spin?"}).json()
    conversation_id = first["conversation_id"]
    assert first["tools_used"] == ["retrieve_documentation"], first
    follow_up = {"message": "A long tour of Almanac, please", "conversation_id": conversation_id}
    server.api("POST", "/api/chat", key, json=follow_up).raise_for_status()
    return email, key, conversation_id


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_no_serious_accessibility_violations(
    open_browser: Any, server: Server, answered: tuple[str, str, str], setting: str
) -> None:
    email, key, conversation_id = answered
    browsing = open_browser(**SETTINGS[setting])
    page = browsing.page

    page.goto("/")
    page.get_by_role("region", name="Sign in with the local sign-in link").wait_for()
    page.get_by_label("API key").fill("alm_wrong")
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_role("alert").filter(has_text="not valid").wait_for()  # the error state too
    assert_accessible(page, f"the sign-in page ({setting})")
    browsing.shot(f"20-a11y-sign-in-{setting}")

    browsing.sign_in_with_key(key)
    page.goto(f"/c/{conversation_id}")
    first = wait_answered(page, 0)
    wait_answered(page, 1)
    first.locator(".assistant-body > .citations").wait_for()
    assert turn(page, 1).locator(".code-block").count() > 0
    first.locator(".tool-head").click()
    first.locator(".tool-body").wait_for()
    assert_accessible(page, f"a finished chat ({setting})")
    first.evaluate("el => el.scrollIntoView({ block: 'start' })")
    browsing.shot(f"21-a11y-chat-{setting}")

    page.get_by_role("button", name=f"Account: {email}").click()
    page.get_by_role("menuitem", name="API keys").wait_for()
    assert_accessible(page, f"the account menu ({setting})")
    page.get_by_role("menuitem", name="API keys").click()
    dialog = page.get_by_role("dialog", name="API keys")
    dialog.locator(".key-row").first.wait_for()
    dialog.get_by_label("Name of a new key").fill(f"a11y {setting}")
    dialog.get_by_role("button", name="Create key").click()
    dialog.get_by_test_id("new-key").wait_for()
    assert_accessible(page, f"the API keys dialog ({setting})")
    browsing.shot(f"22-a11y-keys-{setting}")


def test_the_check_finds_violations_when_there_are_some(open_browser: Any, server: Server) -> None:
    """The axe check is not vacuous: text too faint to read and an unlabelled field are reported."""
    browsing = open_browser()
    page = browsing.page
    page.goto("/")
    page.get_by_label("API key").wait_for()
    page.evaluate(
        """() => {
          const faint = document.createElement('p');
          faint.textContent = 'Faint text';
          faint.className = 'a11y-probe';
          document.querySelector('.signin-card').append(faint, document.createElement('input'));
          faint.style.color = '#c8c8c8';
        }"""
    )
    found = {v["id"] for v in axe_violations(page)}
    assert {"color-contrast", "label"} <= found, found
