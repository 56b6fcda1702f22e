"""The local documentation index: built once (`almanac docs index`), stored in the database
(chunks, BM25 statistics, the embedding matrix), loaded at startup, searched per library.

Build: collect documents → chunk → BM25 → embeddings (through the embedding cache, so a rebuild
embeds only new chunks) → one transaction replacing the stored index. A fingerprint of the inputs
skips rebuilding an index that would not change.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from almanac.rag.bm25 import BM25Index
from almanac.rag.chunking import Chunk, chunk_document
from almanac.rag.embeddings.base import Embedder, EmbeddingError
from almanac.rag.embeddings.cache import content_hash
from almanac.rag.hybrid import HybridConfig, fuse, index_text
from almanac.rag.local_docs import Document, Library, distribution_documents, folder_documents, stdlib_documents
from almanac.rag.retriever import Hit, top_k
from almanac.rag.vectors import VectorIndex
from almanac.storage import docs as store
from almanac.storage.db import Database

log = logging.getLogger(__name__)
INDEX_VERSION = "2"
MAX_CHUNKS_PER_LIBRARY = 1500
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class IndexInputs:
    """What goes into the local index."""

    docs_paths: tuple[Path, ...] = ()
    packages: bool = True
    package_names: tuple[str, ...] | None = None  # None: every installed distribution
    stdlib: bool = True


@dataclass
class LocalIndex:
    """The loaded index: libraries, chunks, and their BM25 and vector indexes (rows aligned)."""

    libraries: dict[str, Library]
    chunks: list[Chunk]
    bm25: BM25Index
    vectors: VectorIndex | None
    model_id: str | None
    built_at: datetime
    rows_of: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        owners = np.array([chunk.library or "" for chunk in self.chunks])
        self.rows_of = {library: np.flatnonzero(owners == library) for library in self.libraries}

    def lexical(self, query: str, k: int, library: str | None) -> list[Hit]:
        """BM25 hits, restricted to one library's rows when `library` is given."""
        return _restricted(self.bm25.scores(query), self._rows(library), k, positive_only=True)

    def dense(self, vector: np.ndarray, k: int, library: str | None) -> list[Hit]:
        """Cosine hits, restricted to one library's rows when `library` is given."""
        if self.vectors is None:
            return []
        return _restricted(self.vectors.scores(vector), self._rows(library), k)

    def _rows(self, library: str | None) -> np.ndarray | None:
        return None if library is None else self.rows_of.get(library, np.zeros(0, dtype=np.int64))


def _restricted(scores: np.ndarray, rows: np.ndarray | None, k: int, *, positive_only: bool = False) -> list[Hit]:
    if rows is None:
        return top_k(scores, k, positive_only=positive_only)
    local = top_k(scores[rows], k, positive_only=positive_only)
    return [Hit(int(rows[hit.index]), hit.score) for hit in local]


async def search_local(
    index: LocalIndex, embedder: Embedder | None, query: str, *, library: str | None, config: HybridConfig, k: int
) -> list[Hit]:
    """BM25 and vector search over the index (or one library of it), run concurrently and fused."""
    lexical = asyncio.create_task(asyncio.to_thread(index.lexical, query, config.candidates, library))
    dense: list[Hit] = []
    if embedder is not None and index.vectors is not None and embedder.model_id == index.model_id:
        try:
            vector = (await embedder.embed([query], input_type="query"))[0]
            dense = await asyncio.to_thread(index.dense, vector, config.candidates, library)
        except EmbeddingError:
            log.warning("query embedding failed; BM25 only", exc_info=True)
    return fuse(await lexical, dense, config, limit=k)


def collect(inputs: IndexInputs) -> tuple[list[Library], list[Document]]:
    """Every library and document the inputs describe."""
    libraries: list[Library] = []
    documents: list[Document] = []
    for folder in inputs.docs_paths:
        found, docs = folder_documents(folder)
        libraries += found
        documents += docs
    groups: list[Iterable[tuple[Library, list[Document]]]] = []
    if inputs.packages:
        groups.append(distribution_documents(inputs.package_names))
    if inputs.stdlib:
        groups.append(stdlib_documents())
    for group in groups:
        for library, docs in group:
            libraries.append(library)
            documents += docs
    return libraries, documents


