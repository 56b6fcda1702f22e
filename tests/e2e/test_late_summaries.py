"""With a summariser that takes seconds (as a real model does), the answer ends and the composer is
usable at once; the tool result's summary arrives later on the same stream and fills its card."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import _open, running_server
from tests.e2e.pages import send, wait_answered

pytestmark = pytest.mark.e2e


def test_the_composer_is_free_before_slow_summaries_arrive(browser: Any, tmp_path: Path) -> None:
    with running_server(tmp_path, OFFLINE_SUMMARY_DELAY_MS="4000", SUMMARY_WAIT_S="30") as server:
        if not server.docs:
            pytest.fail(f"the documentation index was not built: {server.docs_error}")
        _, key = server.new_user()
        browsing = _open(browser, server, viewport={"width": 1280, "height": 820})
        try:
            browsing.sign_in_with_key(key)
            page = browsing.page
            send(page, "How do I use frobnicate.spin?")
            answered = wait_answered(page, 0)
            card = answered.locator(".tool-card").first
            card.locator(".tool-head").click()
            # The answer is complete, its summary still being written: the user can already go on.
            assert "The summary is not ready yet" in card.locator(".tool-body").inner_text()
            page.locator("#composer-input").fill("and the speed range?")
            assert page.get_by_role("button", name="Send message").is_enabled()
            # Seconds later the summary arrives on the same stream and fills the card.
            card.locator(".tool-summary").wait_for(timeout=30_000)
            assert "frobnicate" in card.locator(".tool-summary").inner_text().lower()
            assert browsing.watch.page_errors == [] and browsing.watch.csp_violations == []
        finally:
            browsing.context.close()
