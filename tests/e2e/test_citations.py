"""Documentation passages (retrieve_documentation) render as citations, live and after a reload."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Server
from tests.e2e.pages import answer_cost, send, wait_answered

pytestmark = pytest.mark.e2e


def test_documentation_passages_show_as_citations(open_browser: Any, server: Server) -> None:
    server.require_docs()
    _, key = server.new_user()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page

    send(page, "How do I use frobnicate.spin?")
    answered = wait_answered(page, 0)
    card = answered.locator(".tool-card")
    assert "retrieve_documentation" in card.inner_text() and "10 credits" in card.inner_text()
    assert answer_cost(answered) == 15  # 5 for the question + 10 for the documentation lookup
    sources = answered.locator(".assistant-body > .citations")
    live = sources.inner_text()
    assert "Frobnicate guide > Using frobnicate.spin" in live
    assert "docs/frobnicate.md" in live  # a local file: named, but not a link
    assert sources.locator("a").count() == 0
    # Titles are plain text with inline code: `frobnicate.halt` is a <code>, no backticks or other markup.
    halt = sources.locator(".citation-title", has_text="frobnicate.halt")
    assert halt.locator("code").inner_text() == "frobnicate.halt"
    assert "`" not in live
    assert sources.locator(".citation-title :not(code)").count() == 0

    card.locator(".tool-head").click()
    card.get_by_role("button", name="Show full text (q1-t1)").click()
    card.get_by_test_id("tool-full").wait_for()
    assert "frobnicate.spin(speed=3)" in card.get_by_test_id("tool-full").inner_text()
    card.evaluate("el => el.scrollIntoView({ block: 'start' })")
    browsing.shot("11-citations")

    # On a narrow screen a long title wraps beside its icon: every line starts right of it.
    page.set_viewport_size({"width": 390, "height": 844})
    lines = halt.evaluate(
        """el => {
          const icon = el.closest('li').querySelector('svg').getBoundingClientRect();
          const rects = [...el.getClientRects()];
          return { iconRight: icon.right, iconTop: icon.top, lefts: rects.map(r => r.left), firstTop: rects[0].top,
                   lines: new Set(rects.map(r => Math.round(r.top))).size };
        }"""
    )
    assert lines["lines"] >= 2, lines  # it does wrap
    assert min(lines["lefts"]) >= lines["iconRight"], lines
    assert abs(lines["firstTop"] - lines["iconTop"]) < 8, lines  # the icon sits on the first line
    sources.evaluate("el => el.scrollIntoView({ block: 'start' })")
    browsing.shot("11b-citations-phone")
    page.set_viewport_size({"width": 1280, "height": 820})

    # After a reload the citations come from the stored full text of the tool result.
    page.reload()
    answered = wait_answered(page, 0)
    reloaded = answered.locator(".assistant-body > .citations").inner_text()
    assert "Frobnicate guide > Using frobnicate.spin" in reloaded
    assert "Frobnicate guide > Installing frobnicate" in reloaded
