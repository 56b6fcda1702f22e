"""Retrieval quality floors: fixed SciFact slices must keep their nDCG@10, so a broken pipeline fails CI.

BM25: the first 60 SciFact test queries (in qrels order) against a corpus of all their relevant
abstracts plus the first 1,000 other abstracts of the corpus file. Chunked and searched by the shipped
code (chunking → BM25 → fusion with no dense list). Measured 0.864 when written; the floor sits a few
points below.

Hybrid: the same 60 queries against their relevant abstracts plus the first 150 others (fewer, so
that embedding them stays quick in CI), chunked, embedded by the local MiniLM, BM25 and dense lists
fused by each FUSION method as the service does (``search_local``). Each floor sits a few points below
the figure measured when it was written (in ``HYBRID_FLOORS``), and the default must not fall below
BM25 alone on the same slice. Full figures: ``bench/retrieval.py``.

The data is read from ``../shared/data/ir`` next to the repository (or ALMANAC_IR_DATA); CI sets
ALMANAC_REQUIRE_IR_DATA=1, which turns a missing data set or embedding model into a failure.
"""

from __future__ import annotations

import json
import math
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from almanac.rag.bm25 import BM25Index
from almanac.rag.chunking import Chunk, chunk_document
from almanac.rag.hybrid import HybridConfig, fuse

NDCG_FLOOR = 0.83
QUERIES = 60
OTHER_DOCS = 1000


def _data_dir() -> Path | None:
    candidates = [
        Path(os.environ.get("ALMANAC_IR_DATA", "/nonexistent")),
        Path(__file__).resolve().parents[3].parent / "shared" / "data" / "ir",  # ../shared next to the repository
    ]
    return next((c for c in candidates if (c / "scifact").is_dir()), None)


def _ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    return dcg / sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))


def _missing(message: str) -> None:
    if os.environ.get("ALMANAC_REQUIRE_IR_DATA") == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


Slice = tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]


@pytest.fixture(scope="module")
def scifact_slice() -> Slice:
    return _slice(OTHER_DOCS)


def _slice(other_docs: int) -> Slice:
    root = _data_dir()
    if root is None:
        _missing("../shared/data/ir/scifact not found (set ALMANAC_IR_DATA)")
        raise AssertionError("unreachable")
    qrels: dict[str, dict[str, int]] = {}
    lines = (root / "scifact" / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    for line in lines:
        qid, did, score = line.split("\t")
        if int(score) > 0 and (qid in qrels or len(qrels) < QUERIES):
            qrels.setdefault(qid, {})[did] = int(score)
    wanted = {d for rel in qrels.values() for d in rel}
    docs: dict[str, str] = {}
    others = 0
    for line in (root / "scifact" / "corpus.jsonl").open(encoding="utf-8"):
        doc = json.loads(line)
        if doc["_id"] in wanted or others < other_docs:
            others += doc["_id"] not in wanted
            docs[doc["_id"]] = f"{doc['title']}\n\n{doc['text']}"
    queries = {}
    for line in (root / "scifact" / "queries.jsonl").open(encoding="utf-8"):
        query = json.loads(line)
        if query["_id"] in qrels:
            queries[query["_id"]] = query["text"]
    return docs, queries, qrels


def test_bm25_pipeline_keeps_its_ndcg_on_a_scifact_slice(
    scifact_slice: tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]],
) -> None:
    docs, queries, qrels = scifact_slice
    assert len(queries) == QUERIES and len(docs) >= OTHER_DOCS
    chunk_doc: list[str] = []
    texts: list[str] = []
    for doc_id, body in docs.items():
        for chunk in chunk_document(body, fmt="text", source_url=doc_id):
            chunk_doc.append(doc_id)
            texts.append(chunk.text)
    index = BM25Index.build(texts)
    scores = []
    for qid, query in queries.items():
        hits = fuse(index.search(query, 100), [], HybridConfig(), limit=100)
        ranked = list(dict.fromkeys(chunk_doc[h.index] for h in hits))  # best chunk per document
        scores.append(_ndcg_at_10(ranked, qrels[qid]))
    ndcg = sum(scores) / len(scores)
    assert ndcg >= NDCG_FLOOR, f"nDCG@10 fell to {ndcg:.3f} (floor {NDCG_FLOOR})"


