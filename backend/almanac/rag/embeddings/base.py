"""The embedding seam: what every embedder promises, and the one error it may raise.

Exceptions:

    EmbeddingError      any failure of a model or an embedding vendor; its message is safe to show a user
                        (it never carries credentials or raw vendor responses).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

InputType = Literal["query", "document"]
"""Whether texts are search queries or documents to be searched (asymmetric models embed them differently)."""

Embeddings = npt.NDArray[np.float32]
"""A (n, dimension) float32 array whose rows have unit L2 norm, one row per input text, in input order."""


class EmbeddingError(Exception):
    """An embedding model or vendor failed; the message is meant for users and never contains secrets."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors comparable by dot product."""

    model_id: str
    """Stable identifier of the model and its settings (e.g. "local/all-MiniLM-L6-v2"); a cache key."""
    dimension: int
    """Length of every embedding row."""
    max_tokens: int
    """Tokens per text the model reads; longer texts are truncated."""

    async def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        """Embed `texts` in order: float32, shape (len(texts), dimension), rows L2-normalised.

        An empty `texts` gives shape (0, dimension). Raises EmbeddingError on any failure.
        """
        ...


def empty_embeddings(dimension: int) -> Embeddings:
    """The (0, dimension) float32 result for an empty input."""
    return np.zeros((0, dimension), dtype=np.float32)


def l2_normalise(rows: npt.ArrayLike) -> Embeddings:
    """Return `rows` as a float32 2-D array with each row scaled to unit L2 norm (zero rows stay zero)."""
    array = np.asarray(rows, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"expected a 2-D array of embeddings, got shape {array.shape}")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.divide(array, np.maximum(norms, np.float32(1e-12)), dtype=np.float32)
