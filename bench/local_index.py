"""The local documentation index of this machine as a first start builds it: when BM25 is served, when
each stage turns hybrid (the most-asked libraries first), how much is hybrid after 4 minutes, when all
of it is; then how fast a query searches it (BM25 + vectors + fusion), over every library or one.

Builds the index exactly as the server's first start does (installed distributions and the standard
library; `--docs` adds a folder; BM25 published and stored first, then embeddings library by library in
`LibraryPriority` order) into a fresh SQLite database, with the local MiniLM embedder on `--runtime`
(the embedding cache starts empty, so every chunk is embedded), then times queries.

    python bench/local_index.py [--no-embeddings] [--no-introspect] [--runtime auto|onnxruntime|numpy] [--queries 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from almanac.rag.embeddings.cache import CachedEmbedder
from almanac.rag.embeddings.minilm import MiniLMEmbedder
from almanac.rag.hybrid import HybridConfig
from almanac.rag.local_index import IndexInputs, LocalIndex, build_local_index, load_local_index, search_local
from almanac.rag.priority import MOST_ASKED, LibraryPriority, library_name
from almanac.storage.db import Database
from almanac.storage.migrate import upgrade_async

QUESTIONS = [
    ("how do I cancel a task group", "/python/asyncio"),
    ("declare a dependency with Depends", "/pypi/fastapi"),
    ("async session commit and rollback", "/pypi/sqlalchemy"),
    ("read settings from environment variables", "/pypi/pydantic-settings"),
    ("stream a response body", "/pypi/httpx"),
    ("validate a JSON schema", "/pypi/jsonschema"),
    ("parse command line arguments", "/python/argparse"),
    ("retry with exponential backoff", "/pypi/tenacity"),
    ("run an alembic migration programmatically", "/pypi/alembic"),
    ("server sent events response", "/pypi/sse-starlette"),
]


def stats(samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"{statistics.median(ordered) * 1000:.1f} / {ordered[int(0.95 * (len(ordered) - 1))] * 1000:.1f}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-embeddings", action="store_true")
    parser.add_argument("--no-introspect", action="store_true", help="source read with ast only (before issue 20)")
    parser.add_argument("--docs", type=Path, default=None)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--runtime", default="auto", choices=["auto", "onnxruntime", "numpy"])
    args = parser.parse_args()
    url = f"sqlite+aiosqlite:///{Path(tempfile.mkdtemp()) / 'index.db'}"
    await upgrade_async(url)
    database = Database(url)
    inner = MiniLMEmbedder(runtime=args.runtime)
    embedder = None if args.no_embeddings else CachedEmbedder(inner, database)
    inputs = IndexInputs(docs_paths=(args.docs,) if args.docs else (), introspect=not args.no_introspect)
    marks: dict[str, float] = {}
    started = time.monotonic()

    def progress(stage: str, done: int, total: int) -> None:
        marks.setdefault(stage, time.monotonic() - started)
        if stage == "embedding chunks":
            marks["embedded"] = time.monotonic() - started
            if done % 2048 < 256:
                print(f"  embedding {done:,}/{total:,} ({time.monotonic() - started:.0f} s)", flush=True)

    stages: list[tuple[float, LocalIndex]] = []
    _, chunks = await build_local_index(
        database,
        inputs,
        embedder,
        progress=progress,
        publish=lambda index: stages.append((time.monotonic() - started, index)),
        store_lexical=True,
        priority=LibraryPriority(),
    )
    built = time.monotonic() - started
    index = await load_local_index(database)
    assert index is not None
    loaded = time.monotonic() - started - built
    config = HybridConfig()
    questions = (QUESTIONS * (args.queries // len(QUESTIONS) + 1))[: args.queries]
    query_vectors = {q: None for q, _ in questions}
    timings: dict[str, list[float]] = {"all": [], "one library": [], "embed query": []}
    for question, _ in questions:
        begin = time.perf_counter()
        if embedder is not None:
            query_vectors[question] = (await inner.embed([question], input_type="query"))[0]
        timings["embed query"].append(time.perf_counter() - begin)
    cached = _Cached(inner.model_id, query_vectors) if embedder is not None else None
    for question, library in questions:
        for scope, restrict in (("all", None), ("one library", library if library in index.libraries else None)):
            begin = time.perf_counter()
            await search_local(index, cached, question, library=restrict, config=config, k=30)
            timings[scope].append(time.perf_counter() - begin)
    embedding = marks.get("embedded", 0) - marks.get("BM25 index built", 0)
    print(
        f"\nLocal documentation index: {chunks:,} chunks from {len(index.libraries):,} libraries "
        f"({'BM25 only' if embedder is None else inner.model_id})\n"
    )
    print("| step | seconds |\n|---|---|")
    if "introspected" in marks:
        print(
            f"| BM25 over the sources served (before introspection) | {marks['BM25 index of the sources built']:.1f} |"
        )
        print(f"| introspection done | {marks['introspected']:.1f} |")
    print(f"| collect + chunk | {marks.get('chunked', 0):.1f} |")
    print(f"| BM25 index | {marks.get('BM25 index built', 0) - marks.get('chunked', 0):.1f} |")
    if embedder is not None:
        print(f"| embeddings ({chunks / max(embedding, 1e-9):.0f} chunks/s) | {embedding:.1f} |")
    print(f"| whole build (incl. storing) | {built:.1f} |")
    if embedder is not None:
        print_timeline(stages)
    print(f"| load at startup | {loaded:.1f} |")
    print(f"\nPer query, embeddings cached (p50 / p95 ms, {len(questions)} queries):\n")
    print("| search | ms |\n|---|---|")
    print(f"| BM25 + vector + fusion, all libraries | {stats(timings['all'])} |")
    print(f"| BM25 + vector + fusion, one library | {stats(timings['one library'])} |")
    if embedder is not None:
        print(f"| embedding the query (MiniLM, not cached) | {stats(timings['embed query'])} |")
    await database.dispose()


def print_timeline(stages: list[tuple[float, LocalIndex]]) -> None:
    """When a first start serves what: BM25, hybrid for the most-asked libraries, what is hybrid at 4 minutes."""
    final = stages[-1][1]
    sizes = {library: len(rows) for library, rows in final.rows_of.items()}
    asked = {library for library in sizes if library_name(library) in {library_name(n) for n in MOST_ASKED}}
    first_ten = [lib for lib in LibraryPriority().order(sizes) if lib in asked][:10]

    def first_time(condition: object) -> float | None:
        return next((t for t, index in stages if condition(index)), None)  # type: ignore[operator]

    def hybrid(index: LocalIndex) -> frozenset[str] | set[str]:
        return set() if index.vectors is None else (index.hybrid if index.hybrid is not None else set(sizes))

    rows = [
        ("BM25 over everything served", first_time(lambda i: True)),
        (f"hybrid for the 10 most-asked libraries here ({sum(sizes[x] for x in first_ten):,} chunks)",
         first_time(lambda i: set(first_ten) <= hybrid(i))),
        (f"hybrid for all {len(asked)} most-asked libraries here ({sum(sizes[x] for x in asked):,} chunks)",
         first_time(lambda i: asked <= hybrid(i))),
        (f"hybrid for every library ({sum(sizes.values()):,} chunks)",
         first_time(lambda i: i.hybrid is None and i.vectors is not None)),
    ]  # fmt: skip
    print("\nFirst start, seconds from the start of the build:\n\n| stage | seconds |\n|---|---|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.0f} |" if seconds is not None else f"| {label} | — |")
    at_four = [index for t, index in stages if t <= 240]
    if at_four:
        ready = hybrid(at_four[-1])
        print(
            f"| hybrid after 4 minutes | {len(ready)} of {len(sizes)} libraries, "
            f"{sum(sizes[x] for x in ready):,} of {sum(sizes.values()):,} chunks |"
        )


class _Cached:
    """The query vectors computed beforehand, served as an embedder (queries are "cached")."""

    def __init__(self, model_id: str, vectors: dict[str, object]) -> None:
        self.model_id = model_id
        self.dimension = 384
        self.max_tokens = 256
        self._vectors = vectors

    async def embed(self, texts: list[str], *, input_type: str) -> object:
        import numpy as np

        return np.vstack([self._vectors[text] for text in texts])


if __name__ == "__main__":
    asyncio.run(main())
