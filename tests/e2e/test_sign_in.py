"""Signing in (local run without a key, and with an API key) and out; the key is never kept."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Server

pytestmark = pytest.mark.e2e


def test_local_sign_in_sets_an_httponly_cookie_and_sign_out_ends_it(open_browser: Any, server: Server) -> None:
    browsing = open_browser()
    page = browsing.page
    page.goto("/")
    local = page.get_by_role("button", name=f"Continue as {server.local_email}")
    local.wait_for()
    page.get_by_label("API key").wait_for()
    browsing.shot("01-signed-out")

    local.click()
    page.wait_for_selector("#composer-input")
    assert page.locator(".account-email").inner_text() == server.local_email
    cookies = {c["name"]: c for c in browsing.context.cookies()}
    assert cookies["almanac_session"]["httpOnly"] is True
    assert cookies["almanac_session"]["sameSite"] == "Strict"
    assert "almanac_session" not in page.evaluate("document.cookie")

    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("API key").wait_for()
    assert page.get_by_text("You are signed out.").is_visible()
    assert browsing.context.request.get("/api/me").status == 401


def test_sign_in_with_an_api_key_keeps_no_key_in_the_page(open_browser: Any, server: Server) -> None:
    email, key = server.new_user()
    browsing = open_browser()
    page = browsing.page
    page.goto("/")
    field = page.get_by_label("API key")
    field.fill("alm_not-a-real-key")
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_role("alert").filter(has_text="not valid").wait_for()

    field.fill(key)
    field.press("Enter")
    page.wait_for_selector("#composer-input")
    assert page.locator(".account-email").inner_text() == email
    stored = page.evaluate("JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])")
    assert key not in stored
    assert key not in page.content()
    assert "almanac_session" not in page.evaluate("document.cookie")

    page.reload()  # the session cookie keeps the user signed in
    page.wait_for_selector("#composer-input")
    assert page.locator(".account-email").inner_text() == email
