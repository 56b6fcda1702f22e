"""In the browser, with a summariser that takes 5 s: how long after the answer's last word appears is
the composer usable again (the Stop button turns back into Send)? Target: under 100 ms.

Starts a real `almanac serve` (offline model, OFFLINE_SUMMARY_DELAY_MS=5000, the built UI) and drives
Debian Chromium with Playwright; a MutationObserver in the page records when the answer's text last
changed and when the Send button came back, in the page's own clock.

    .venv/bin/python bench/ui_summary_latency.py [--runs 5] [--delay-ms 5000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, _open, running_server  # noqa: E402
from tests.e2e.pages import send, wait_answered  # noqa: E402

OBSERVER = """
() => {
  window.__times = {lastText: 0, send: 0};
  const seen = () => {
    const answers = document.querySelectorAll('article.turn [data-testid=answer]');
    const last = answers[answers.length - 1];
    const text = last ? last.textContent : '';
    if (text !== window.__lastText) { window.__lastText = text; window.__times.lastText = performance.now(); }
    const send = document.querySelector('button[aria-label="Send message"]');
    if (send && !window.__times.send && window.__times.lastText) { window.__times.send = performance.now(); }
  };
  new MutationObserver(seen).observe(document.body, {subtree: true, childList: true, characterData: true});
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--delay-ms", default="5000")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    gaps: list[float] = []
    with running_server(
        Path(tempfile.mkdtemp()), OFFLINE_SUMMARY_DELAY_MS=args.delay_ms, SUMMARY_WAIT_S="30"
    ) as server:
        _, key = server.new_user(credits=500)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            browsing = _open(browser, server, viewport={"width": 1280, "height": 820})
            browsing.sign_in_with_key(key)
            page = browsing.page
            for run in range(args.runs):
                page.evaluate(OBSERVER)
                send(page, f"give me a long tour ({run})")
                wait_answered(page, run, timeout_ms=120_000)
                page.wait_for_function("() => window.__times.send > 0")
                times = page.evaluate("() => window.__times")
                gaps.append(times["send"] - times["lastText"])
            browser.close()
    print(f"Summariser delay {int(args.delay_ms) / 1000:g} s, {args.runs} answers (long offline answers)\n")
    print(
        f"last word shown -> composer usable (Send back): median {statistics.median(gaps):.1f} ms, "
        f"max {max(gaps):.1f} ms (target < 100 ms)"
    )


if __name__ == "__main__":
    main()
