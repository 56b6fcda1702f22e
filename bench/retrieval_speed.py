"""Retrieval speed: per-query p50/p95 of BM25, vector search and fusion, plus index build times.

Two indexes: one 500-chunk document and a ~30,000-chunk index, both made of real text (SciFact
abstracts, CoSQA functions and CACM abstracts chunked by ``rag.chunking``). Query embeddings are
precomputed (random unit vectors of the MiniLM dimension: cosine search costs the same whatever
the values), so "total" excludes embedding the query; with the MiniLM embedder present its
per-query time is reported on its own line.

    .venv/bin/python bench/retrieval_speed.py [--queries 200] [--rank-bm25-queries 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))

from almanac.rag.bm25 import BM25Index, tokenize  # noqa: E402
from almanac.rag.chunking import chunk_document  # noqa: E402
from almanac.rag.hybrid import HybridConfig, HybridIndex, HybridSearcher, fuse  # noqa: E402
from almanac.rag.retriever import top_k  # noqa: E402
from almanac.rag.vectors import VectorIndex  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "ir"  # ../shared next to the repository
DIM = 384


def corpus_chunks(limit: int) -> list[str]:
    """Chunk texts from the SciFact, CoSQA and CACM corpora, interleaved, at most ``limit``."""
    per_set: list[list[str]] = []
    for name in ("scifact", "cosqa", "cacm"):
        texts: list[str] = []
        for line in (DATA / name / "corpus.jsonl").open(encoding="utf-8"):
            doc = json.loads(line)
            body = f"{doc.get('title', '')}\n\n{doc['text']}".strip()
            texts.extend(c.text for c in chunk_document(body, fmt="text"))
        per_set.append(texts)
    mixed = [t for group in zip(*per_set, strict=False) for t in group]
    mixed += [t for texts in per_set for t in texts[min(map(len, per_set)) :]]
    return mixed[:limit]


def queries(n: int) -> list[str]:
    out: list[str] = []
    for name in ("scifact", "cosqa"):
        lines = (DATA / name / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        out.extend(json.loads(line)["text"] for line in lines[: n // 2])
    return out


def timed(fn: Callable[[], object], repeat: int = 1) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - started) / repeat * 1000


def percentiles(samples: list[float]) -> str:
    cuts = statistics.quantiles(samples, n=20)
    return f"p50 {statistics.median(samples):7.2f} ms · p95 {cuts[18]:7.2f} ms"


class _FixedEmbedder:
    """Returns a precomputed query vector, so async search can be timed without a model."""

    model_id = "fixed"
    dimension = DIM
    max_tokens = 256

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = vector[None, :]

    async def embed(self, texts: object, *, input_type: str) -> np.ndarray:
        return self.vector


def bench_index(label: str, texts: list[str], qs: list[str], rank_bm25_queries: int) -> None:
    rng = np.random.default_rng(0)
    print(f"\n## {label}: {len(texts)} chunks, {len(qs)} queries\n")
    started = time.perf_counter()
    bm25 = BM25Index.build(texts)
    print(f"- build bm25s index: {(time.perf_counter() - started) * 1000:.0f} ms")
    blob = bm25.to_bytes()
    load_ms = timed(lambda: BM25Index.from_bytes(blob))
    print(f"- bm25s index blob: {len(blob) / 1e6:.1f} MB; from_bytes {load_ms:.0f} ms")
    matrix = rng.standard_normal((len(texts), DIM)).astype(np.float32)
    started = time.perf_counter()
    vectors = VectorIndex(matrix)
    print(f"- build vector index ({DIM}-d): {(time.perf_counter() - started) * 1000:.0f} ms")
    qvecs = rng.standard_normal((len(qs), DIM)).astype(np.float32)
    config = HybridConfig()
    depth = config.candidates
    lex_t, vec_t, fuse_t, total_t = [], [], [], []
    for q, qv in zip(qs, qvecs, strict=True):
        t0 = time.perf_counter()
        lexical = bm25.search(q, depth)
        t1 = time.perf_counter()
        dense = vectors.search(qv, depth)
        t2 = time.perf_counter()
        fuse(lexical, dense, config)
        t3 = time.perf_counter()
        lex_t.append((t1 - t0) * 1000)
        vec_t.append((t2 - t1) * 1000)
        fuse_t.append((t3 - t2) * 1000)
        total_t.append((t3 - t0) * 1000)
    print(f"- BM25 search (bm25s, top {depth}):   {percentiles(lex_t)}")
    print(f"- vector search (top {depth}):        {percentiles(vec_t)}")
    print(f"- fusion ({config.method}):              {percentiles(fuse_t)}")
    print(f"- BM25 + vector + fusion, sequential: {percentiles(total_t)}")
    print(f"- async HybridSearcher.search:   {percentiles(async_search_times(texts, bm25, vectors, qs, qvecs))}")
    bench_rank_bm25(texts, qs[:rank_bm25_queries])


def async_search_times(
    texts: list[str], bm25: BM25Index, vectors: VectorIndex, qs: list[str], qvecs: np.ndarray
) -> list[float]:
    """End-to-end async search (BM25 thread ∥ embedding, then vector thread, then fusion)."""
    index = HybridIndex(bm25, vectors, "fixed")

    async def run() -> list[float]:
        samples = []
        for q, qv in zip(qs, qvecs, strict=True):
            searcher = HybridSearcher(index, _FixedEmbedder(qv))
            t0 = time.perf_counter()
            await searcher.search(q)
            samples.append((time.perf_counter() - t0) * 1000)
        return samples

    return asyncio.run(run())


def bench_rank_bm25(texts: list[str], qs: list[str]) -> None:
    """The design card's original engine, for comparison (same tokens)."""
    from rank_bm25 import BM25Okapi

    started = time.perf_counter()
    engine = BM25Okapi([tokenize(t) or [""] for t in texts])
    print(f"- build rank-bm25 BM25Okapi:   {(time.perf_counter() - started) * 1000:.0f} ms")
    samples = []
    for q in qs:
        t0 = time.perf_counter()
        top_k(np.asarray(engine.get_scores(tokenize(q))), 1000, positive_only=True)
        samples.append((time.perf_counter() - t0) * 1000)
    print(f"- BM25 search (rank-bm25, {len(qs)} q): {percentiles(samples)}")


def bench_query_embedding(qs: list[str]) -> None:
    try:
        from almanac.rag.embeddings.minilm import MiniLMEmbedder
    except ImportError:
        print("\n(MiniLM embedder not available: query-embedding time not measured)")
        return
    embedder = MiniLMEmbedder()

    async def run() -> list[float]:
        await embedder.embed(["warm up"], input_type="query")
        samples = []
        for q in qs:
            t0 = time.perf_counter()
            await embedder.embed([q], input_type="query")
            samples.append((time.perf_counter() - t0) * 1000)
        return samples

    print(f"\n- MiniLM query embedding (one query): {percentiles(asyncio.run(run()))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rank-bm25-queries", type=int, default=30)
    parser.add_argument("--large", type=int, default=30_000)
    args = parser.parse_args()
    qs = queries(args.queries)
    chunks = corpus_chunks(args.large)
    bench_index("one document", chunks[:500], qs, args.rank_bm25_queries)
    bench_index("large index", chunks, qs, args.rank_bm25_queries)
    bench_query_embedding(qs[:50])


if __name__ == "__main__":
    main()
