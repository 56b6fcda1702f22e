"""Specification of rag/hybrid.py: build once, search BM25 and vectors concurrently, fuse."""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from almanac.rag.embeddings.base import EmbeddingError
from almanac.rag.hybrid import HybridConfig, HybridIndex, HybridSearcher, fuse
from almanac.rag.retriever import Hit

DIM = 64
TEXTS = [
    "Configure retries with the Retry transport.",
    "Timeouts are set per request.",
    "Connection pooling keeps sockets alive between requests.",
    "Gardening notes about tomatoes.",
]


class HashingEmbedder:
    """A deterministic bag-of-words embedder: texts sharing words get similar vectors."""

    model_id = "test/hashing"
    dimension = DIM
    max_tokens = 256

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[int, str]] = []
        self.threads: set[int] = set()

    async def embed(self, texts: Sequence[str], *, input_type: str) -> np.ndarray:
        self.calls.append((len(texts), input_type))
        self.threads.add(threading.get_ident())
        if self.fail:
            raise EmbeddingError("embedding service down")
        rows = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                rows[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return np.divide(rows, norms, out=rows, where=norms > 0)


async def test_index_embeds_documents_in_batches_and_records_the_model() -> None:
    embedder = HashingEmbedder()
    index = await HybridIndex.build(TEXTS, embedder, batch_size=3)
    assert embedder.calls == [(3, "document"), (1, "document")]
    assert index.model_id == "test/hashing"
    assert index.vectors is not None and len(index.vectors) == len(index.bm25) == 4


async def test_search_fuses_both_retrievers_and_embeds_the_query_once() -> None:
    embedder = HashingEmbedder()
    index = await HybridIndex.build(TEXTS, embedder)
    embedder.calls.clear()
    hits = await HybridSearcher(index, embedder).search("how do retries work with the transport", 2)
    assert embedder.calls == [(1, "query")]
    assert [h.index for h in hits][:1] == [0] and len(hits) <= 2


async def test_the_dense_side_embeds_the_question_as_written_when_given() -> None:
    embedder = HashingEmbedder()
    index = await HybridIndex.build(TEXTS, embedder)
    seen: list[str] = []
    original = embedder.embed

    async def recording(texts: Sequence[str], *, input_type: str) -> np.ndarray:
        seen.extend(texts)
        return await original(texts, input_type=input_type)

    embedder.embed = recording  # type: ignore[method-assign]
    question = "How do retries work with the transport?"
    assert await HybridSearcher(index, embedder).search("retries transport", 2, question=question)
    assert seen == [question]


async def test_search_degrades_to_bm25_when_the_embedder_fails() -> None:
    index = await HybridIndex.build(TEXTS, HashingEmbedder())
    hits = await HybridSearcher(index, HashingEmbedder(fail=True)).search("timeouts per request")
    assert hits == index.bm25.search("timeouts per request", 30)


@pytest.mark.parametrize("embedder", [None, HashingEmbedder()])
async def test_search_is_bm25_only_without_vectors(embedder: HashingEmbedder | None) -> None:
    index = await HybridIndex.build(TEXTS, None)
    assert index.vectors is None and index.model_id is None
    hits = await HybridSearcher(index, embedder).search("connection pooling")
    assert hits[0].index == 2 and hits == index.bm25.search("connection pooling", 30)


async def test_a_different_embedding_model_is_never_mixed_with_the_index() -> None:
    index = await HybridIndex.build(TEXTS, HashingEmbedder())
    other = HashingEmbedder()
    other.model_id = "another/model"
    await HybridSearcher(index, other).search("retries")
    assert other.calls == []


async def test_an_empty_index_answers_nothing() -> None:
    index = await HybridIndex.build([], HashingEmbedder())
    assert await HybridSearcher(index, HashingEmbedder()).search("anything") == []


async def test_bm25_runs_off_the_event_loop() -> None:
    index = await HybridIndex.build(TEXTS, None)
    loop_thread = threading.get_ident()
    seen: list[int] = []
    original = index.bm25.search

    def spy(query: str, k: int) -> list[Hit]:
        seen.append(threading.get_ident())
        return original(query, k)

    index.bm25.search = spy  # type: ignore[method-assign]
    await asyncio.gather(*(HybridSearcher(index, None).search(q) for q in ("retries", "timeouts")))
    assert len(seen) == 2 and loop_thread not in seen


@pytest.mark.parametrize(
    ("lexical", "dense", "config", "expected"),
    [
        ([Hit(1, 3.0), Hit(2, 1.0)], [], HybridConfig(), [1, 2]),
        ([], [Hit(4, 0.9), Hit(5, 0.8)], HybridConfig(), [4, 5]),
        ([Hit(1, 3.0), Hit(2, 1.0)], [Hit(2, 0.9), Hit(3, 0.8)], HybridConfig(), [2, 1, 3]),
        ([Hit(1, 3.0), Hit(2, 1.0)], [Hit(3, 0.9)], HybridConfig(limit=1), [1]),  # one dense hit: no spread
        ([Hit(1, 3.0), Hit(2, 1.0)], [Hit(3, 0.9)], HybridConfig(method="rrf", limit=1), [1]),
        ([Hit(1, 3.0), Hit(2, 1.0)], [Hit(3, 0.9), Hit(1, 0.1)], HybridConfig(method="zscore"), [1, 3, 2]),
        ([Hit(1, 3.0), Hit(2, 1.0)], [Hit(3, 0.9), Hit(1, 0.1)], HybridConfig(method="gated"), [3, 1, 2]),
    ],
)
def test_fuse(lexical: list[Hit], dense: list[Hit], config: HybridConfig, expected: list[int]) -> None:
    assert [h.index for h in fuse(lexical, dense, config)] == expected


def test_split_parts_of_a_section_keep_its_title_in_what_is_indexed() -> None:
    from almanac.rag.chunking import Chunk
    from almanac.rag.hybrid import index_text

    head = Chunk("a", "## Backups\n\nRun pg_dump nightly.", "Guide > Backups", None, None, 0, 5)
    tail = Chunk("b", "Keep seven copies.", "Guide > Backups", None, None, 1, 3)
    assert index_text(head) == head.text
    assert index_text(tail) == "Guide > Backups\nKeep seven copies."


def test_the_name_an_api_is_imported_by_is_shown_not_indexed() -> None:
    # its words are the heading's again: counted twice, they lifted re-exported APIs for any question naming the library
    from almanac.rag.chunking import EXPORTED_AS, Chunk
    from almanac.rag.hybrid import index_text

    title = "Module `asyncio.tasks` > `asyncio.tasks.gather(*aws)`"
    note = EXPORTED_AS.format("asyncio.gather")
    whole = Chunk("a", f"## `asyncio.tasks.gather(*aws)`\n\n{note}\n\nRun them.", title, None, None, 0, 9)
    assert index_text(whole) == "## `asyncio.tasks.gather(*aws)`\n\nRun them."
    # a part split off after the heading still gets its title, and a mention of the words in prose is kept
    part = Chunk("b", f"{note}\n\nRun them. {note}", title, None, None, 1, 9)
    assert index_text(part) == f"{title}\nRun them. {note}"
