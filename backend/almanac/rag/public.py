"""Public API first: a modest preference, in ranking, for passages about what users import over passages
about private or internal code (`Chunk.public`: underscore names, helpers left out of `__all__`, classes
only the module's own classes use). A small separate step, so any ranking stage can call it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from almanac.rag.retriever import Hit

DEFAULT_SHARE = 0.15  # an internal passage loses this share of the candidates' score range


def prefer_public(hits: Sequence[Hit], is_public: Callable[[int], bool], *, share: float = DEFAULT_SHARE) -> list[Hit]:
    """`hits` (best first) re-sorted after lowering each internal hit's score (`is_public(hit.index)`
    false) by `share` of the range between the best and the worst score — relative, so it means the same
    whatever the scores' scale, and modest: an internal passage far ahead of the public ones stays ahead.
    Ties keep their order."""
    if not hits:
        return []
    spread = max(hit.score for hit in hits) - min(hit.score for hit in hits)
    penalty = share * spread if spread > 0 else 0.0
    adjusted = [hit if is_public(hit.index) else Hit(hit.index, hit.score - penalty) for hit in hits]
    order = sorted(range(len(adjusted)), key=lambda i: (-adjusted[i].score, i))
    return [adjusted[i] for i in order]
