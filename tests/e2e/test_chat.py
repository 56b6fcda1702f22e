"""Chatting in the browser: streaming, tool cards and their full text, credits, reload, stop, keyboard."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Server
from tests.e2e.pages import (
    STOPPED_NOTE,
    answer_cost,
    poll,
    send,
    turn,
    wait_answered,
    wait_balance,
)

pytestmark = pytest.mark.e2e
# Worded so the offline model neither looks up documentation nor writes its long answer: it says it
# cannot answer, and that costs nothing.
QUESTION = "What is structured concurrency in Trio?"


def test_answer_streams_tool_card_expands_to_full_text_credits_drop_and_reload_finds_it(
    open_browser: Any, server: Server
) -> None:
    _, key = server.new_user()  # Free plan: 50 credits today
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    wait_balance(page, 50)

    # The answer streams: part of it is on screen while it is still being written (with a Stop
    # button meanwhile), and more follows until it is complete.
    send(page, QUESTION)
    partial = page.wait_for_function(
        "() => document.querySelector('[data-testid=answer] .markdown.streaming')?.textContent.length || 0"
    ).json_value()
    assert page.get_by_role("button", name="Stop the answer").is_visible()
    browsing.shot("02-streaming")
    first = wait_answered(page, 0)
    final = len(first.locator("[data-testid=answer]").text_content() or "")
    assert 0 < partial < final
    assert "offline model" in first.locator("[data-testid=answer]").inner_text()
    assert answer_cost(first) == 0  # an answer that carries nothing is free…
    assert "Not charged" in first.get_by_test_id("not-charged").inner_text()  # …and says so
    assert first.locator(".answer-model").inner_text() == "almanac-offline"
    wait_balance(page, 50)
    assert re.search(r"/c/[0-9a-f-]{36}$", page.url)
    conversation_id = page.url.rsplit("/", 1)[1]

    # A tool call appears as a card: name, item ID, done, duration, the 2 credits it cost.
    send(page, "show me the full answer from earlier")
    card = turn(page, 1).locator(".tool-card")
    card.wait_for()
    assert "retrieve_full_context" in card.inner_text()
    second = wait_answered(page, 1)
    head = card.locator(".tool-head")
    assert "status-done" in (card.get_attribute("class") or "")
    assert "q2-t1" in head.inner_text() and "Done" in head.inner_text() and "2 credits" in head.inner_text()
    assert re.search(r"\d+ ms", head.inner_text())
    assert answer_cost(second) == 7
    wait_balance(page, 43)
    assert server.api("GET", "/api/credits", key).json()["balance"] == 43

    # Expanded, the card shows its input and summary; "Show full text" fetches the item by ID.
    head.click()
    assert head.get_attribute("aria-expanded") == "true"
    body = card.locator(".tool-body")
    assert '"id": "q1-r"' in body.locator(".tool-json").inner_text()
    assert "q2-t1-sum" in body.inner_text()
    with page.expect_response(lambda r: r.url.endswith(f"/api/conversations/{conversation_id}/items/q2-t1")) as got:
        body.get_by_role("button", name="Show full text (q2-t1)").click()
    assert got.value.status == 200
    full = body.get_by_test_id("tool-full")
    full.wait_for()
    stored = server.api("GET", f"/api/conversations/{conversation_id}/items/q1-r", key).json()["content"]
    last_line = stored.strip().splitlines()[-1]
    assert "Full text of the answer to q1" in full.inner_text()
    assert last_line.replace("`", "").replace("*", "")[:40] in full.inner_text()
    card.evaluate("el => el.scrollIntoView({ block: 'start' })")
    browsing.shot("03-tool-card-expanded")

    # An item ID cited in the answer jumps to its card.
    head.click()  # collapse
    turn(page, 1).locator("[data-testid=answer] button.item-ref[data-item-ref='q2-t1']").first.click()
    assert head.get_attribute("aria-expanded") == "true"
    assert "flash" in (card.get_attribute("class") or "")

    # Reload the deep link: the conversation, its cards and costs come back; it is in the list.
    page.reload()
    wait_answered(page, 1)
    assert page.url.endswith(f"/c/{conversation_id}")
    current = page.locator(".conv-link[aria-current=page]")
    assert current.inner_text().startswith(QUESTION[:20])
    assert page.locator(".topbar-title").inner_text() == QUESTION
    assert answer_cost(turn(page, 0)) == 0 and answer_cost(turn(page, 1)) == 7
    assert "q2-t1" in turn(page, 1).locator(".tool-card").inner_text()
    # A reloaded answer still names the model that wrote it.
    assert turn(page, 1).locator(".answer-model").inner_text() == "almanac-offline"
    wait_balance(page, 43)

    # From a fresh start, the list leads to it.
    page.goto("/")
    page.locator(".welcome").wait_for()
    page.locator(".conv-link", has_text=QUESTION[:20]).click()
    wait_answered(page, 1)
    assert page.url.endswith(f"/c/{conversation_id}")


def test_stop_cancels_a_long_answer_on_the_server(open_browser: Any, server: Server) -> None:
    _, key = server.new_user()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    wait_balance(page, 50)

    send(page, "Give me a detailed tour of how Almanac works")
    answer = turn(page, 0).locator("[data-testid=answer]")
    page.wait_for_function(
        "() => (document.querySelector('[data-testid=answer]')?.textContent.length ?? 0) > 400", timeout=15_000
    )
    page.get_by_role("button", name="Stop the answer").click()
    page.locator("article.turn[data-status=stopped]").wait_for()
    page.get_by_role("button", name="Send message").wait_for()
    assert answer.inner_text().strip().endswith(STOPPED_NOTE)
    expect(page.locator("#composer-input")).to_be_focused()  # ready for the next message

    # The server stored the partial answer with the note; the query cost its base price only.
    conversation_id = poll(lambda: page.url.rsplit("/c/", 1)[1] if "/c/" in page.url else None)

    def stored_answer() -> dict[str, Any] | None:
        detail = server.api("GET", f"/api/conversations/{conversation_id}", key).json()
        return next((item for item in detail["full"] if item["id"] == "q1-r"), None)

    stored = poll(stored_answer)
    assert stored["status"] == "interrupted"
    assert stored["content"].endswith(STOPPED_NOTE)
    assert "## Credits (4)" not in stored["content"]  # it really stopped early
    assert stored["credits"] == 5
    assert server.api("GET", "/api/credits", key).json()["balance"] == 45
    wait_balance(page, 45)
    turn(page, 0).locator(".answer-footer").wait_for()  # synced with the stored answer (q1-r, 5 credits)
    assert answer_cost(turn(page, 0)) == 5
    assert answer.inner_text().strip().endswith(STOPPED_NOTE)
    browsing.shot("04-stopped")


# What the message box holds in the same instant the welcome is put on the page.
SEEN_WITH_THE_WELCOME = """() => {
  window.__draftWithWelcome = null;
  new MutationObserver((_, observer) => {
    if (!document.querySelector('.welcome')) return;
    window.__draftWithWelcome = document.querySelector('#composer-input').value;
    observer.disconnect();
  }).observe(document.body, { childList: true, subtree: true });
}"""


def test_enter_sends_shift_enter_adds_a_line_and_drafts_stay_per_conversation(
    open_browser: Any, server: Server
) -> None:
    _, key = server.new_user()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    box = page.locator("#composer-input")

    box.click()
    page.keyboard.type("first line")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    assert box.input_value() == "first line\nsecond line"
    assert page.locator("article.turn").count() == 0
    page.keyboard.press("Enter")
    assert turn(page, 0).locator(".user-text").inner_text() == "first line\nsecond line"
    assert box.input_value() == ""
    wait_answered(page, 0)
    conversation_url = page.url

    # Keyboard order: from the message box, Tab reaches the send button.
    box.fill("a draft for this conversation")
    box.focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Send message"

    # The new chat's message box is empty from the moment the new chat shows, never for a frame
    # still holding the draft left behind.
    page.evaluate(SEEN_WITH_THE_WELCOME)
    page.get_by_role("button", name="New chat").click()
    page.locator(".welcome").wait_for()
    assert page.evaluate("window.__draftWithWelcome") == ""
    assert box.input_value() == ""
    box.fill("a draft for a new chat")
    page.go_back()
    wait_answered(page, 0)
    assert page.url == conversation_url
    assert box.input_value() == "a draft for this conversation"
    page.reload()
    wait_answered(page, 0)
    assert box.input_value() == "a draft for this conversation"


def test_escape_stops_an_answer_and_the_keyboard_stays_in_the_message_box(open_browser: Any, server: Server) -> None:
    _, key = server.new_user()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    box = page.locator("#composer-input")

    # A suggestion picked with the keyboard lands in the message box, with the focus.
    suggestion = page.locator(".suggestion").last
    suggestion.focus()
    page.keyboard.press("Enter")
    expect(box).to_be_focused()
    assert box.input_value() == suggestion.inner_text()

    box.fill("Give me a detailed tour of how Almanac works")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => (document.querySelector('[data-testid=answer]')?.textContent.length ?? 0) > 200", timeout=15_000
    )
    page.keyboard.press("Escape")  # the focus is still in the message box
    page.locator("article.turn[data-status=stopped]").wait_for()
    assert turn(page, 0).locator("[data-testid=answer]").inner_text().strip().endswith(STOPPED_NOTE)
    expect(box).to_be_focused()

    # From anywhere in the conversation (here: nothing focused), Escape stops too.
    page.get_by_role("button", name="New chat").click()
    page.locator(".welcome").wait_for()
    box.fill("Another detailed tour, please")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => (document.querySelector('[data-testid=answer]')?.textContent.length ?? 0) > 200", timeout=15_000
    )
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("Escape")
    page.locator("article.turn[data-status=stopped]").wait_for()
    expect(box).to_be_focused()