def chunk_all(documents: Sequence[Document]) -> list[Chunk]:
    """Chunk every document, at most MAX_CHUNKS_PER_LIBRARY per library (in document order)."""
    chunks: list[Chunk] = []
    per_library: dict[str, int] = {}
    for document in documents:
        room = MAX_CHUNKS_PER_LIBRARY - per_library.get(document.library_id, 0)
        if room <= 0:
            continue
        pieces = chunk_document(
            document.text,
            source_url=document.source_url,
            library=document.library_id,
            title=document.title,
            fmt=document.fmt,
        )[:room]
        per_library[document.library_id] = per_library.get(document.library_id, 0) + len(pieces)
        chunks += pieces
    return chunks


def fingerprint(libraries: Sequence[Library], documents: Sequence[Document], model_id: str | None) -> str:
    """A hash of everything the index depends on."""
    digest = hashlib.sha256(f"{INDEX_VERSION}|{model_id}".encode())
    for library in libraries:
        digest.update(f"{library.id}|{library.version}\n".encode())
    for document in documents:
        digest.update(content_hash(document.text).encode())
    return digest.hexdigest()


async def build_local_index(
    database: Database,
    inputs: IndexInputs,
    embedder: Embedder | None,
    *,
    force: bool = False,
    progress: Progress | None = None,
    batch_size: int = 256,
) -> tuple[bool, int]:
    """Build and store the local index; returns (whether it was rebuilt, number of chunks)."""
    say = progress or (lambda stage, done, total: None)
    say("collecting documents", 0, 0)
    libraries, documents = await asyncio.to_thread(collect, inputs)
    model_id = embedder.model_id if embedder is not None else None
    digest = fingerprint(libraries, documents, model_id)
    async with database.session() as session:
        stored = await store.local_index_fingerprint(session)
    if stored == digest and not force:
        return False, 0
    chunks = await asyncio.to_thread(chunk_all, documents)
    say("chunked", len(chunks), len(chunks))
    started = time.monotonic()
    texts = [index_text(chunk) for chunk in chunks]
    bm25 = await asyncio.to_thread(BM25Index.build, texts)
    say("BM25 index built", len(chunks), len(chunks))
    vectors: bytes | None = None
    if embedder is not None and chunks:
        parts = []
        for start in range(0, len(chunks), batch_size):
            batch = texts[start : start + batch_size]
            parts.append(await embedder.embed(batch, input_type="document"))
            say("embedding chunks", min(start + batch_size, len(chunks)), len(chunks))
        vectors = VectorIndex(np.vstack(parts)).to_bytes()
    counts: dict[str, int] = {}
    for chunk in chunks:
        counts[chunk.library or ""] = counts.get(chunk.library or "", 0) + 1
    rows = [
        store.ChunkRow(
            chunk.library or "", chunk.position, chunk.title, chunk.source_url, chunk.text, content_hash(chunk.text)
        )
        for chunk in chunks
    ]
    library_rows = [
        store.LibraryRow(lib.id, lib.title[:200], lib.description, lib.kind, lib.version[:50], counts.get(lib.id, 0))
        for lib in _unique(libraries)
        if counts.get(lib.id)
    ]
    index = store.IndexRow(datetime.now(UTC), len(chunks), digest, model_id, bm25.to_bytes(), vectors)
    async with database.session() as session:
        await store.replace_local_index(session, libraries=library_rows, chunks=rows, index=index)
    log.info(
        "local doc index: %d chunks from %d libraries in %.1f s",
        len(chunks),
        len(library_rows),
        time.monotonic() - started,
    )
    return True, len(chunks)


def _unique(libraries: Iterable[Library]) -> list[Library]:
    seen: dict[str, Library] = {}
    for library in libraries:
        seen.setdefault(library.id, library)
    return list(seen.values())


async def load_local_index(database: Database) -> LocalIndex | None:
    """The stored index, or None if it was never built."""
    async with database.session() as session:
        stored = await store.local_index(session)
    if stored is None:
        return None
    library_rows, chunk_rows, row = stored
    return await asyncio.to_thread(_materialise, library_rows, chunk_rows, row)


def _materialise(
    library_rows: Sequence[store.LibraryRow], chunk_rows: Sequence[store.ChunkRow], row: store.IndexRow
) -> LocalIndex:
    libraries = {
        lib.id: Library(lib.id, lib.title, lib.description, lib.kind, lib.version, None) for lib in library_rows
    }
    chunks = [
        Chunk(
            id=c.content_hash[:16],
            text=c.text,
            title=c.title,
            source_url=c.source_url,
            library=c.library_id,
            position=c.position,
            token_estimate=0,
        )
        for c in chunk_rows
    ]
    vectors = VectorIndex.from_bytes(row.vectors) if row.vectors else None
    return LocalIndex(libraries, chunks, BM25Index.from_bytes(row.bm25), vectors, row.model_id, row.built_at)
