"""Retrieval quality: nDCG@10 and Recall@100 of BM25, dense, RRF and the default hybrid fusion.

Runs on the BEIR-layout sets in ``shared/data/ir`` (SciFact test, CACM test, CoSQA dev) and prints
Markdown tables next to the reference figures of that folder's README:

    .venv/bin/python bench/retrieval.py [--datasets scifact,cacm,cosqa] [--limit-queries N]
                                        [--no-dense] [--data DIR]
    .venv/bin/python bench/retrieval.py --select-fusion   # how the default fusion was chosen

Two tables: "as published" scores every corpus entry as its own document, like the reference
figures; "duplicates collapsed" counts identical texts as one document (first copy kept in the
ranking, relevance = max over copies). CoSQA has 20,604 entries but only 6,267 distinct texts, so
its as-published figures mostly measure how ties between copies happen to be ordered.

Dense retrieval uses the local all-MiniLM-L6-v2 embedder (``almanac.rag.embeddings.minilm``).
Corpus and query embeddings are cached in ``bench/.cache/embeddings/`` keyed by the model id and a
hash of the texts, so only the first run pays for embedding (about 45 minutes for all three sets
on 2 cores; SciFact's long abstracts run at ~8 a second).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backend"))

from almanac.rag.bm25 import BM25Index, TokenizerConfig  # noqa: E402
from almanac.rag.hybrid import HybridConfig, fuse  # noqa: E402
from almanac.rag.retriever import Hit, top_k  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "ir"  # ../shared next to the repository
CACHE = ROOT / "bench" / ".cache" / "embeddings"
SPLITS = {"scifact": "test", "cacm": "test", "cosqa": "dev"}
DEPTH = HybridConfig().candidates  # each retriever's list length before fusion (1,000, as the reference)
DEFAULT_LABEL = "hybrid default: semantically gated z-score fusion"

# nDCG@10 / Recall@100 from shared/data/ir/README.md (its CoSQA figures are on the test split).
REFERENCE = {
    "rank-bm25, lowercase regex tokens": {"scifact": (0.652, 0.873), "cosqa": (0.162, 0.564)},
    "bm25s with stopwords + stemming": {"scifact": (0.686, 0.913), "cosqa": (0.188, 0.638)},
    "MiniLM dense": {"scifact": (0.645, 0.925), "cosqa": (0.327, 0.912)},
    "equal-weight RRF, stemmed bm25s + MiniLM": {
        "scifact": (0.718, 0.955),
        "cosqa": (0.262, 0.880),
        "cacm": (0.551, 0.806),
    },
}
TOKENIZERS = {
    "BM25 (bm25s), lowercase word tokens": TokenizerConfig(False, False, False, 2),
    "BM25 (bm25s), + stopwords + stemming": TokenizerConfig(False, True, True),
    "BM25 (bm25s), + identifier split [default]": TokenizerConfig(),
}


@dataclass(frozen=True)
class Dataset:
    name: str
    doc_ids: list[str]
    doc_texts: list[str]
    query_ids: list[str]
    query_texts: list[str]
    qrels: dict[str, dict[str, int]]
    query_label: str = ""  # cache label of the queries when they are a sample (default: name)


def load_dataset(root: Path, name: str, split: str, limit: int | None = None) -> Dataset:
    """Corpus (title + text), the queries that have a relevant document in ``split``, and qrels."""
    docs = [json.loads(line) for line in (root / name / "corpus.jsonl").open(encoding="utf-8")]
    queries = {}
    for line in (root / name / "queries.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        queries[q["_id"]] = q["text"]
    qrels: dict[str, dict[str, int]] = {}
    with (root / name / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    qids = [q for q in qrels if q in queries][:limit]
    return Dataset(
        name=name,
        doc_ids=[d["_id"] for d in docs],
        doc_texts=[f"{d.get('title', '')}\n{d['text']}".strip() for d in docs],
        query_ids=qids,
        query_texts=[queries[q] for q in qids],
        qrels={q: qrels[q] for q in qids},
    )


def title_queries(root: Path, name: str, queries: int, distractors: int) -> Dataset:
    """Validation set from a corpus alone: a document's title is the query, its body the target."""
    docs = [json.loads(line) for line in (root / name / "corpus.jsonl").open(encoding="utf-8")]
    docs = [d for d in docs if len(d["text"].split()) >= 20 and len(d["title"].split()) >= 3]
    random.Random(0).shuffle(docs)
    targets, corpus = docs[:queries], docs[: queries + distractors]
    return Dataset(
        name=f"{name}-titles",
        doc_ids=[d["_id"] for d in corpus],
        doc_texts=[d["text"] for d in corpus],
        query_ids=[f"t{d['_id']}" for d in targets],
        query_texts=[d["title"] for d in targets],
        qrels={f"t{d['_id']}": {d["_id"]: 1} for d in targets},
    )


