"""Building the local documentation index (`almanac docs index`, or in the background on first start),
stored in the database: chunks, BM25 statistics, the embedding matrix.

Build: collect documents → chunk → BM25 → embeddings → one transaction replacing the stored index. A
fingerprint of the inputs skips rebuilding an index that would not change. Embeddings go through the
embedding cache, so a rebuild (or a build resumed after a restart) embeds only new chunks.

Given `publish`, the build hands out every stage as soon as it is usable, so search never waits for the
slow part: first the BM25 index (within a minute), then — library by library, in `LibraryPriority` order —
an index that is hybrid for each library whose chunks are embedded, and finally the complete index.
With `store_lexical`, the BM25 stage is also stored, so a restart serves it at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from almanac.rag.bm25 import BM25Index
from almanac.rag.chunking import Chunk, chunk_document
from almanac.rag.embeddings.base import Embedder
from almanac.rag.embeddings.cache import content_hash
from almanac.rag.hybrid import index_text
from almanac.rag.local_docs import (
    README,
    Document,
    Library,
    distribution_documents,
    folder_documents,
    housekeeping,
    stdlib_documents,
    with_introspection,
)
from almanac.rag.local_search import LocalIndex, load_local_index, search_local
from almanac.rag.popularity import Popularity
from almanac.rag.priority import MOST_ASKED, LibraryPriority, library_name
from almanac.rag.python_reference import descriptions, entries_markdown, read_reference, to_bytes, undocumented
from almanac.rag.ranking import is_aside
from almanac.rag.vectors import VectorIndex
from almanac.storage import docs as store
from almanac.storage.db import Database

__all__ = [
    "IndexInputs",
    "LocalIndex",
    "build_local_index",
    "chunk_all",
    "collect",
    "collect_sources",
    "complete",
    "fingerprint",
    "load_local_index",
    "search_local",
]

log = logging.getLogger(__name__)
INDEX_VERSION = "26"
MAX_CHUNKS_PER_LIBRARY = 1500
# The libraries developers most often ask about (`priority.MOST_ASKED`) may be large: SQLAlchemy's sessions, `select`
# and schema, and its asyncio extension, come after 1,500 passages of its engine internals (7,661 in all here).
MAX_CHUNKS_MOST_ASKED = 8000
_MOST_ASKED = frozenset(library_name(name) for name in MOST_ASKED)
Progress = Callable[[str, int, int], None]
Publish = Callable[[LocalIndex], None]


@dataclass(frozen=True)
class IndexInputs:
    """What goes into the local index."""

    docs_paths: tuple[Path, ...] = ()
    packages: bool = True
    package_names: tuple[str, ...] | None = None  # None: every installed distribution
    stdlib: bool = True
    introspect: bool = True  # also what importing the modules shows, in a subprocess (`introspect.py`)
    python_docs: Path | None = None  # the Python docs' library reference sources (`python_reference`), if any


def collect(inputs: IndexInputs) -> tuple[list[Library], list[Document]]:
    """Every library and document the inputs describe (with what introspection adds, if asked)."""
    return complete(inputs, *collect_sources(inputs))


def collect_sources(inputs: IndexInputs) -> tuple[list[Library], list[Document]]:
    """The libraries and documents read from files (`ast`, no imports); documents may still carry
    requests for introspection (`complete` answers them)."""
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


def complete(
    inputs: IndexInputs, libraries: list[Library], documents: list[Document]
) -> tuple[list[Library], list[Document]]:
    """The sources completed by introspection when `inputs.introspect`, else as they are; then, with the Python
    documentation (`inputs.python_docs`), by what only its reference documents (`with_reference`)."""
    if inputs.introspect:
        libraries, documents = with_introspection(libraries, documents)
    else:
        documents = [replace(document, introspect=None) for document in documents if document.text]
    if inputs.python_docs is not None:
        documents = with_reference(libraries, documents, inputs.python_docs)
    return libraries, documents


# the name a heading of the documents' Markdown documents (`## class `x``, `### property `x``, `## `async x(…)``)
_HEADING = re.compile(r"^#{1,6} (?:class |property )?`(?:async )?([A-Za-z_][\w.]*)", re.MULTILINE)


def with_reference(libraries: Sequence[Library], documents: Sequence[Document], folder: Path) -> list[Document]:
    """The standard library's documents completed with the objects only the Python documentation's reference
    documents (`python_reference.undocumented`: `sys.argv`, `os.environ`, `hashlib.scrypt`), each a passage of
    its module's document — a document of its own for a module that has none, in the library whose name is the
    module's longest prefix (`xml.dom` in `xml`)."""
    stdlib = {library.id: library for library in libraries if library.kind == "stdlib"}
    ours = [document for document in documents if document.library_id in stdlib]
    documented = {name for document in ours for name in _HEADING.findall(document.text)}
    completed = list(documents)
    where = {document.title: i for i, document in enumerate(completed) if document.library_id in stdlib}
    by_name = {library.title: library for library in stdlib.values()}
    uses = Popularity.count(document.uses for document in documents).modules
    for module, entries in undocumented(read_reference(folder), documented, uses).items():
        text = entries_markdown(entries)
        if module in where:
            document = completed[where[module]]
            completed[where[module]] = replace(document, text=f"{document.text}\n\n{text}")
            continue
        parts = module.split(".")
        prefixes = (".".join(parts[:i]) for i in range(len(parts), 0, -1))
        owner = next((by_name[name] for name in prefixes if name in by_name), None)
        if owner is not None:
            completed.append(Document(owner.id, module, f"# Module `{module}`\n\n{text}", "markdown", owner.url))
    return completed


