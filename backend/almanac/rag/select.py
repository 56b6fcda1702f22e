"""Step 2 of the pipeline: pick the library among the candidates a doc source found.

Offline (and as the fallback): the best lexical match of the requested name, then trust score
and snippet count. With a chat model: the model chooses among the top candidates by title,
description, trust score and snippet count; an answer naming no candidate falls back to rules.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from typing import Protocol

from almanac.llm.base import Model, ModelError, complete
from almanac.llm.messages import Message, ModelRequest
from almanac.rag.sources.base import LibraryInfo

log = logging.getLogger(__name__)
_FILLER = {"python", "py", "library", "lib", "package", "framework", "docs", "documentation", "sdk", "api", "the"}


def normalise_name(name: str) -> str:
    """Lower-case, separators unified, filler words dropped: `The FastAPI library` → `fastapi`."""
    words = [w for w in re.split(r"[\s_.\-/]+", name.lower()) if w and w not in _FILLER]
    return "-".join(words)


# What a requested name is left with, filler words dropped, when it means the Python standard library as a whole
# ("Python standard library", "stdlib", "python3", "Python 3.12"); "python" alone leaves nothing: any library.
_STANDARD = re.compile(r"standard(-lib(rary)?)?|std(lib)?|python-?3|py3|cpython|[0-9-]+")


def means_standard_library(name: str) -> bool:
    """Whether a requested library name means the whole standard library, not one package."""
    wanted = normalise_name(name.split("@")[0])
    if not wanted or _STANDARD.fullmatch(wanted) is None:
        return False
    return wanted[0].isalpha() or "python" in name.lower()  # a bare version only after "Python"


# Where a `library` argument holds more than one name: a list, an aside, alternatives
_SEPARATORS = re.compile(r"\s*(?:[,;|()\[\]]|\s(?:and|or|plus|&)\s)\s*", re.I)


def named_parts(name: str) -> list[str]:
    """The library names a longer `library` argument holds, as chat models write them: each name of a list or an
    aside ("httpx, python"; "python standard library (asyncio)"), and a repository path's last part ("encode/httpx"
    → httpx, as the Context7 ID `/encode/httpx` names it) — the names of one package before the standard library
    as a whole, filler ("python") left out. Empty when `name` is one name already."""
    found: list[str] = []
    for part in (p.strip() for p in _SEPARATORS.split(name)):
        found.append(part)
        if "/" in part.strip("/"):
            found.append(part.rstrip("/").rsplit("/", 1)[-1])
    parts = [part for part in dict.fromkeys(found) if part != name.strip() and normalise_name(part)]
    return sorted(parts, key=means_standard_library)  # stable: a package's name first


EXACT = 3.0  # `name_match` of a library's own name
NAMED = 1.0  # the least `name_match` of a library's name (below: its description alone has the word)


def name_match(name: str, library: LibraryInfo) -> float:
    """How well a requested name matches a library: 3 exact, 2 prefix, 1 contained (whole words of it, or the
    start of its name, a `py` prefix aside), 0.5 word overlap."""
    wanted = normalise_name(name.split("@")[0])
    if not wanted:
        return 0.0
    tail = normalise_name(library.id.rstrip("/").split("/")[-1].split("@")[0])
    title = normalise_name(library.title)
    best = 0.0
    for candidate in {tail, title}:
        if not candidate:
            continue
        if candidate == wanted:
            best = max(best, EXACT)
        elif candidate.startswith(wanted + "-") or wanted.startswith(candidate + "-"):
            best = max(best, 2.0)
        elif f"-{wanted}-" in f"-{candidate}-" or wanted in (candidate[: len(wanted)], candidate[2 : 2 + len(wanted)]):
            best = max(best, 1.0)  # `websocket` in `websockets`, `yaml` in `pyyaml`; never `standard` in `zstandard`
    if best == 0.0 and set(wanted.split("-")) & set(normalise_name(library.description).split("-")):
        best = 0.5
    return best


def rank_libraries(name: str, candidates: Sequence[LibraryInfo]) -> list[LibraryInfo]:
    """Candidates that match `name` at all, best first (match, trust, snippets, shorter id)."""
    scored = [(name_match(name, c), c) for c in candidates]
    ranked = sorted(
        (pair for pair in scored if pair[0] > 0),
        key=lambda pair: (-pair[0], -pair[1].trust_score, -math.log1p(pair[1].snippets), len(pair[1].id)),
    )
    return [library for _, library in ranked]


class LibrarySelector(Protocol):
    async def choose(self, query: str, name: str, candidates: Sequence[LibraryInfo]) -> LibraryInfo:
        """The best candidate (candidates is never empty)."""
        ...


class RuleSelector:
    async def choose(self, query: str, name: str, candidates: Sequence[LibraryInfo]) -> LibraryInfo:
        ranked = rank_libraries(name, candidates)
        if ranked:
            return ranked[0]
        return max(candidates, key=lambda c: (c.trust_score, math.log1p(c.snippets)))


class ModelSelector:
    """Lets the chat model choose among the top candidates."""

    def __init__(self, model: Model, *, shortlist: int = 6) -> None:
        self.model = model
        self.shortlist = shortlist
        self._rules = RuleSelector()

    async def choose(self, query: str, name: str, candidates: Sequence[LibraryInfo]) -> LibraryInfo:
        if len(candidates) == 1:
            return candidates[0]
        shortlist = list(candidates[: self.shortlist])
        lines = [
            f"- {c.id} | {c.title} | trust {c.trust_score:g}/10 | {c.snippets} snippets | {c.description[:200]}"
            for c in shortlist
        ]
        prompt = (
            f"A developer asked: {query[:1500]}\nThe library they mean is probably named '{name}'.\n"
            "Candidates (id | title | trust | snippets | description):\n"
            + "\n".join(lines)
            + "\n\nReply with only the id of the best candidate."
        )
        try:
            response = await complete(
                self.model,
                ModelRequest(
                    "You pick software libraries. Reply with one candidate id and nothing else.",
                    (Message.user(prompt),),
                    max_tokens=60,
                    purpose="utility",
                ),
            )
        except ModelError:
            log.warning("library choice by the model failed; using rules")
            return await self._rules.choose(query, name, candidates)
        answer = response.text
        for candidate in sorted(shortlist, key=lambda c: -len(c.id)):
            if candidate.id in answer:
                return candidate
        return await self._rules.choose(query, name, candidates)
