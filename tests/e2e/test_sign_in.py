"""Signing in (local run: the one-time sign-in link; anywhere: an API key) and out; nothing secret is kept."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Server
from tests.e2e.pages import poll

pytestmark = pytest.mark.e2e
LINK_REFUSED = "This sign-in link was already used or is not valid."


def assert_no_link_in_address_bar(page: Any) -> None:
    assert page.evaluate("location.hash") == ""
    assert "sign-in" not in page.url


def test_local_sign_in_link_works_once_leaves_the_address_bar_and_sign_out_ends_it(
    open_browser: Any, server: Server
) -> None:
    browsing = open_browser()
    page = browsing.page

    # Signed out, a local run offers the link (no more key-less button).
    page.goto("/")
    panel = page.get_by_role("region", name="Sign in with the local sign-in link")
    panel.wait_for()
    assert "Local run:" in panel.inner_text() and "data/local-sign-in-url" in panel.inner_text()
    assert page.get_by_role("button", name=f"Continue as {server.local_email}").count() == 0
    page.get_by_label("API key").wait_for()
    browsing.shot("01-signed-out")

    # Opening the link printed by `almanac serve` signs in; the token leaves the address bar.
    link = server.sign_in_link()
    assert link.startswith(server.url + "/#sign-in=")
    page.goto(link)
    page.wait_for_selector("#composer-input")
    assert_no_link_in_address_bar(page)
    assert page.locator(".account-email").inner_text() == server.local_email
    cookies = {c["name"]: c for c in browsing.context.cookies()}
    assert cookies["almanac_session"]["httpOnly"] is True
    assert cookies["almanac_session"]["sameSite"] == "Strict"
    assert "almanac_session" not in page.evaluate("document.cookie")
    assert browsing.context.request.get("/api/me").json()["email"] == server.local_email
    fresh = poll(lambda: (link2 := server.sign_in_link()) != link and link2)  # a new link replaces the used one

    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("API key").wait_for()
    assert page.get_by_text("You are signed out.").is_visible()
    assert browsing.context.request.get("/api/me").status == 401

    # The same link again: refused, with what to do; still signed out.
    page.goto(link)
    refused = page.get_by_role("alert").filter(has_text=LINK_REFUSED)
    refused.wait_for()
    assert "data/local-sign-in-url" in refused.inner_text()
    assert_no_link_in_address_bar(page)
    assert browsing.context.request.get("/api/me").status == 401
    browsing.shot("01b-sign-in-link-used")

    # Pasting the new link (or its bare token) into the form works too.
    field = page.get_by_label("Sign-in link or token")
    field.fill("not a link")
    page.get_by_role("button", name="Sign in with link").click()
    page.get_by_role("alert").filter(has_text=LINK_REFUSED).wait_for()
    field.fill(fresh)
    page.get_by_role("button", name="Sign in with link").click()
    page.wait_for_selector("#composer-input")
    assert page.locator(".account-email").inner_text() == server.local_email


def test_a_sign_in_link_opened_with_a_session_just_enters_and_stays_unused(open_browser: Any, server: Server) -> None:
    email, key = server.new_user()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    link = server.sign_in_link()

    # A fresh page load with the link, and the link pasted into the address bar of an open page.
    other = browsing.context.new_page()
    other.goto(link)
    other.wait_for_selector("#composer-input")
    assert_no_link_in_address_bar(other)
    browsing.page.goto(link)
    assert_no_link_in_address_bar(browsing.page)
    for page in (other, browsing.page):
        assert page.locator(".account-email").inner_text() == email
    # The session was not replaced, and the link was not used up.
    assert browsing.context.request.get("/api/me").json()["email"] == email
    assert server.sign_in_link() == link
    other.close()


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
