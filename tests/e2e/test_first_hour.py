"""A new user's first minutes on an embedded server (the built-in offline model): the message box
says what answers and how to connect a real model; the welcome suggestions are the server's; a
question the offline model cannot answer is free and says so; a tool card offers "Show full text"
only when there is more to show; the tools a chat can use are listed; the answer strategy is chosen
per conversation."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import Server
from tests.e2e.pages import answer_cost, send, turn, wait_answered, wait_balance

pytestmark = pytest.mark.e2e
PHONE: dict[str, Any] = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


@pytest.mark.parametrize("setting", ["light", "dark", "phone"])
def test_the_message_box_says_the_model_is_offline_and_how_to_connect_one(
    open_browser: Any, server: Server, setting: str
) -> None:
    _, key = server.new_user()
    config = server.api("GET", "/api/config", key).json()
    assert config["chat_model"]["offline"] is True
    options = PHONE if setting == "phone" else {}
    browsing = open_browser(color_scheme="dark" if setting == "dark" else "light", **options)
    browsing.sign_in_with_key(key)
    page = browsing.page

    note = page.get_by_test_id("offline-note")
    assert "Answers come from the built-in offline model, which quotes documentation." in note.inner_text()
    assert page.get_by_test_id("suggestions").locator(".suggestion").all_inner_texts() == config["suggestions"]
    assert_accessible(page, f"a new chat on the offline model ({setting})")
    browsing.shot(f"01-new-chat-offline-{setting}")

    note.get_by_role("button", name="How to connect a real model").click()
    dialog = page.get_by_role("dialog", name="Connect a real model")
    text = dialog.get_by_test_id("connect-model").inner_text()
    for setting_name in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"):
        assert setting_name in text
    assert "restart" in text and "“Connect a real model”" in text
    assert_accessible(page, f"the connect-a-model dialog ({setting})")
    browsing.shot(f"01b-connect-model-{setting}")
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    # Focus goes back to the button that opened the dialog (once the dialog has closed).
    expect(note.get_by_role("button", name="How to connect a real model")).to_be_focused()


def test_an_answer_that_carries_nothing_is_free_and_said_to_be(open_browser: Any, server: Server) -> None:
    _, key = server.new_user()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    wait_balance(page, 50)
    send(page, "What is the best season to visit Norway?")
    answered = wait_answered(page, 0)
    assert "cannot compose a free-form answer" in answered.locator("[data-testid=answer]").inner_text()
    assert answer_cost(answered) == 0
    assert answered.get_by_test_id("not-charged").is_visible()
    wait_balance(page, 50)
    assert server.api("GET", "/api/credits", key).json()["balance"] == 50


def test_show_full_text_only_when_there_is_more_and_tool_output_keeps_its_lines(
    open_browser: Any, server: Server
) -> None:
    _, key = server.new_user()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page

    # A short result is its own summary: shown as the result, with nothing more to fetch.
    send(page, "list my workspace files")
    short = wait_answered(page, 0).locator(".tool-card")
    short.locator(".tool-head").click()
    body = short.locator(".tool-body")
    assert "Result" in (body.locator("h4").nth(1).text_content() or "")
    assert body.get_by_role("button", name="Show full text (q1-t1)").count() == 0

    # Lines stay lines: the offline model quotes this three-line question line by line.
    box = page.locator("#composer-input")
    box.fill("first line\nsecond line\nthird line")
    box.press("Enter")
    quoted = wait_answered(page, 1).locator("[data-testid=answer] blockquote")
    assert quoted.locator("br").count() == 2

    # A longer result: its summary is shorter, so the full text is offered — and keeps its lines.
    send(page, "show me the full answer from earlier")
    found = wait_answered(page, 2).locator(".tool-card")
    found.locator(".tool-head").click()
    found.locator(".tool-body").get_by_role("button", name="Show full text (q3-t1)").click()
    full = found.get_by_test_id("tool-full")
    full.wait_for()
    assert full.locator("blockquote br").count() == 2
    assert "first line\nsecond line\nthird line" in full.locator("blockquote").inner_text()


def test_tools_are_listed_and_the_strategy_is_kept_per_conversation(open_browser: Any, server: Server) -> None:
    _, key = server.new_user(credits=50)
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page

    page.get_by_role("button", name="Tools").click()
    dialog = page.get_by_role("dialog", name="Tools a chat can use")
    tools = dialog.get_by_test_id("tool-list")
    tools.get_by_text("retrieve_documentation").wait_for()
    listed = tools.inner_text()
    assert "retrieve_full_context" in listed and "10 credits once per question" in listed
    assert_accessible(page, "the tools dialog")
    browsing.shot("05-tools-dialog")
    page.keyboard.press("Escape")

    # A new chat started with Boost keeps it; another conversation has its own.
    picker = page.get_by_label("Strategy", exact=True)
    assert picker.input_value() == "direct"
    picker.select_option("boost")
    send(page, "Give me a detailed tour of how Almanac works")
    wait_answered(page, 0, timeout_ms=120_000)  # a boosted long tour: planner and executor both stream
    conversation = page.url.rsplit("/c/", 1)[1]
    assert server.api("GET", f"/api/conversations/{conversation}", key).json()["strategy"] == "boost"
    page.get_by_role("button", name="New chat").click()
    page.locator(".welcome").wait_for()
    assert page.get_by_label("Strategy", exact=True).input_value() == "direct"

    # Changing it in a conversation is stored at once, and shown again after a reload.
    page.goto(f"/c/{conversation}")
    wait_answered(page, 0)
    expect(page.get_by_label("Strategy", exact=True)).to_have_value("boost")
    patched = f"/api/conversations/{conversation}"
    with page.expect_response(lambda r: r.url.endswith(patched) and r.request.method == "PATCH"):
        page.get_by_label("Strategy", exact=True).select_option("collaborate")
    assert server.api("GET", f"/api/conversations/{conversation}", key).json()["strategy"] == "collaborate"
    page.reload()
    wait_answered(page, 0)
    expect(page.get_by_label("Strategy", exact=True)).to_have_value("collaborate")
    assert answer_cost(turn(page, 0)) == 5
