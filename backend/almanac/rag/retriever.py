"""The retrieval seam: a `Retriever` ranks the chunks of one index for a query.

Every retriever in ``rag/`` speaks the same representation: a :class:`Hit` names a chunk by its
*index* in the list of chunks the retriever was built over, with the retriever's own score
(comparable only within one result list). Lists are ranked best first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class Hit:
    """A chunk index with its score; higher scores rank first."""

    index: int
    score: float


class Retriever(Protocol):
    """Ranks the indexed chunks for a text query."""

    def search(self, query: str, k: int) -> list[Hit]:
        """Return at most ``k`` hits, best first."""
        ...


def top_k(scores: npt.NDArray[np.floating], k: int, *, positive_only: bool = False) -> list[Hit]:
    """The ``k`` highest scores as hits, best first; ties go to the lower index.

    With ``positive_only`` scores <= 0 are left out (for lexical scores, 0 means "no term matched").
    Runs in O(n + k log k) using ``argpartition``.
    """
    n = scores.shape[0]
    k = min(k, n)
    if k <= 0:
        return []
    candidates = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    # Sort by score descending, then index ascending, so equal scores rank deterministically.
    order = candidates[np.lexsort((candidates, -scores[candidates]))]
    hits = [Hit(int(i), float(scores[i])) for i in order]
    if positive_only:
        hits = [h for h in hits if h.score > 0.0]
    return hits
