"""The conversation list: newest first, titled from the first message, rename, delete with confirm."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Server
from tests.e2e.pages import wait_answered

pytestmark = pytest.mark.e2e


def test_rename_and_delete_with_confirmation(open_browser: Any, server: Server) -> None:
    _, key = server.new_user()
    older = server.api("POST", "/api/chat", key, json={"message": "First topic"}).json()["conversation_id"]
    server.api("POST", "/api/chat", key, json={"message": "Second topic"}).raise_for_status()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    titles = page.locator(".conv-title")
    titles.nth(1).wait_for()
    assert titles.all_inner_texts() == ["Second topic", "First topic"]  # newest first

    # Rename (Escape cancels; Enter saves).
    page.get_by_role("button", name="Rename “First topic”").click()
    field = page.get_by_label("New title")
    field.fill("Not this")
    field.press("Escape")
    assert titles.all_inner_texts() == ["Second topic", "First topic"]
    page.get_by_role("button", name="Rename “First topic”").click()
    field.fill("Trio cancellation notes")
    field.press("Enter")
    page.locator(".conv-title", has_text="Trio cancellation notes").wait_for()
    assert server.api("GET", f"/api/conversations/{older}", key).json()["title"] == "Trio cancellation notes"
    page.locator(".conv-link", has_text="Trio cancellation notes").click()
    wait_answered(page, 0)
    assert page.locator(".topbar-title").inner_text() == "Trio cancellation notes"

    # Delete asks first (an in-page dialog, not a browser prompt); Cancel keeps it.
    page.get_by_role("button", name="Delete “Trio cancellation notes”").click()
    dialog = page.get_by_role("dialog", name="Delete this conversation?")
    dialog.wait_for()
    browsing.shot("06-delete-confirm")
    dialog.get_by_role("button", name="Cancel").click()
    assert titles.count() == 2
    page.get_by_role("button", name="Delete “Trio cancellation notes”").click()
    with page.expect_response(lambda r: "/api/conversations?limit=" in r.url):  # the list is fetched again
        dialog.get_by_role("button", name="Delete").click()
    page.locator(".conv-title", has_text="Trio cancellation notes").wait_for(state="detached")
    assert titles.all_inner_texts() == ["Second topic"]
    assert page.locator(".conv-more").count() == 0  # no phantom "Show older conversations"
    assert page.url.endswith("/")  # it was open: back to a new chat
    assert server.api("GET", f"/api/conversations/{older}", key).status_code == 404
    assert browsing.watch.dialogs == []


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/c/not-a-uuid", "This conversation does not exist, or it was deleted."),
        ("/c/00000000-0000-4000-8000-000000000000", "This conversation does not exist, or it was deleted."),
        ("/discussions/nope", "This discussion does not exist, or it was deleted."),
        ("/discussions/00000000-0000-4000-8000-000000000000", "This discussion does not exist, or it was deleted."),
    ],
)
def test_a_deep_link_to_nothing_says_so_in_words(open_browser: Any, server: Server, path: str, says: str) -> None:
    _, key = server.new_user()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    page.goto(path)
    page.get_by_role("alert").filter(has_text=says).wait_for()
    text = page.locator("main").inner_text()
    assert "must be a UUID" not in text and "conversation_id" not in text and "discussion_id" not in text
