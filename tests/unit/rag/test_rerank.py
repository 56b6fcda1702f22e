"""Step 5: reranking (the chat model's scores parsed leniently; failures keep the fused order)."""

import pytest

from almanac.llm.base import ModelUnavailable
from almanac.llm.fake import ScriptedModel, reply
from almanac.rag.rerank import FusedOrder, ModelReranker, parse_scores
from almanac.rag.retriever import Hit

TEXTS = ["about cats", "about dependencies in FastAPI", "about CORS", "about paths"]


@pytest.mark.parametrize(
    ("answer", "scores"),
    [
        ('[{"id": 1, "score": 9}, {"id": 2, "score": 3}]', {1: 9.0, 2: 3.0}),
        ('```json\n[{"index": 0, "score": "7.5"}]\n```', {0: 7.5}),
        ('{"3": 8, "0": 1}', {3: 8.0, 0: 1.0}),
        ("[1]: 9\n[0] - 2\n2 => 5", {1: 9.0, 0: 2.0, 2: 5.0}),
        ('[{"id": 9, "score": 10}, {"id": 1, "score": 4}]', {1: 4.0}),
        ("no scores here", {}),
    ],
)
def test_parse_scores(answer: str, scores: dict[int, float]) -> None:
    assert parse_scores(answer, 4) == scores


async def test_the_model_orders_by_score_and_unscored_keep_fused_order() -> None:
    model = ScriptedModel([reply('[{"id": 2, "score": 6}, {"id": 1, "score": 9}]')])
    hits = await ModelReranker(model).rerank("FastAPI dependencies", TEXTS, 3)
    assert hits == [Hit(1, 0.9), Hit(2, 0.6), Hit(0, 0.0)]  # 0–10 scaled to 0–1; unscored: 0
    assert "[1] about dependencies in FastAPI" in model.requests[0].messages[0].text


async def test_failures_keep_the_fused_order() -> None:
    for step in (reply("I cannot score these."), ModelUnavailable("down")):
        hits = await ModelReranker(ScriptedModel([step])).rerank("q", TEXTS, 2)
        assert [h.index for h in hits] == [0, 1]
    assert [h.index for h in await FusedOrder().rerank("q", TEXTS, 10)] == [0, 1, 2, 3]
