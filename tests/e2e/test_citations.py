"""Documentation passages (retrieve_documentation) render as citations, live and after a reload."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Server
from tests.e2e.pages import answer_cost, send, wait_answered

pytestmark = pytest.mark.e2e


def test_documentation_passages_show_as_citations(open_browser: Any, server: Server) -> None:
    if not server.docs:
        pytest.skip("the local documentation index could not be built (`almanac docs index`)")
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

    card.locator(".tool-head").click()
    card.get_by_role("button", name="Show full text (q1-t1)").click()
    card.get_by_test_id("tool-full").wait_for()
    assert "frobnicate.spin(speed=3)" in card.get_by_test_id("tool-full").inner_text()
    card.evaluate("el => el.scrollIntoView({ block: 'start' })")
    browsing.shot("11-citations")

    # After a reload the citations come from the stored full text of the tool result.
    page.reload()
    answered = wait_answered(page, 0)
    reloaded = answered.locator(".assistant-body > .citations").inner_text()
    assert "Frobnicate guide > Using frobnicate.spin" in reloaded
    assert "Frobnicate guide > Installing frobnicate" in reloaded
