"""Small page helpers shared by the browser tests (what a user looks at, as selectors)."""

from __future__ import annotations

import time
from typing import Any

STOPPED_NOTE = "[Stopped: the answer was interrupted before it was complete.]"


def balance(page: Any) -> int:
    """The balance shown in the header."""
    return int(page.locator(".credits-balance").get_attribute("data-balance"))


def wait_balance(page: Any, expected: int, timeout_ms: int = 10_000) -> None:
    """Wait until the header shows `expected` credits."""
    page.wait_for_function(
        "v => document.querySelector('.credits-balance')?.dataset.balance === v", arg=str(expected), timeout=timeout_ms
    )


def turn(page: Any, index: int) -> Any:
    return page.locator("article.turn").nth(index)


def send(page: Any, message: str) -> None:
    """Type a message in the composer and press Enter."""
    box = page.locator("#composer-input")
    box.fill(message)
    box.press("Enter")


def wait_answered(page: Any, index: int, timeout_ms: int = 60_000) -> Any:
    """Wait until turn `index` has finished (its footer with the item ID and cost is shown). The time
    limit guards against a hang, not a speed check: on a busy machine a long offline answer streamed
    word by word takes tens of seconds."""
    article = turn(page, index)
    article.locator(".answer-footer").wait_for(timeout=timeout_ms)
    return article


def answer_cost(article: Any) -> int:
    return int(article.locator("[data-testid=answer-cost]").get_attribute("data-credits"))


def poll(check: Any, *, timeout_s: float = 10.0, interval_s: float = 0.1) -> Any:
    """Call `check` until it returns something truthy; return that (or fail after the timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting for a condition"
        time.sleep(interval_s)
