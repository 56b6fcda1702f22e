"""Specification of rag/bm25.py: code-aware tokens, ranking, reuse and serialisation."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from almanac.rag.bm25 import BM25Index, TokenizerConfig, tokenize
from almanac.rag.retriever import Retriever

RAW = TokenizerConfig(split_identifiers=False, stopwords=False, stem=False)
SPLIT_ONLY = TokenizerConfig(split_identifiers=True, stopwords=False, stem=False)


@pytest.mark.parametrize(
    ("text", "config", "expected"),
    [
        ("Hello, World!", RAW, ["hello", "world"]),
        ("get_user_id", SPLIT_ONLY, ["get_user_id", "get", "user", "id"]),
        ("parseHTTPResponse", SPLIT_ONLY, ["parsehttpresponse", "parse", "http", "response"]),
        ("HTTPClient v2beta", SPLIT_ONLY, ["httpclient", "http", "client", "v2beta"]),
        ("CONSTANT plain", SPLIT_ONLY, ["constant", "plain"]),
        (
            "the retries of the client",
            TokenizerConfig(split_identifiers=False, stem=False),
            ["retries", "client"],
        ),
        ("configuring retries", TokenizerConfig(), ["configur", "retri"]),
        ("", TokenizerConfig(), []),
    ],
)
def test_tokenize(text: str, config: TokenizerConfig, expected: list[str]) -> None:
    assert tokenize(text, config) == expected


DOCS = [
    "Configure retries with the Retry transport in httpx.",
    "def get_user_id(request): return request.user.id",
    "Timeouts are set with httpx.Timeout(5.0).",
    "An unrelated paragraph about gardening and tomatoes.",
]


def test_search_ranks_the_matching_text_first() -> None:
    index = BM25Index.build(DOCS)
    assert index.search("how do I set a timeout", 2)[0].index == 2
    assert index.search("user id", 1)[0].index == 1  # found through identifier parts
    assert index.search("retrying requests", 1)[0].index == 0  # found through stemming


def test_search_returns_only_texts_sharing_a_term_best_first() -> None:
    index = BM25Index.build(DOCS)
    hits = index.search("httpx", 10)
    assert sorted(h.index for h in hits) == [0, 2]
    assert hits[0].score >= hits[1].score > 0
    assert index.search("zebra quantum", 10) == []
    assert index.search("", 10) == []
    assert len(index.search("httpx", 1)) == 1


def test_document_frequency_counts_the_texts_holding_a_term() -> None:
    index = BM25Index.build(["the cat sat", "cats ran", "dogs run"])
    assert index.document_frequency("cat") == 2  # a stemmed term, as tokenize gives it
    assert index.document_frequency("giraff") == 0
    assert BM25Index.build([]).document_frequency("cat") == 0


def test_index_is_built_once_and_answers_many_queries() -> None:
    index: Retriever = BM25Index.build(DOCS)
    first = index.search("httpx timeout", 3)
    for _ in range(3):
        index.search("gardening", 3)
    assert index.search("httpx timeout", 3) == first


def test_serialised_index_scores_exactly_like_the_original() -> None:
    index = BM25Index.build(DOCS, config=SPLIT_ONLY, k1=1.2, b=0.5)
    restored = BM25Index.from_bytes(index.to_bytes())
    assert len(restored) == len(index) == 4
    assert restored.config == SPLIT_ONLY
    for query in ("httpx retries", "get user", "tomatoes", "nothing matches"):
        np.testing.assert_array_equal(restored.scores(query), index.scores(query))


def test_an_empty_index_is_valid_and_serialisable() -> None:
    index = BM25Index.build([])
    assert len(index) == 0 and index.search("anything", 5) == []
    assert BM25Index.from_bytes(index.to_bytes()).search("anything", 5) == []


def test_an_unknown_serialised_format_is_rejected() -> None:
    buffer = io.BytesIO()
    np.savez(buffer, header=np.frombuffer(json.dumps({"version": 9}).encode(), dtype=np.uint8))
    with pytest.raises(ValueError):
        BM25Index.from_bytes(buffer.getvalue())
