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


@pytest.fixture(scope="module")
def office(server: Server) -> dict[str, str]:
    """An administrator with a conversation (a tool card, a long answer), a discussion, usage, and
    an ordinary user to look at on the Admin page."""
    email = f"a11y-admin-{id(server)}@e2e.test"
    key = server.cli("users", "create", "--email", email, "--admin").strip().splitlines()[-1]
    server.cli("credits", "grant", "--email", email, "--amount", "200", "--reason", "a11y")
    first = server.api("POST", "/api/chat", key, json={"message": "Give me a detailed tour of Almanac"}).json()
    again = {"message": "show me the full answer from earlier", "conversation_id": first["conversation_id"]}
    server.api("POST", "/api/chat", key, json=again).raise_for_status()
    touring = [{"model": "offline", "role": "gives a detailed tour"}, {"model": "offline", "role": "a detailed tour"}]
    held = server.api(
        "POST", "/api/discussions", key, json={"goal": "Tour Almanac", "turns": 2, "participants": touring}
    ).json()
    other, _ = server.new_user()
    other_id = next(
        row["id"]
        for row in server.api("GET", "/api/admin/users", key, params={"search": other}).json()["data"]
        if row["email"] == other
    )
    return {
        "email": email,
        "key": key,
        "conversation": first["conversation_id"],
        "discussion": held["id"],
        "other": other_id,
    }


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_every_page_state_is_accessible(
    open_browser: Any, server: Server, office: dict[str, str], setting: str
) -> None:
    """Every page and dialog a user reaches, in both themes and on a phone: no serious or critical
    axe violations (each state is also photographed, for looking at)."""
    browsing = open_browser(**SETTINGS[setting])
    page = browsing.page
    browsing.sign_in_with_key(office["key"])

    def check(name: str, where: str) -> None:
        assert_accessible(page, f"{where} ({setting})")
        browsing.shot(f"40-{name}-{setting}", full_page=name in ("usage", "admin-user", "discussion-form"))

    page.locator(".welcome").wait_for()
    check("new-chat", "a new chat")
    page.get_by_role("button", name="How to connect a real model").click()
    page.get_by_role("dialog", name="Connect a real model").wait_for()
    check("connect-model", "the connect-a-model dialog")
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Tools").click()
    page.get_by_role("dialog", name="Tools a chat can use").get_by_test_id("tool-list").locator("li").first.wait_for()
    check("tools", "the tools dialog")
    page.keyboard.press("Escape")

    page.goto(f"/c/{office['conversation']}")
    wait_answered(page, 1)
    turn(page, 1).locator(".tool-head").click()
    turn(page, 1).locator(".tool-body").wait_for()
    check("chat", "a conversation with a tool card")
    page.get_by_test_id("credits-badge").click()
    page.get_by_role("region", name="Credits").wait_for()
    check("credits-panel", "the credits panel")
    page.keyboard.press("Escape")
    if setting == "phone":
        page.get_by_role("button", name="Show conversations").click()
    page.locator(".conv-row").first.get_by_role("button", name="Delete", exact=False).click()
    page.get_by_role("dialog", name="Delete this conversation?").wait_for()
    check("delete-confirm", "the delete confirmation")
    page.get_by_role("dialog", name="Delete this conversation?").get_by_role("button", name="Cancel").click()

    for path, name, ready in (
        ("/billing", "billing", lambda: page.get_by_test_id("payments-off").wait_for()),
        ("/usage", "usage", lambda: page.get_by_test_id("usage-total").wait_for()),
        ("/discussions", "discussion-form", lambda: page.get_by_role("form", name="New discussion").wait_for()),
        (
            f"/discussions/{office['discussion']}",
            "discussion",
            lambda: page.get_by_role("region", name="Discussion", exact=True).locator("li.spoken").nth(1).wait_for(),
        ),
        ("/admin", "admin", lambda: page.get_by_test_id("admin-users").wait_for()),
        (f"/admin/users/{office['other']}", "admin-user", lambda: page.get_by_test_id("admin-ledger").wait_for()),
        ("/c/not-a-conversation", "no-such-conversation", lambda: page.get_by_role("alert").wait_for()),
    ):
        page.goto(path)
        ready()
        check(name, f"the page {path}")
    page.goto(f"/admin/users/{office['other']}")
    page.get_by_role("button", name="Disable user").click()
    page.get_by_role("dialog", name="Disable").wait_for()
    check("disable-confirm", "the disable confirmation")
    page.keyboard.press("Escape")