def chunk_budget(library_id: str) -> int:
    """How many passages of a library the index keeps: MAX_CHUNKS_MOST_ASKED for a most-asked library,
    MAX_CHUNKS_PER_LIBRARY for any other."""
    return MAX_CHUNKS_MOST_ASKED if library_name(library_id) in _MOST_ASKED else MAX_CHUNKS_PER_LIBRARY


def chunk_all(documents: Sequence[Document]) -> list[Chunk]:
    """Chunk every document, at most `chunk_budget` passages per library, in document order (a package's shallow
    modules first). A library over its budget keeps every API's first passage before any API's further pieces
    (a long docstring's parameters and examples), so the cut drops depth, not whole APIs at the end of the
    order (`stripe`'s first module alone filled its budget); the modules in a namespace set aside from its API
    (`ranking.is_aside`: kept old versions, vendored copies, tests) come last, so they never crowd out the API. A
    package README's sections about the project rather than its use (`housekeeping`) are left out."""
    by_library: dict[str, list[tuple[bool, Chunk]]] = {}
    for document in documents:
        pieces = chunk_document(
            document.text,
            source_url=document.source_url,
            library=document.library_id,
            title=document.title,
            fmt=document.fmt,
        )
        if document.title.endswith(README):  # a package's README: what it says of using the package
            pieces = [piece for piece in pieces if not housekeeping(piece.title)]
        aside = is_aside(document.title)
        by_library.setdefault(document.library_id, []).extend((aside, piece) for piece in pieces)
    chunks: list[Chunk] = []
    for library, marked in by_library.items():
        chunks += within_budget(marked, chunk_budget(library))
    return chunks


def within_budget(pieces: Sequence[tuple[bool, Chunk]], budget: int) -> list[Chunk]:
    """At most `budget` of a library's passages (each with whether its module is set aside), in their order:
    all of them if they fit, else the API's own before the set-aside ones', each API's (heading's) first piece
    before any second piece, and so on."""
    if len(pieces) <= budget:
        return [chunk for _, chunk in pieces]
    turns: dict[str, int] = {}
    ranked = []
    for position, (aside, chunk) in enumerate(pieces):
        turn = turns.get(chunk.title, 0)
        turns[chunk.title] = turn + 1
        ranked.append((aside, turn, position))
    kept = sorted(position for _, _, position in sorted(ranked)[:budget])
    return [pieces[position][1] for position in kept]


def fingerprint(
    libraries: Sequence[Library],
    documents: Sequence[Document],
    model_id: str | None,
    *,
    introspect: bool = False,
    reference: Mapping[str, str] | None = None,
) -> str:
    """A hash of everything the index depends on. Taken over the sources before introspection: what it
    adds follows from the installed versions (hashed too), so a restart need not import anything."""
    digest = hashlib.sha256(f"{INDEX_VERSION}|{model_id}|{introspect}".encode())
    digest.update(to_bytes(reference or {}) or b"")
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
    publish: Publish | None = None,
    store_lexical: bool = False,
    priority: LibraryPriority | None = None,
    batch_size: int = 256,
) -> tuple[bool, int]:
    """Build and store the local index; returns (whether it was rebuilt, number of chunks).

    `publish` receives each usable stage (see the module docstring); `priority` orders the libraries'
    embeddings (default: `LibraryPriority()`); `store_lexical` also stores the BM25 stage.
    """
    say = progress or (lambda stage, done, total: None)
    say("collecting documents", 0, 0)
    libraries, documents = await asyncio.to_thread(collect_sources, inputs)
    reference = {}
    if inputs.python_docs is not None:
        reference = await asyncio.to_thread(descriptions, inputs.python_docs)
    model_id = embedder.model_id if embedder is not None else None
    digest = fingerprint(libraries, documents, model_id, introspect=inputs.introspect, reference=reference)
    lexical_digest = fingerprint(libraries, documents, None, introspect=inputs.introspect, reference=reference)
    async with database.session() as session:
        stored = await store.local_index_fingerprint(session)
    if stored == digest and not force:
        return False, 0
    started = time.monotonic()
    if inputs.introspect and publish is not None and any(d.introspect is not None for d in documents):
        # Introspection takes a while: serve BM25 over the sources first, as before it existed.
        plain = [replace(document, introspect=None) for document in documents if document.text]
        early, _ = await _lexical(libraries, plain, reference=reference)
        say("BM25 index of the sources built", len(early.chunks), len(early.chunks))
        await asyncio.to_thread(early.fields)  # built here, not on the first question
        publish(early)
    libraries, documents = await asyncio.to_thread(complete, inputs, libraries, documents)
    say("introspected", len(documents), len(documents))
    index, texts = await _lexical(libraries, documents, say, reference=reference)
    chunks, kept = index.chunks, index.libraries
    if embedder is None or store_lexical:
        await _store(database, index, lexical_digest if embedder else digest)
    if publish is not None:
        await asyncio.to_thread(index.fields)
        publish(index)
    if embedder is not None and chunks:
        index = await _embed(index, texts, embedder, priority or LibraryPriority(), publish, say, batch_size)
        await _store(database, index, digest)
        if publish is not None:
            publish(index)
    log.info(
        "local doc index: %d chunks from %d libraries in %.1f s", len(chunks), len(kept), time.monotonic() - started
    )
    return True, len(chunks)


