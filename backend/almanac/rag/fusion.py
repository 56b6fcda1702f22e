"""Rank fusion: merge the ranked lists of several retrievers into one. Pure functions.

Lists name chunks by index (see :mod:`almanac.rag.retriever`); results are :class:`Hit` values
carrying the fused score, best first. Ties are broken by first appearance (earlier list, then
better rank), so fusion is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence

from almanac.rag.retriever import Hit


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[int]],
    k: float = 60.0,
    weights: Sequence[float] | None = None,
    limit: int | None = 30,
) -> list[Hit]:
    """Reciprocal rank fusion (Cormack et al., 2009): ``score(d) = Σ_i w_i / (k + rank_i(d))``.

    Ranks start at 1; an item absent from a list gets nothing from it; a repeated item counts
    at its first (best) rank only. ``weights`` default to 1 each and must be non-negative, one per
    list. Returns at most ``limit`` hits (all when ``None``), highest fused score first.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    weights = _check_weights(ranked_lists, weights)
    fused: dict[int, float] = {}
    for items, weight in zip(ranked_lists, weights, strict=True):
        seen: set[int] = set()
        for rank, item in enumerate(items, start=1):
            if item in seen:
                continue
            seen.add(item)
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return _ranked(fused, limit)


def _check_weights(lists: Sequence[Sequence[object]], weights: Sequence[float] | None) -> list[float]:
    if weights is None:
        return [1.0] * len(lists)
    if len(weights) != len(lists):
        raise ValueError(f"got {len(weights)} weights for {len(lists)} lists")
    if any(w < 0 for w in weights):
        raise ValueError("weights must be non-negative")
    return [float(w) for w in weights]


def _ranked(fused: dict[int, float], limit: int | None) -> list[Hit]:
    """Hits by fused score, best first; dict order (first appearance) breaks ties."""
    order = sorted(fused.items(), key=lambda kv: -kv[1])  # stable: keeps first-appearance order
    if limit is not None:
        order = order[: max(0, limit)]
    return [Hit(index, score) for index, score in order]
