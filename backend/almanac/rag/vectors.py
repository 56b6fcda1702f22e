"""Dense retrieval: exact cosine search over a matrix of embeddings computed elsewhere.

Rows are L2-normalised float32 vectors (normalised again here, so any embedder's output works);
cosine similarity is then one matrix-vector product, and the top k come from ``argpartition``.
Exact search is fast enough for one document's chunks and for tens of thousands of chunks (see
``bench/retrieval_speed.py``).
"""

from __future__ import annotations

import io

import numpy as np
import numpy.typing as npt

from almanac.rag.retriever import Hit, top_k

FloatArray = npt.NDArray[np.float32]


def l2_normalise(matrix: npt.ArrayLike) -> FloatArray:
    """Rows scaled to unit length as float32; all-zero rows stay zero."""
    array = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    return np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)


class VectorIndex:
    """Cosine search over a fixed matrix of chunk embeddings (row i = chunk i)."""

    def __init__(self, embeddings: npt.ArrayLike) -> None:
        matrix = np.asarray(embeddings, dtype=np.float32)
        if matrix.ndim != 2:
            raise ValueError(f"embeddings must be a 2-D matrix, got shape {matrix.shape}")
        self._matrix = np.ascontiguousarray(l2_normalise(matrix))

    @classmethod
    def allocate(cls, rows: int, dimension: int) -> VectorIndex:
        """An index of `rows` zero rows, to be filled with :meth:`write` (a build in progress).

        A zero row scores 0 against every query; callers search only rows they have written.
        """
        index = cls.__new__(cls)
        index._matrix = np.zeros((rows, dimension), dtype=np.float32)
        return index

    def write(self, rows: npt.ArrayLike, embeddings: npt.ArrayLike) -> None:
        """Set the given rows (indices) to `embeddings`, normalised, in place."""
        matrix = l2_normalise(embeddings)
        if matrix.ndim != 2 or matrix.shape[1] != self.dimension:
            raise ValueError(f"embeddings must have {self.dimension} columns, got shape {matrix.shape}")
        self._matrix[np.asarray(rows, dtype=np.intp)] = matrix

    @property
    def dimension(self) -> int:
        """Length of each embedding."""
        return int(self._matrix.shape[1])

    def __len__(self) -> int:
        return int(self._matrix.shape[0])

    def scores(self, query_vector: npt.ArrayLike) -> FloatArray:
        """Cosine similarity of every indexed row to ``query_vector`` (in [-1, 1])."""
        vector = l2_normalise(np.asarray(query_vector, dtype=np.float32).reshape(-1))
        if vector.shape[0] != self.dimension:
            raise ValueError(f"query has dimension {vector.shape[0]}, index has {self.dimension}")
        return self._matrix @ vector

    def search(self, query_vector: npt.ArrayLike, k: int) -> list[Hit]:
        """The ``k`` most similar rows, best first (ties to the lower index)."""
        return top_k(self.scores(query_vector), k)

    def to_bytes(self) -> bytes:
        """Serialise the matrix as an ``.npy`` blob (no pickle)."""
        buffer = io.BytesIO()
        np.save(buffer, self._matrix, allow_pickle=False)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes) -> VectorIndex:
        """Rebuild an index saved by :meth:`to_bytes`."""
        matrix = np.load(io.BytesIO(blob), allow_pickle=False)
        if matrix.ndim != 2 or matrix.dtype != np.float32:
            raise ValueError("not a serialised VectorIndex")
        index = cls.__new__(cls)
        index._matrix = matrix  # already normalised: normalising again would perturb the last bit
        return index
