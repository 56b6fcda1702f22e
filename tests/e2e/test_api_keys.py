"""The API keys dialog (account menu): list, create (shown once), revoke; revoking this session's key signs out."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.e2e.conftest import Server

pytestmark = pytest.mark.e2e


def wait_focus(page: Any, text: str) -> None:
    """Wait until the focused element is the one with this text (menus move focus after rendering)."""
    page.wait_for_function("t => document.activeElement?.textContent === t", arg=text)


def open_keys_dialog(browsing: Any, email: str) -> Any:
    page = browsing.page
    page.get_by_role("button", name=f"Account: {email}").click()
    page.get_by_role("menu", name="Account").wait_for()
    browsing.shot("12a-account-menu")
    page.get_by_role("menuitem", name="API keys").click()
    dialog = page.get_by_role("dialog", name="API keys")
    dialog.locator(".key-row").first.wait_for()
    return dialog


def test_create_a_key_shown_once_revoke_it_then_revoke_this_sessions_key(open_browser: Any, server: Server) -> None:
    email, key = server.new_user()
    browsing = open_browser(permissions=["clipboard-read", "clipboard-write"])
    browsing.sign_in_with_key(key)
    page = browsing.page

    dialog = open_keys_dialog(browsing, email)
    rows = dialog.locator(".key-row")
    assert rows.count() == 1
    assert "This session" in rows.first.inner_text()
    assert key.startswith(rows.first.locator(".key-prefix").inner_text().rstrip("…"))

    # Create: the key is shown once, focused and selected, with a copy button and a warning.
    dialog.get_by_label("Name of a new key").fill("e2e script")
    dialog.get_by_role("button", name="Create key").click()
    shown = dialog.get_by_label("The new API key")
    shown.wait_for()
    new_key = shown.input_value()
    assert new_key and new_key != key
    page.wait_for_function("() => document.activeElement?.id === 'new-key-value'")
    assert "it will not be shown again" in dialog.get_by_test_id("new-key").inner_text()
    dialog.get_by_role("button", name="Copy the new key to the clipboard").click()
    dialog.get_by_role("button", name="Copy the new key to the clipboard").filter(has_text="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == new_key
    assert server.api("GET", "/api/me", new_key).json()["email"] == email
    stored = page.evaluate("JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])")
    assert new_key not in stored

    # It is in the list, newest first, by name and prefix.
    rows.nth(1).wait_for()
    assert rows.count() == 2
    newest = rows.first
    assert "e2e script" in newest.inner_text() and "This session" not in newest.inner_text()
    assert new_key.startswith(newest.locator(".key-prefix").inner_text().rstrip("…"))
    browsing.shot("12-api-keys-created")

    dialog.get_by_role("button", name="I have copied it").click()
    dialog.get_by_test_id("new-key").wait_for(state="detached")
    assert new_key not in page.content()

    # Revoke the new key (asks first); this session goes on.
    dialog.get_by_role("button", name=re.compile(r"^Revoke “e2e script”")).click()
    confirm = page.get_by_role("dialog", name="Revoke this key?")
    confirm.wait_for()
    assert "signed out" not in confirm.inner_text()
    confirm.get_by_role("button", name="Revoke").click()
    newest.locator(".badge", has_text="Revoked").wait_for()
    assert newest.get_by_role("button").count() == 0
    assert server.api("GET", "/api/me", new_key).status_code == 401
    assert browsing.context.request.get("/api/me").status == 200

    # Escape closes the dialog and gives focus back to the account button; the keyboard reopens it.
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    account = page.get_by_role("button", name=f"Account: {email}")
    page.wait_for_function(
        "label => document.activeElement?.getAttribute('aria-label') === label", arg=f"Account: {email}"
    )
    page.keyboard.press("Enter")
    wait_focus(page, "API keys")
    page.keyboard.press("ArrowUp")
    wait_focus(page, "Sign out")
    page.keyboard.press("Home")
    wait_focus(page, "API keys")
    page.keyboard.press("Enter")
    dialog.locator(".key-row").nth(1).wait_for()
    assert account.get_attribute("aria-expanded") == "false"

    # Revoking the key this session was made from ends the session: back to the sign-in screen.
    current = dialog.locator(".key-row", has=page.locator(".badge", has_text="This session"))
    current.get_by_role("button", name=re.compile(r"^Revoke")).click()
    confirm.wait_for()
    assert "you will be signed out" in confirm.inner_text()
    browsing.shot("13-api-keys-revoke-current")
    confirm.get_by_role("button", name="Revoke").click()
    page.get_by_label("API key").wait_for()
    page.get_by_role("status").filter(has_text="Your session ended (its API key was revoked).").wait_for()
    assert browsing.context.request.get("/api/me").status == 401
    assert server.api("GET", "/api/me", key).status_code == 401
    assert browsing.watch.dialogs == []
