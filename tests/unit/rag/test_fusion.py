"""Specification of rag/fusion.py: pure rank-fusion functions, table-driven."""

from __future__ import annotations

import pytest

from almanac.rag.fusion import reciprocal_rank_fusion
from almanac.rag.retriever import Hit


def ids(hits: list[Hit]) -> list[int]:
    return [h.index for h in hits]


@pytest.mark.parametrize(
    ("lists", "kwargs", "expected"),
    [
        pytest.param([[1, 2, 3]], {}, [1, 2, 3], id="one list keeps its order"),
        pytest.param([[1, 2], [2, 1]], {}, [1, 2], id="symmetric tie goes to first appearance"),
        pytest.param(
            [[1, 2, 3], [3, 2, 1]], {}, [1, 3, 2], id="equal rank sums: extremes edge out the middle"
        ),
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
def test_reciprocal_rank_fusion_order(
    lists: list[list[int]], kwargs: dict[str, object], expected: list[int]
) -> None:
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
