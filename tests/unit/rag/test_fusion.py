"""Specification of rag/fusion.py: pure rank-fusion functions, table-driven."""

from __future__ import annotations

import math

import pytest

from almanac.rag.fusion import gated_fusion, reciprocal_rank_fusion, semantic_gate, zscore_fusion
from almanac.rag.retriever import Hit


def ids(hits: list[Hit]) -> list[int]:
    return [h.index for h in hits]


@pytest.mark.parametrize(
    ("lists", "kwargs", "expected"),
    [
        pytest.param([[1, 2, 3]], {}, [1, 2, 3], id="one list keeps its order"),
        pytest.param([[1, 2], [2, 1]], {}, [1, 2], id="symmetric tie goes to first appearance"),
        pytest.param([[1, 2, 3], [3, 2, 1]], {}, [1, 3, 2], id="equal rank sums: extremes edge out the middle"),
        pytest.param([[1, 2], [3]], {}, [1, 3, 2], id="missing items get nothing from that list"),
        pytest.param([[1, 2], [2, 3]], {}, [2, 1, 3], id="item in both lists wins"),
        pytest.param([[], []], {}, [], id="empty lists"),
        pytest.param([], {}, [], id="no lists"),
        pytest.param([[1, 2], []], {}, [1, 2], id="one empty list"),
        pytest.param([[1, 2], [3, 4]], {"weights": [1.0, 2.0]}, [3, 4, 1, 2], id="weights scale lists"),
        pytest.param([[1, 2], [3, 4]], {"weights": [1.0, 0.0]}, [1, 2, 3, 4], id="zero weight ranks last"),
        pytest.param([[1, 2, 3, 4]], {"limit": 2}, [1, 2], id="limit"),
        pytest.param([[1, 2, 3]], {"limit": None}, [1, 2, 3], id="no limit"),
        pytest.param([[1, 2, 3]], {"limit": 0}, [], id="zero limit"),
        pytest.param([[1, 1, 2], [2]], {}, [2, 1], id="repeats count once at best rank"),
    ],
)
def test_reciprocal_rank_fusion_order(lists: list[list[int]], kwargs: dict[str, object], expected: list[int]) -> None:
    assert ids(reciprocal_rank_fusion(lists, **kwargs)) == expected  # type: ignore[arg-type]


def test_reciprocal_rank_fusion_scores_follow_the_formula() -> None:
    hits = reciprocal_rank_fusion([[7, 8], [8]], k=60, weights=[1.0, 0.5])
    assert ids(hits) == [8, 7]
    assert [h.score for h in hits] == pytest.approx([1 / 62 + 0.5 / 61, 1 / 61])


def test_smaller_k_rewards_top_ranks_more() -> None:
    lists = [[1, 2, 3], [3, 4, 2]]
    assert ids(reciprocal_rank_fusion(lists, k=60))[:2] == [3, 2]
    assert ids(reciprocal_rank_fusion(lists, k=0))[:2] == [3, 1]


def test_default_limit_is_30() -> None:
    assert len(reciprocal_rank_fusion([list(range(100))])) == 30


