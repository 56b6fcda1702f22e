"""Retrieval quality floor: a fixed SciFact slice must keep its nDCG@10, so a broken pipeline fails CI.

The slice: the first 60 SciFact test queries (in qrels order) against a corpus of all their
relevant abstracts plus the first 1,000 other abstracts of the corpus file. Chunked and searched
by the shipped code (chunking → BM25 → fusion with no dense list). Measured 0.864 when written;
the floor sits a few points below. Full figures: ``bench/retrieval.py``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from almanac.rag.bm25 import BM25Index
from almanac.rag.chunking import chunk_document
from almanac.rag.hybrid import HybridConfig, fuse

NDCG_FLOOR = 0.83
QUERIES = 60
OTHER_DOCS = 1000


def _data_dir() -> Path | None:
    candidates = [
        Path(os.environ.get("ALMANAC_IR_DATA", "/nonexistent")),
        Path(__file__).resolve().parents[4] / "shared" / "data" / "ir",
        Path("/work/shared/data/ir"),
    ]
    return next((c for c in candidates if (c / "scifact").is_dir()), None)


def _ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    return dcg / sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))


@pytest.fixture(scope="module")
def scifact_slice() -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    root = _data_dir()
    if root is None:
        message = "shared/data/ir/scifact not found (set ALMANAC_IR_DATA)"
        if os.environ.get("ALMANAC_REQUIRE_IR_DATA") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
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
        if doc["_id"] in wanted or others < OTHER_DOCS:
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
