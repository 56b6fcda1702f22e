"""Step 5: reranking (the chat model's scores parsed leniently; failures keep the fused order)."""

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence

import numpy as np
import pytest

from almanac.llm.base import ModelUnavailable
from almanac.llm.events import ModelEvent
from almanac.llm.fake import ScriptedModel, events_of, reply
from almanac.llm.messages import ModelRequest
from almanac.rag.embeddings.base import EmbeddingError, InputType
from almanac.rag.rerank import DenseReorder, FusedOrder, ModelReranker, blend, leads_clearly, parse_scores
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


async def test_the_search_order_breaks_a_close_call_and_a_sure_judgement_still_wins() -> None:
    texts = ["best by search", "second by search", "third by search", "last by search"]
    fused = [0.9, 0.7, 0.5, 0.4]  # scaled to the candidates' range: 1, 0.6, 0.2, 0
    answer = '[{"id": 0, "score": 7}, {"id": 1, "score": 7.5}, {"id": 2, "score": 10}, {"id": 3, "score": 9}]'
    blended = await ModelReranker(ScriptedModel([reply(answer)])).rerank("q", texts, 4, fused=fused)
    # 0.7 + 0.5 × 1 = 1.2; 1.0 + 0.5 × 0.2 = 1.1; 0.75 + 0.5 × 0.6 = 1.05; 0.9 + 0 = 0.9
    assert [hit.index for hit in blended] == [0, 2, 1, 3]
    assert [hit.score for hit in blended] == [0.7, 1.0, 0.75, 0.9]  # the model's own judgement, 0–1
    alone = await ModelReranker(ScriptedModel([reply(answer)]), fused_weight=0.0).rerank("q", texts, 4, fused=fused)
    assert [hit.index for hit in alone] == [2, 3, 1, 0]


@pytest.mark.parametrize(
    ("answer", "order"),
    [
        # on 0–100 anyway: 7, 7.5, 10 on the scale asked for, so the search's order still counts as much
        ('[{"id": 0, "score": 70}, {"id": 1, "score": 75}, {"id": 2, "score": 100}]', [0, 1, 2]),
        # below 0 counts 0, not less
        ('[{"id": 0, "score": -40}, {"id": 1, "score": 6}, {"id": 2, "score": 0}]', [1, 0, 2]),
    ],
)
async def test_scores_on_another_scale_are_brought_to_the_one_asked_for(answer: str, order: list[int]) -> None:
    texts = ["first by search", "second by search", "third by search"]
    hits = await ModelReranker(ScriptedModel([reply(answer)])).rerank("q", texts, 3, fused=[0.9, 0.8, 0.7])
    assert [hit.index for hit in hits] == order
    assert all(0.0 <= hit.score <= 1.0 for hit in hits)


class KeywordJudge:
    """A fake chat model with a known rule: a passage mentioning `keyword` scores 9, any other 2.
    `delay_s` makes it slow; `garbled` makes it answer without scores."""

    provider = "fake"
    name = "keyword judge"
    supports_tools = False
    supports_streaming = True

    def __init__(self, keyword: str, *, delay_s: float = 0.0, garbled: bool = False) -> None:
        self.keyword = keyword
        self.delay_s = delay_s
        self.garbled = garbled
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        await asyncio.sleep(self.delay_s)
        passages = re.findall(r"^\[(\d+)\] (.*)$", request.messages[0].text, re.MULTILINE)
        scores = [{"id": int(i), "score": 9 if self.keyword in text else 2} for i, text in passages]
        for event in events_of(reply("Passage 3 looks best!" if self.garbled else json.dumps(scores))):
            yield event


CANDIDATES = [f"passage {i} about routing" for i in range(30)]
CANDIDATES[4] = "passage 4 about gzip middleware"
CANDIDATES[9] = "passage 9 about gzip compression"
CANDIDATES[25] = "passage 25 about gzip, beyond the cap"


async def test_the_reranker_orders_by_the_models_scores_within_its_token_bounds() -> None:
    judge = KeywordJudge("gzip")
    hits = await ModelReranker(judge, max_candidates=20).rerank("add gzip", CANDIDATES, 4)
    assert [hit.index for hit in hits] == [4, 9, 0, 1]
    assert [hit.score for hit in hits] == [0.9, 0.9, 0.2, 0.2]
    prompt = judge.requests[-1].messages[0].text
    assert "[19] passage 19" in prompt and "[20]" not in prompt  # at most 20 candidates are sent
    assert judge.requests[-1].max_tokens == 12 * 20 + 50


async def test_candidates_past_the_cap_follow_in_fused_order_and_passages_are_cut() -> None:
    judge = KeywordJudge("gzip")
    hits = await ModelReranker(judge, max_candidates=5, passage_chars=10).rerank("add gzip", CANDIDATES, 30)
    assert [hit.index for hit in hits] == [0, 1, 2, 3, 4, *range(5, 30)]  # "passage 4 " lost its keyword
    assert "[4] passage 4\n" in judge.requests[0].messages[0].text + "\n"