async def _lexical(
    libraries: Sequence[Library],
    documents: Sequence[Document],
    say: Progress | None = None,
    *,
    reference: Mapping[str, str] | None = None,
) -> tuple[LocalIndex, list[str]]:
    """The BM25 stage of the index (and the indexed text of each chunk); the work runs in threads."""
    chunks = await asyncio.to_thread(chunk_all, documents)
    if say is not None:
        say("chunked", len(chunks), len(chunks))
    texts = [index_text(chunk) for chunk in chunks]
    bm25 = await asyncio.to_thread(BM25Index.build, texts)
    if say is not None:
        say("BM25 index built", len(chunks), len(chunks))
    counts = {library: 0 for library in _unique(libraries)}
    for chunk in chunks:
        counts[chunk.library or ""] = counts.get(chunk.library or "", 0) + 1
    kept = {lib.id: lib for lib in _unique(libraries).values() if counts.get(lib.id)}
    popularity = Popularity.count(
        (d.uses for d in documents), (d.contexts for d in documents), (d.title for d in documents)
    )
    index = LocalIndex(
        kept, chunks, bm25, None, None, datetime.now(UTC), popularity=popularity, reference=dict(reference or {})
    )
    await asyncio.to_thread(index.warm)  # before it is published: the first question does not pay for it
    return index, texts


async def _embed(
    lexical: LocalIndex,
    texts: Sequence[str],
    embedder: Embedder,
    priority: LibraryPriority,
    publish: Publish | None,
    say: Progress,
    batch_size: int,
) -> LocalIndex:
    """The index with every chunk embedded, library by library in priority order; each finished library
    is published at once (its search becomes hybrid). The priority is consulted again after each library,
    so a library asked about meanwhile goes next."""
    vectors = VectorIndex.allocate(len(texts), embedder.dimension)
    pending = {library: rows for library, rows in lexical.rows_of.items() if len(rows)}
    covered = np.concatenate(list(pending.values())) if pending else np.zeros(0, dtype=np.int64)
    orphans = np.setdiff1d(np.arange(len(texts)), covered)  # chunks of no known library: searched as "all"
    ready: set[str] = set()
    done = 0
    while pending:
        library = priority.order({name: len(rows) for name, rows in pending.items()})[0]
        rows = pending.pop(library)
        for start in range(0, len(rows), batch_size):
            part = rows[start : start + batch_size]
            vectors.write(part, await embedder.embed([texts[i] for i in part], input_type="document"))
            done += len(part)
            say("embedding chunks", done, len(texts))
        ready.add(library)
        if publish is not None:
            publish(replace(lexical, vectors=vectors, model_id=embedder.model_id, hybrid=frozenset(ready)))
    for start in range(0, len(orphans), batch_size):
        part = orphans[start : start + batch_size]
        vectors.write(part, await embedder.embed([texts[i] for i in part], input_type="document"))
    say("embedding chunks", len(texts), len(texts))
    return replace(lexical, vectors=vectors, model_id=embedder.model_id, hybrid=None)


async def _store(database: Database, index: LocalIndex, digest: str) -> None:
    """Replace the stored index with `index` (which must be complete: BM25 only, or hybrid for all)."""
    rows = [
        store.ChunkRow(
            chunk.library or "", chunk.position, chunk.title, chunk.source_url, chunk.text, content_hash(chunk.text)
        )
        for chunk in index.chunks
    ]
    library_rows = [
        store.LibraryRow(
            lib.id, lib.title[:200], lib.description, lib.kind, lib.version[:50], len(index.rows_of[lib.id])
        )
        for lib in index.libraries.values()
    ]
    vectors = index.vectors.to_bytes() if index.vectors is not None else None
    row = store.IndexRow(
        datetime.now(UTC),
        len(index.chunks),
        digest,
        index.model_id,
        index.bm25.to_bytes(),
        vectors,
        index.popularity.to_bytes(),
        to_bytes(index.reference),
    )
    async with database.session() as session:
        await store.replace_local_index(session, libraries=library_rows, chunks=rows, index=row)


def _unique(libraries: Iterable[Library]) -> dict[str, Library]:
    seen: dict[str, Library] = {}
    for library in libraries:
        seen.setdefault(library.id, library)
    return seen