def sample_queries(data: Dataset, n: int, label: str) -> Dataset:
    """``n`` queries drawn with a fixed seed (used for the CoSQA train split)."""
    picked = sorted(random.Random(0).sample(range(len(data.query_ids)), min(n, len(data.query_ids))))
    qids = [data.query_ids[i] for i in picked]
    return replace(
        data,
        query_label=label,
        query_ids=qids,
        query_texts=[data.query_texts[i] for i in picked],
        qrels={q: data.qrels[q] for q in qids},
    )


def ndcg_at_k(ranked: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    """Standard nDCG@k with gain 2^rel − 1 and log2 discount; ideal DCG from the qrels."""
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], relevant: dict[str, int], k: int = 100) -> float:
    """Share of the relevant documents found in the first ``k``."""
    return len(set(ranked[:k]) & relevant.keys()) / len(relevant) if relevant else 0.0


# --- embeddings with an on-disk cache -----------------------------------------------------------


def load_embedder() -> Any | None:
    """The local MiniLM embedder, or None when its module or model files are not available."""
    try:
        from almanac.rag.embeddings.minilm import MiniLMEmbedder
    except ImportError:
        return None
    return MiniLMEmbedder()


def cached_embeddings(embedder: Any, texts: list[str], input_type: str, label: str) -> np.ndarray:
    """Embeddings of ``texts``, read from / written to the cache keyed by model id and content hash."""
    model_id = str(embedder.model_id)
    digest = hashlib.sha256("\x1f".join([model_id, input_type, *texts]).encode()).hexdigest()[:20]
    path = CACHE / model_id.replace("/", "__") / f"{label}-{input_type}-{digest}.npy"
    if path.exists():
        return np.load(path)
    started = time.perf_counter()
    parts = []
    for start in range(0, len(texts), 256):
        batch = texts[start : start + 256]
        parts.append(asyncio.run(embedder.embed(batch, input_type=input_type)))
        rate = (start + len(batch)) / (time.perf_counter() - started)
        print(f"  embedding {label} ({input_type}): {start + len(batch)}/{len(texts)}, {rate:.1f}/s", file=sys.stderr)
    matrix = np.vstack(parts).astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, matrix)
    return matrix


# --- methods and evaluation ---------------------------------------------------------------------

Method = Callable[[list[Hit], list[Hit]], list[Hit]]


def fusion_methods() -> dict[str, Method]:
    """The compared fusions of one query's BM25 and dense lists (all over the top 1,000 of each)."""
    default = HybridConfig()

    def with_config(config: HybridConfig) -> Method:
        return lambda lex, vec: fuse(lex, vec, config, limit=DEPTH)

    return {
        "MiniLM dense (exact cosine)": lambda _, vec: vec,
        "RRF equal weights, k=60": with_config(replace(default, method="rrf")),
        "z-score fusion, equal weights": with_config(replace(default, method="zscore")),
        DEFAULT_LABEL: with_config(default),
        # The pipeline's offline path keeps the fused order (the LLM reranker is the online path).
        "hybrid default + offline rerank (= fused order, no reranker)": with_config(default),
    }


Runs = list[tuple[list[Hit], list[Hit]]]


def retrieve(data: Dataset, embedder: Any | None, tokenizer: TokenizerConfig) -> Runs:
    """Per query: the BM25 top 1,000 and (with an embedder) the dense top 1,000."""
    bm25 = BM25Index.build(data.doc_texts, config=tokenizer)
    doc_vectors = query_vectors = None
    if embedder is not None:
        doc_vectors = cached_embeddings(embedder, data.doc_texts, "document", data.name)
        query_vectors = cached_embeddings(embedder, data.query_texts, "query", data.query_label or data.name)
    runs: Runs = []
    for i, text in enumerate(data.query_texts):
        dense = (
            top_k(doc_vectors @ query_vectors[i], DEPTH)
            if doc_vectors is not None and query_vectors is not None
            else []
        )
        runs.append((bm25.search(text, DEPTH), dense))
    return runs


def score(data: Dataset, runs: Runs, method: Method, collapse: bool) -> tuple[float, float]:
    """Mean nDCG@10 and Recall@100; with ``collapse``, identical texts count as one document."""
    first: dict[str, int] = {}
    canon = [first.setdefault(t, i) for i, t in enumerate(data.doc_texts)] if collapse else None
    position = {d: i for i, d in enumerate(data.doc_ids)}
    ndcg = recall = 0.0
    for qid, (lexical, dense) in zip(data.query_ids, runs, strict=True):
        relevant = data.qrels[qid]
        ranked = [h.index for h in method(lexical, dense)]
        if canon is not None:
            ranked = list(dict.fromkeys(canon[i] for i in ranked))
            merged: dict[str, int] = {}
            for doc, grade in relevant.items():
                key = data.doc_ids[canon[position[doc]]]
                merged[key] = max(merged.get(key, 0), grade)
            relevant = merged
        ids = [data.doc_ids[i] for i in ranked]
        ndcg += ndcg_at_k(ids, relevant)
        recall += recall_at_k(ids, relevant)
    n = max(1, len(runs))
    return ndcg / n, recall / n