@pytest.mark.parametrize("judge", [KeywordJudge("gzip", delay_s=5.0), KeywordJudge("gzip", garbled=True)])
async def test_a_slow_or_garbled_judge_keeps_the_fused_order(judge: KeywordJudge) -> None:
    fused = [1.0 - i / 30 for i in range(30)]
    hits = await ModelReranker(judge, timeout_s=0.05).rerank("add gzip", CANDIDATES, 6, fused=fused)
    assert [hit.index for hit in hits] == [0, 1, 2, 3, 4, 5]
    assert hits[0].score == 1.0


def test_blend_adds_the_scaled_similarity_to_the_scaled_fused_score() -> None:
    assert blend([3.0, 2.0, 1.0], [0.1, 0.5, 0.3], 0.5) == pytest.approx([1.0, 1.0, 0.25])
    assert blend([1.0, 1.0], [0.2, 0.2], 0.5) == [1.0, 1.0]  # equal similarities add nothing
    assert blend([], [], 0.5) == []


def test_similarities_about_equal_do_not_outweigh_the_fused_order() -> None:
    # a few APIs of one small library differ by a few hundredths of cosine: scaled to their own range (0.45–0.56
    # as 0–1) the second would pass the first; a spread under SIMILARITY_FLOOR counts as that floor
    assert blend([3.0, 2.5, 1.0], [0.50, 0.56, 0.45], 1.0) == pytest.approx([1.0 + 0.05 / 0.3, 0.75 + 0.11 / 0.3, 0.0])
    blended = blend([3.0, 2.5, 1.0], [0.50, 0.56, 0.45], 1.0)
    assert blended[0] > blended[1]


class AxisEmbedder:
    """Embeds a text on the axis of the first keyword it contains (a fake with known similarities)."""

    model_id = "fake/axes"
    dimension = 3
    max_tokens = 64
    KEYWORDS = ("delete", "cache", "other")

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail

    async def embed(self, texts: Sequence[str], *, input_type: InputType) -> np.ndarray:
        if self.fail:
            raise EmbeddingError("model unavailable")
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            axis = next((i for i, word in enumerate(self.KEYWORDS) if word in text), 2)
            rows[row, axis] = 1.0
        return rows


def order(scores: Sequence[float] | None) -> list[int]:
    """The candidates' indexes, best score first."""
    assert scores is not None
    return sorted(range(len(scores)), key=lambda i: -scores[i])


def test_a_first_candidate_leads_clearly_when_far_ahead_of_the_second_among_enough_candidates() -> None:
    close = [1.0, 0.9, *[0.5 - i / 100 for i in range(10)]]  # a sixth of the range (0.59) ahead
    far = [1.5, 0.8, *[0.5 - i / 100 for i in range(10)]]  # 0.7 of 1.09 ahead
    assert not leads_clearly(close) and leads_clearly(far)
    assert leads_clearly(list(reversed(far)))  # the scores' best and second best, wherever they stand
    assert not leads_clearly([1.5, 0.8, 0.5])  # the range of three says nothing of a lead
    assert not leads_clearly([1.0] * 12)


async def test_dense_reorder_lets_the_question_embedding_reorder_close_candidates() -> None:
    texts = ["cache entry options", "delete a directory tree", "other things"]
    scores = await DenseReorder(AxisEmbedder()).scores("delete a folder", texts, fused=[1.0, 0.9, 0.0])
    assert order(scores) == [1, 0, 2]
    # in the fused order's units: the fused score scaled to 0–1 plus 1.0 × the similarity scaled to 0–1
    assert scores == pytest.approx([1.0, 1.9, 0.0])


async def test_within_the_one_library_asked_for_the_question_embedding_weighs_less() -> None:
    # the fused order of a single library's passages knows its centre and names; the embedding counts half
    texts = ["cache entry options", "delete a directory tree", "other things"]
    reorder = DenseReorder(AxisEmbedder())
    wide = await reorder.scores("delete a folder", texts, fused=[1.0, 0.4, 0.0])
    assert order(wide) == [1, 0, 2]  # 0.4 + 1.0 × 1 beats 1.0
    narrow = await reorder.scores("delete a folder", texts, fused=[1.0, 0.4, 0.0], narrow=True)
    assert order(narrow) == [0, 1, 2]  # 0.4 + 0.5 × 1 does not


async def test_dense_reorder_also_weighs_each_candidates_gist() -> None:
    # two passages of signatures alike to the question's embedding; the gist of the second says what is asked
    texts = ["other: signature one", "other: signature two", "other: signature three"]
    gists = ["cache.clear: empties a cache", "shutil.rmtree: delete a directory tree", "other: nothing"]
    fused = [1.0, 0.9, 0.0]
    reorder = DenseReorder(AxisEmbedder())
    assert order(await reorder.scores("delete a folder", texts, fused=fused)) == [0, 1, 2]
    assert order(await reorder.scores("delete a folder", texts, fused=fused, gists=gists)) == [1, 0, 2]
    # gists that do not match the candidates one for one are left out
    assert order(await reorder.scores("delete a folder", texts, fused=fused, gists=gists[:2])) == [0, 1, 2]


async def test_dense_reorder_gives_no_scores_when_embedding_fails_or_the_fused_scores_do_not_match() -> None:
    texts = ["cache entry options", "delete a directory tree"]
    assert await DenseReorder(AxisEmbedder(fail=True)).scores("delete", texts, fused=[1.0, 0.9]) is None
    assert await DenseReorder(AxisEmbedder()).scores("delete", texts, fused=[1.0]) is None
