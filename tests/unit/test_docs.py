"""The documentation: a README a newcomer reads on two screens, reference pages in docs/, no dead links."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    anchors = set()
    for heading in re.findall(r"(?m)^#{1,6} +(.+?) *$", markdown):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def test_the_readme_fits_on_two_screens_and_keeps_the_quick_start() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 100
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"(?m)^make \w+", quick_start)
    assert commands == ["make serve", "make test"]
    assert "## Connect a real model" in text


def test_the_readme_links_every_reference_page() -> None:
    linked = {target for target in LINK.findall(README.read_text()) if target.startswith("docs/")}
    assert {f"docs/{page.name}" for page in PAGES} <= linked


def test_every_relative_link_and_anchor_resolves() -> None:
    broken = []
    for document in [README, *PAGES]:
        for target in LINK.findall(document.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = (document.parent / path).resolve() if path else document
            if not resolved.exists():
                broken.append(f"{document.name}: {target}")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved.read_text()):
                broken.append(f"{document.name}: {target} (no such heading)")
    assert broken == []