HYBRID_OTHER_DOCS = 150  # 434 chunks: embedding them is most of this module's time (half a minute on one core)
HYBRID_FLOORS = {"gated": 0.92, "zscore": 0.91, "rrf": 0.91}  # measured 0.949, 0.945, 0.939 (BM25: 0.922)


def _chunked(docs: dict[str, str]) -> tuple[list[str], list[str]]:
    chunk_doc: list[str] = []
    texts: list[str] = []
    for doc_id, body in docs.items():
        for chunk in chunk_document(body, fmt="text", source_url=doc_id):
            chunk_doc.append(doc_id)
            texts.append(chunk.text)
    return chunk_doc, texts


@pytest.fixture(scope="module")
def hybrid_runs() -> tuple[Slice, list[str], object, object]:
    from almanac.rag.embeddings.base import EmbeddingError
    from almanac.rag.embeddings.minilm import MiniLMEmbedder

    data = _slice(HYBRID_OTHER_DOCS)
    chunk_doc, texts = _chunked(data[0])
    embedder = MiniLMEmbedder()
    try:
        vectors = embedder.encode(texts)
    except EmbeddingError as exc:
        _missing(f"the local embedding model is not available: {exc}")
    return data, chunk_doc, (texts, vectors), embedder


def _hybrid_ndcg(runs: tuple[Slice, list[str], object, object], config: HybridConfig | None) -> float:
    import asyncio

    import numpy as np

    from almanac.rag.local_docs import Library
    from almanac.rag.local_search import LocalIndex, search_local
    from almanac.rag.vectors import VectorIndex

    (_, queries, qrels), chunk_doc, (texts, vectors), embedder = runs  # type: ignore[misc]
    chunks = [
        Chunk(str(i), text, "", doc, "/scifact", i, 0)
        for i, (text, doc) in enumerate(zip(texts, chunk_doc, strict=True))
    ]
    index = LocalIndex(
        {"/scifact": Library("/scifact", "scifact", "", "folder", "", None)},
        chunks,
        BM25Index.build(texts),
        VectorIndex(np.asarray(vectors)) if config is not None else None,
        embedder.model_id,  # type: ignore[attr-defined]
        datetime.now(UTC),
    )

    async def run() -> float:
        scores = []
        for qid, query in queries.items():
            hits = await search_local(
                index,
                embedder,
                query,
                library=None,
                config=config or HybridConfig(),
                k=100,  # type: ignore[arg-type]
            )
            ranked = list(dict.fromkeys(chunk_doc[h.index] for h in hits))
            scores.append(_ndcg_at_10(ranked, qrels[qid]))
        return sum(scores) / len(scores)

    return asyncio.run(run())


@pytest.mark.heavy(group="hybrid retrieval floor")  # one module-scoped embedding for the three
@pytest.mark.parametrize("method", ["gated", "zscore", "rrf"])
def test_hybrid_pipeline_keeps_its_ndcg_on_a_scifact_slice(
    hybrid_runs: tuple[Slice, list[str], object, object], method: str
) -> None:
    ndcg = _hybrid_ndcg(hybrid_runs, HybridConfig(method=method))  # type: ignore[arg-type]
    print(f"hybrid {method}: nDCG@10 {ndcg:.3f}")
    assert ndcg >= HYBRID_FLOORS[method], f"{method} nDCG@10 fell to {ndcg:.3f} (floor {HYBRID_FLOORS[method]})"
    if method == "gated":
        bm25 = _hybrid_ndcg(hybrid_runs, None)
        print(f"BM25 alone on the same slice: nDCG@10 {bm25:.3f}")
        assert ndcg >= bm25, f"the default fusion ({ndcg:.3f}) fell below BM25 alone ({bm25:.3f})"
