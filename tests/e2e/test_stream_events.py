"""How the browser shows the newer stream events — boost plans, escalations, tool progress, summaries that arrive
after `message_end`, a question that reached its credit limit — from a recorded stream.

The stream is replayed by the browser test itself (Playwright answers POST /api/chat/stream with a fixed SSE body
in the backend's wire format, chat/events.py): the offline server does not send these events yet. The rest of the
page (sign-in, credits, the conversation list) talks to the real server.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import Server
from tests.e2e.pages import send, turn, wait_answered

pytestmark = pytest.mark.e2e
CONVERSATION = "0b6f2f6e-1c51-4d0e-9a53-5e2e00000001"
ANALYSIS = "The user wants **frobnicate** docs. <img src=x onerror=alert(1)>"
EVENTS: list[dict[str, Any]] = [
    {
        "type": "message_start",
        "conversation_id": CONVERSATION,
        "query_id": "q1",
        "model": "executor-m",
        "provider": "test",
    },
    {
        "type": "plan",
        "loop": 1,
        "analysis": ANALYSIS,
        "guidance": "Call `retrieve_documentation`.",
        "model": "planner-m",
    },
    {
        "type": "tool_call",
        "id": "a",
        "name": "retrieve_documentation",
        "input": {"query": "spin"},
        "item_id": "q1-t1",
        "turn": 1,
    },
    {"type": "tool_progress", "id": "a", "item_id": "q1-t1", "message": "building the documentation index… 40%"},
    {
        "type": "tool_result",
        "id": "a",
        "name": "retrieve_documentation",
        "item_id": "q1-t1",
        "summary_id": "q1-t1-sum",
        "is_error": False,
        "status": "ok",
        "summary": None,
        "duration_ms": 12,
        "credits": 10,
        "citations": [],
    },
    {"type": "brand_new_event", "anything": [1, 2, 3]},
    {
        "type": "escalation",
        "reason": "the same call failed twice",
        "from_model": "executor-m",
        "to_model": "helper-m",
        "attempt": 1,
    },
    {
        "type": "tool_call",
        "id": "b",
        "name": "github__search_repositories",
        "input": {"query": "frobnicate"},
        "item_id": "q1-t2",
        "turn": 2,
    },
    {
        "type": "tool_result",
        "id": "b",
        "name": "github__search_repositories",
        "item_id": "q1-t2",
        "summary_id": "q1-t2-sum",
        "is_error": True,
        "status": "over_limit",
        "summary": None,
        "duration_ms": 0,
        "credits": 0,
        "citations": [],
    },
    {"type": "text_delta", "text": "Use `frobnicate.spin(speed=3)`."},
    {
        "type": "message_end",
        "conversation_id": CONVERSATION,
        "query_id": "q1",
        "message_id": "q1-r",
        "summary_id": "q1-r-sum",
        "summary": None,
        "response": "Use `frobnicate.spin(speed=3)`.",
        "tools_used": ["retrieve_documentation"],
        "credits_used": 15,
        "credits_remaining": 35,
        "turns": 2,
        "stop_reason": "end_turn",
        "summaries": {},
        "credit_limit": 15,
        "credit_limit_reached": True,
    },
    {
        "type": "summary",
        "item_id": "q1-t1",
        "summary_id": "q1-t1-sum",
        "summary": "Docs for **frobnicate.spin**.",
        "status": "done",
    },
    {"type": "summary", "item_id": "q1-r", "summary_id": "q1-r-sum", "summary": "Told to call spin.", "status": "done"},
]


def sse(events: list[dict[str, Any]]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def test_plans_escalations_late_summaries_and_the_credit_limit_show_in_the_turn(
    open_browser: Any, server: Server
) -> None:
    _, key = server.new_user()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    page.route(
        "**/api/chat/stream",
        lambda route: route.fulfill(status=200, headers={"Content-Type": "text/event-stream"}, body=sse(EVENTS)),
    )

    send(page, "How do I use frobnicate.spin?")
    answered = wait_answered(page, 0)
    tools = answered.locator(".tools")
    assert [c.split()[0] for c in tools.locator("> *").evaluate_all("els => els.map(e => e.className)")] == [
        "plan-block",
        "tool-card",
        "turn-note",
        "tool-card",
    ]

    # The plan: collapsed, "Plan (loop 1)"; opened, ANALYSIS and GUIDANCE as sanitised Markdown.
    plan = answered.get_by_test_id("plan")
    assert plan.get_attribute("open") is None
    plan.locator("summary").click()
    assert plan.get_attribute("open") == ""
    assert "Plan (loop 1)" in plan.locator("summary").inner_text()
    assert plan.locator(".plan-body strong").inner_text() == "frobnicate"
    assert plan.locator(".plan-body code").inner_text() == "retrieve_documentation"
    assert plan.locator("img").count() == 0 and "onerror=alert(1)" in plan.inner_text()

    assert answered.get_by_test_id("escalation").inner_text() == "Asked helper-m for help: the same call failed twice"
    cards = answered.locator(".tool-card")
    assert "Skipped: credit limit" in cards.nth(1).locator(".tool-head").inner_text()
    assert answered.get_by_test_id("tool-progress").count() == 0  # progress ends with the result
    notice = answered.get_by_test_id("credit-limit")
    assert notice.inner_text() == "This question reached its limit of 15 credits; some lookups were skipped."

    # The tool summary that came after message_end is on its card.
    cards.first.locator(".tool-head").click()
    assert cards.first.locator(".tool-summary").inner_text() == "Docs for frobnicate.spin."

    # The composer is free again: a follow-up can be typed and sent.
    page.locator("#composer-input").fill("and then?")
    assert page.get_by_role("button", name="Send message").is_enabled()
    assert_accessible(page, "a turn with a plan, an escalation and the credit-limit notice")
    turn(page, 0).evaluate("el => el.scrollIntoView({ block: 'start' })")
    browsing.shot("14-plan-escalation-credit-limit")
