"""Specification of rag/vectors.py: exact cosine top-k over precomputed embeddings."""

from __future__ import annotations

import numpy as np
import pytest

from almanac.rag.retriever import Hit, top_k
from almanac.rag.vectors import VectorIndex, l2_normalise

MATRIX = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, -3.0]], dtype=np.float32)


def test_search_ranks_by_cosine_similarity_not_length() -> None:
    index = VectorIndex(MATRIX)
    hits = index.search([1.0, 0.9, 0.0], 4)
    assert [h.index for h in hits] == [2, 0, 1, 3]
    assert hits[0].score == pytest.approx((1 + 0.9) / (np.sqrt(2) * np.sqrt(1.81)), rel=1e-5)
    assert hits[-1].score == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize(("k", "expected"), [(0, 0), (1, 1), (3, 3), (10, 4)])
def test_search_returns_at_most_k_hits(k: int, expected: int) -> None:
    assert len(VectorIndex(MATRIX).search([0.0, 0.0, 1.0], k)) == expected


def test_rows_and_queries_are_normalised() -> None:
    scores = VectorIndex(MATRIX * 7).scores([0.0, 5.0, 0.0])
    np.testing.assert_allclose(scores, [0.0, 1.0, np.sqrt(0.5), 0.0], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(l2_normalise(MATRIX), axis=1), 1.0, rtol=1e-6)
    assert not np.any(l2_normalise(np.zeros((1, 3))))


def test_dimension_mismatch_and_bad_shapes_are_errors() -> None:
    with pytest.raises(ValueError):
        VectorIndex(MATRIX).search([1.0, 0.0], 2)
    with pytest.raises(ValueError):
        VectorIndex(np.zeros(3))


def test_serialisation_round_trips() -> None:
    index = VectorIndex(MATRIX)
    restored = VectorIndex.from_bytes(index.to_bytes())
    assert (len(restored), restored.dimension) == (4, 3)
    assert restored.search([0.0, 1.0, 0.0], 2) == index.search([0.0, 1.0, 0.0], 2)


@pytest.mark.parametrize(
    ("scores", "k", "positive_only", "expected"),
    [
        ([0.5, 0.9, 0.1], 2, False, [Hit(1, 0.9), Hit(0, 0.5)]),
        ([1.0, 2.0, 2.0, 0.0], 3, False, [Hit(1, 2.0), Hit(2, 2.0), Hit(0, 1.0)]),  # tie → lower index
        ([0.0, 3.0, 0.0], 3, True, [Hit(1, 3.0)]),
        ([], 5, False, []),
        ([1.0], 0, False, []),
    ],
)
def test_top_k(scores: list[float], k: int, positive_only: bool, expected: list[Hit]) -> None:
    hits = top_k(np.asarray(scores, dtype=np.float32), k, positive_only=positive_only)
    assert [(h.index, round(h.score, 6)) for h in hits] == [(h.index, h.score) for h in expected]
