"""Accessibility checks in the browser with axe-core (the `axe-core` devDependency of frontend/).

The app's CSP forbids inline scripts, so axe's source is evaluated through Playwright (the
DevTools protocol is not subject to the page's CSP); nothing is added to the page's own code.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from tests.e2e.conftest import ROOT, _unavailable

AXE = ROOT / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("serious", "critical")


@cache
def _source(path: Path = AXE) -> str:
    return path.read_text()


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """Serious and critical WCAG 2.1 A/AA violations on the page as it is now."""
    if not AXE.is_file():
        _unavailable(f"axe-core is not installed ({AXE}); run `cd frontend && npm ci`")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(f"() => {{ {_source()}\n}}")
        assert page.evaluate("() => typeof window.axe === 'object'"), "axe-core did not load"
    # Colours are judged as they settle: a button whose class just changed is still fading its
    # background (a CSS transition), and axe would measure a colour no one reads. Endless animations
    # (a spinner) are not waited for.
    page.wait_for_function(
        "() => document.getAnimations()"
        ".every(a => a.playState !== 'running' || a.effect?.getTiming().iterations === Infinity)"
    )
    result = page.evaluate(
        """async (tags) => {
          const r = await axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
          return r.violations.map(v => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map(n => ({ target: n.target.join(' '), summary: n.failureSummary })),
          }));
        }""",
        WCAG_21_AA,
    )
    return [v for v in result if v["impact"] in BLOCKING]


def assert_accessible(page: Any, where: str) -> None:
    """Fail with a readable list when axe finds serious or critical violations."""
    found = axe_violations(page)
    lines = [
        f"{v['impact']} {v['id']}: {v['help']}\n    "
        + "\n    ".join(f"{n['target']}: {n['summary']}" for n in v["nodes"][:6])
        for v in found
    ]
    assert not found, f"accessibility violations on {where}:\n" + "\n".join(lines)