@pytest.mark.parametrize(
    ("lists", "kwargs"),
    [
        ([[1], [2]], {"weights": [1.0]}),
        ([[1]], {"weights": [-1.0]}),
        ([[1]], {"k": -1}),
    ],
)
def test_invalid_arguments_are_rejected(lists: list[list[int]], kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        reciprocal_rank_fusion(lists, **kwargs)  # type: ignore[arg-type]


def hits(*pairs: tuple[int, float]) -> list[Hit]:
    return [Hit(i, s) for i, s in pairs]


BM25 = hits((1, 12.0), (2, 6.0), (3, 3.0))
COSINE = hits((2, 0.80), (4, 0.75), (1, 0.70))


@pytest.mark.parametrize(
    ("lists", "weights", "expected"),
    [
        pytest.param([BM25], None, [1, 2, 3], id="one list keeps its order"),
        pytest.param([BM25, COSINE], None, [2, 1, 4, 3], id="scales are standardised before summing"),
        pytest.param([BM25, COSINE], [0.0, 1.0], [2, 4, 1, 3], id="zero weight: the other list decides"),
        pytest.param([BM25, []], None, [1, 2, 3], id="an empty list is ignored"),
        pytest.param([[], []], None, [], id="all empty"),
        pytest.param(
            [hits((5, 1.0), (6, 1.0)), COSINE], None, [2, 4, 5, 6, 1], id="flat list adds nothing; ties by appearance"
        ),
        pytest.param([hits((7, 2.0), (7, 1.0), (8, 0.0))], None, [7, 8], id="repeats count at first score"),
    ],
)
def test_zscore_fusion_order(lists: list[list[Hit]], weights: list[float] | None, expected: list[int]) -> None:
    assert ids(zscore_fusion(lists, weights=weights)) == expected


def test_zscore_fusion_is_invariant_to_each_lists_scale_and_offset() -> None:
    shifted = [Hit(h.index, 1000 + 50 * h.score) for h in BM25]
    assert ids(zscore_fusion([shifted, COSINE])) == ids(zscore_fusion([BM25, COSINE]))


def test_zscore_fusion_gives_missing_items_the_lists_lowest_z() -> None:
    fused = {h.index: h.score for h in zscore_fusion([hits((1, 3.0), (2, 1.0)), hits((3, 5.0), (4, 1.0))])}
    assert fused == {1: pytest.approx(1 - 1), 2: pytest.approx(-1 - 1), 3: pytest.approx(-1 + 1), 4: -2.0}


@pytest.mark.parametrize(
    ("lexical", "dense", "kwargs", "expected"),
    [
        pytest.param(hits((2, 9.0)), COSINE, {}, 1.0, id="lexical top is the dense top"),
        pytest.param(hits((4, 9.0)), COSINE, {"tau": 0.05}, math.exp(-0.05 / 0.05), id="gap of 0.05"),
        pytest.param(hits((1, 9.0)), COSINE, {"tau": 0.1}, math.exp(-0.10 / 0.1), id="gap of 0.10"),
        pytest.param(hits((9, 9.0)), COSINE, {"tau": 0.1}, math.exp(-0.10 / 0.1), id="unknown: lowest dense score"),
        pytest.param(hits((4, 9.0), (2, 8.0)), COSINE, {"tau": 0.1, "top": 2}, math.exp(-0.025 / 0.1), id="top 2"),
        pytest.param([], COSINE, {}, 1.0, id="no lexical hits"),
        pytest.param(BM25, [], {}, 1.0, id="no dense hits"),
    ],
)
def test_semantic_gate(lexical: list[Hit], dense: list[Hit], kwargs: dict[str, float], expected: float) -> None:
    assert semantic_gate(lexical, dense, **kwargs) == pytest.approx(expected)  # type: ignore[arg-type]


def test_gated_fusion_follows_dense_when_the_lexical_top_is_semantically_far() -> None:
    lexical = hits((7, 20.0), (8, 5.0), (2, 4.0))
    dense = hits((2, 0.9), (3, 0.85), (7, 0.7), (8, 0.6))
    assert ids(gated_fusion(lexical, dense))[:2] == [2, 3]
    assert ids(zscore_fusion([lexical, dense]))[0] == 7  # ungated, the keyword match wins


def test_gated_fusion_keeps_full_fusion_when_the_lists_agree() -> None:
    lexical = hits((2, 20.0), (8, 5.0), (3, 4.0))
    dense = hits((2, 0.9), (3, 0.85), (8, 0.6))
    assert ids(gated_fusion(lexical, dense)) == ids(zscore_fusion([lexical, dense]))


@pytest.mark.parametrize("kwargs", [{"tau": 0.0}, {"top": 0}])
def test_semantic_gate_rejects_bad_parameters(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        semantic_gate(BM25, COSINE, **kwargs)  # type: ignore[arg-type]