def evaluate(data: Dataset, embedder: Any | None) -> dict[bool, dict[str, tuple[float, float]]]:
    """Every method on ``data``, as published (False) and with duplicates collapsed (True)."""
    results: dict[bool, dict[str, tuple[float, float]]] = {False: {}, True: {}}
    runs: Runs = []
    for label, tokenizer in TOKENIZERS.items():
        runs = retrieve(data, embedder if tokenizer == TokenizerConfig() else None, tokenizer)
        for collapse in (False, True):
            results[collapse][label] = score(data, runs, lambda lex, _: lex, collapse)
    if embedder is not None:  # `runs` now holds the default tokenizer's lists plus the dense lists
        for label, method in fusion_methods().items():
            for collapse in (False, True):
                results[collapse][label] = score(data, runs, method, collapse)
    return results


def markdown_table(results: dict[str, dict[str, tuple[float, float]]], reference: bool) -> str:
    """One row per method, one column per dataset (cells: nDCG@10 / Recall@100)."""
    names = list(results)
    rows = ["| method | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for method in dict.fromkeys(m for r in results.values() for m in r):
        cells = [
            f"{results[n][method][0]:.3f} / {results[n][method][1]:.3f}" if method in results[n] else "" for n in names
        ]
        rows.append(f"| {method} | " + " | ".join(cells) + " |")
    if reference:
        for method, figures in REFERENCE.items():
            cells = [
                f"{figures[n.split()[0]][0]:.3f} / {figures[n.split()[0]][1]:.3f}" if n.split()[0] in figures else ""
                for n in names
            ]
            rows.append(f"| reference (README): {method} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


# --- how the default fusion was chosen ----------------------------------------------------------


def selection_family() -> dict[str, HybridConfig]:
    """The candidate fusions, fixed before looking at any score."""
    base = HybridConfig()
    family = {
        "RRF k=60": replace(base, method="rrf"),
        "z-score": replace(base, method="zscore"),
        **{f"weighted RRF, dense {w}": replace(base, method="rrf", weights=(1 - w, w)) for w in (0.6, 0.7, 0.8)},
    }
    for top in (1, 3):
        for tau in (0.05, 0.1, 0.2):
            family[f"gated z-score top={top} tau={tau}"] = replace(base, gate_top=top, gate_tau=tau)
    return family


def select_fusion(root: Path, embedder: Any) -> None:
    """Score the family on validation data only and rank by the worst gain over the best single retriever."""
    cosqa_train = sample_queries(load_dataset(root, "cosqa", "train"), 1000, "cosqa-train1000")
    sets = [cosqa_train, title_queries(root, "scifact", 500, 1500), title_queries(root, "cacm", 500, 1057)]
    gains: dict[str, list[float]] = {}
    header = []
    for data in sets:
        runs = retrieve(data, embedder, TokenizerConfig())
        best = max(score(data, runs, lambda lex, _: lex, True)[0], score(data, runs, lambda _, vec: vec, True)[0])
        header.append(f"{data.query_label or data.name} (best single {best:.3f})")
        for label, config in selection_family().items():
            fused = score(data, runs, lambda lex, vec, c=config: fuse(lex, vec, c, limit=DEPTH), True)[0]  # type: ignore[misc]
            gains.setdefault(label, []).append(fused - best)
    print("nDCG@10 gain over the better single retriever, validation sets only (duplicates collapsed)\n")
    print("| fusion | " + " | ".join(header) + " | worst |\n|---|" + "---|" * (len(sets) + 1))
    for label, row in sorted(gains.items(), key=lambda kv: -min(kv[1])):
        print(f"| {label} | " + " | ".join(f"{g:+.3f}" for g in row) + f" | {min(row):+.3f} |")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="scifact,cacm,cosqa")
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--no-dense", action="store_true", help="BM25 only (no embedder needed)")
    parser.add_argument("--select-fusion", action="store_true", help="rerun the choice of the default fusion")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    embedder = None if args.no_dense else load_embedder()
    if embedder is None and not args.no_dense:
        print("MiniLM embedder not available: BM25 only", file=sys.stderr)
    if args.select_fusion:
        if embedder is None:
            parser.error("--select-fusion needs the MiniLM embedder")
        select_fusion(args.data, embedder)
        return
    tables: dict[bool, dict[str, dict[str, tuple[float, float]]]] = {False: {}, True: {}}
    for name in args.datasets.split(","):
        data = load_dataset(args.data, name, SPLITS[name], args.limit_queries)
        column = f"{name} {SPLITS[name]} ({len(data.query_ids)} q)"
        for collapse, results in evaluate(data, embedder).items():
            tables[collapse][column] = results
    print("## nDCG@10 / Recall@100, as published (reference CoSQA figures are on its test split)\n")
    print(markdown_table(tables[False], reference=True))
    print("\n## nDCG@10 / Recall@100, identical texts collapsed into one document\n")
    print(markdown_table(tables[True], reference=False))


if __name__ == "__main__":
    main()
