"""The loaded local documentation index and its search: BM25 over every chunk, vectors where they are
ready, restricted to one library on request (the index itself is built by `local_index.py`).

While the first embeddings are still being computed, an index can be *partly hybrid*: `hybrid` names the
libraries whose vectors are complete, and only those are searched densely; every other search is BM25
alone. A stored index is always complete (`hybrid` is None).
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from almanac.rag.bm25 import BM25Index
from almanac.rag.chunking import Chunk
from almanac.rag.embeddings.base import Embedder, EmbeddingError
from almanac.rag.embeddings.minilm import vocabulary_words
from almanac.rag.fields import FieldIndex, FieldWeights, module_of
from almanac.rag.hybrid import HybridConfig, fuse
from almanac.rag.local_docs import Library
from almanac.rag.mentions import Mentions
from almanac.rag.popularity import Popularity
from almanac.rag.python_reference import from_bytes
from almanac.rag.ranking import within
from almanac.rag.retriever import Hit, top_k
from almanac.rag.spelling import Speller, word_frequencies
from almanac.rag.vectors import VectorIndex
from almanac.storage import docs as store
from almanac.storage.db import Database

log = logging.getLogger(__name__)

STANDARD_LIBRARY = "/python/*"  # a pseudo-library: every standard-library module (`/python/…`) at once
NAMED_CANDIDATES = 30  # chunks whose API name the question spells out, added to the lexical candidates
RARE_CHUNKS = 100  # a term in at most this many chunks is fully telling in an API's name (`rarity`; chosen on dev)


@dataclass
class LocalIndex:
    """Libraries, chunks, and their BM25 and vector indexes (rows aligned with `chunks`)."""

    libraries: dict[str, Library]
    chunks: list[Chunk]
    bm25: BM25Index
    vectors: VectorIndex | None
    model_id: str | None
    built_at: datetime
    rows_of: dict[str, np.ndarray] = field(default_factory=dict)  # computed when not given
    hybrid: frozenset[str] | None = None  # vectors complete for these libraries only (None: for all)
    weights: FieldWeights = field(default_factory=FieldWeights)  # the lead and module fields' weights
    popularity: Popularity = field(default_factory=Popularity)  # how much indexed code uses each API
    reference: Mapping[str, str] = field(default_factory=dict)  # the Python documentation's text of each API
    # Built once per list of chunks and carried over by `dataclasses.replace` (vectors added while
    # embedding progresses do not change it); see `fields()`.
    field_index: FieldIndex | None = field(default=None, repr=False, compare=False)
    mention_counts: tuple[list[Chunk], Mentions] | None = field(default=None, repr=False, compare=False)  # likewise
    spelling: tuple[list[Chunk], Speller] | None = field(default=None, repr=False, compare=False)  # likewise
    _fields_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _standard: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)  # STANDARD_LIBRARY's rows
    _imports: Mapping[str, frozenset[str]] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.rows_of:
            owners = np.array([chunk.library or "" for chunk in self.chunks])
            self.rows_of = {library: np.flatnonzero(owners == library) for library in self.libraries}

    def fields(self) -> FieldIndex:
        """The lead and module fields of the chunks (built on first use, once)."""
        with self._fields_lock:
            if self.field_index is None or self.field_index.chunks is not self.chunks:
                self.field_index = FieldIndex(self.chunks, self.popularity.words, self.reference)
            return self.field_index

    def import_names(self) -> Mapping[str, frozenset[str]]:
        """Per library, the top-level modules its passages document: the names code imports it by, which are
        often not its distribution's (`yaml` for PyYAML, `dotenv` for python-dotenv, `bs4`, `PIL`). Computed
        once, from the chunks' titles."""
        with self._fields_lock:
            if self._imports is None:
                found: dict[str, set[str]] = {}
                for chunk in self.chunks:
                    top = module_of(chunk).split(".")[0]
                    if chunk.library and top and not top.startswith("_"):
                        found.setdefault(chunk.library, set()).add(top)
                self._imports = {library: frozenset(names) for library, names in found.items()}
            return self._imports

    def warm(self) -> None:
        """Compute what searches use once, here rather than on the first question: the fields (~3 s for 78,000
        chunks), the import names (~0.1 s), the mentions (~1 s) and the speller (~1.5 s)."""
        self.fields()
        self.import_names()
        self.mentions()
        self.speller()

    def speller(self) -> Speller:
        """Reads a question's misspelt words as the passages' words (`spelling.py`). Computed once."""
        with self._fields_lock:
            if self.spelling is None or self.spelling[0] is not self.chunks:
                texts = (f"{chunk.title}\n{chunk.text}" for chunk in self.chunks)
                self.spelling = (self.chunks, Speller(word_frequencies(texts), known=vocabulary_words()))
            return self.spelling[1]

    def mentions(self) -> Mentions:
        """How many other APIs of its package call each API in their passages (`mentions.py`). Computed once."""
        with self._fields_lock:
            if self.mention_counts is None or self.mention_counts[0] is not self.chunks:
                self.mention_counts = (self.chunks, Mentions.count(self.chunks))
            return self.mention_counts[1]

    def has_vectors(self, library: str | None) -> bool:
        """Whether a dense search of `library` (None: every library) covers all of its chunks."""
        if self.vectors is None:
            return False
        return self.hybrid is None or (library is not None and library in self.hybrid)

    def lexical(self, query: str, k: int, library: str | None) -> list[Hit]:
        """Field-weighted BM25 hits (`fields.py`: the chunk's text, its API name and summary, its module's summary),
        restricted to one library's rows when `library` is given."""
        return self.lexical_and_named(query, k, library, named=0)[0]

    def lexical_and_named(self, query: str, k: int, library: str | None, *, named: int) -> tuple[list[Hit], list[Hit]]:
        """The `lexical` hits, and the best `named` of the chunks (of `library`, if given) whose API name the
        question spells out (`FieldIndex.named`), by the same score."""
        fields = self.fields()
        scores = fields.scores(query, self.bm25.scores(query), self.weights)
        rows = self._rows(library)
        hits = _restricted(scores, rows, k, positive_only=True)
        if not named:
            return hits, []
        spelled = fields.named(query)
        if rows is not None:
            spelled = np.intersect1d(spelled, rows, assume_unique=True)
        return hits, _restricted(scores, spelled, named, positive_only=True) if len(spelled) else []

    def dense(self, vector: np.ndarray, k: int, library: str | None) -> list[Hit]:
        """Cosine hits, restricted to one library's rows; empty unless `has_vectors(library)`."""
        if self.vectors is None or not self.has_vectors(library):
            return []
        return _restricted(self.vectors.scores(vector), self._rows(library), k)

    def rarity(self, term: str) -> float:
        """0–1: how telling a question's term (stemmed) is as part of an API's name: 1 for a term in at most
        RARE_CHUNKS chunks (`semaphore`, `gather`), less the more chunks contain it (`path`, `random`,
        `directory`), by its inverse document frequency; 1 for a term no chunk has."""
        total, having = len(self.chunks), self.bm25.document_frequency(term)
        if having <= RARE_CHUNKS or total <= RARE_CHUNKS:
            return 1.0
        return max(0.0, math.log(total / having) / math.log(total / RARE_CHUNKS))

    def share(self, word: str, library: str) -> float:
        """The share of the chunks containing `word` (as BM25 terms) that belong to `library`: near 1 for a
        distinctive name (`httpx`), low for an ordinary word that also names a library (`string`, `copy`).
        1 when no chunk contains it. The word is taken whole, however it is written: "FastAPI" or "Jinja2" as
        tokens would also be their parts (`fast`, `api`; `2`), which half the index contains."""
        containing = np.flatnonzero(self.bm25.scores(word.lower()) > 0)
        if not len(containing):
            return 1.0
        return float(np.isin(containing, self._family(library)).sum()) / len(containing)

    def _rows(self, library: str | None) -> np.ndarray | None:
        if library == STANDARD_LIBRARY:
            if self._standard is None:
                parts = [rows for name, rows in self.rows_of.items() if name.startswith("/python/")]
                self._standard = np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
            return self._standard
        return None if library is None else self._family(library)

    def _family(self, library: str) -> np.ndarray:
        """A library's rows, with those of its own modules documented as libraries of their own (`os.path`
        with `os`; `ranking.within`)."""
        inner = [rows for name, rows in self.rows_of.items() if within(name, library) and name != library]
        own = self.rows_of.get(library, np.zeros(0, dtype=np.int64))
        return np.sort(np.concatenate([own, *inner])) if inner else own


def _restricted(scores: np.ndarray, rows: np.ndarray | None, k: int, *, positive_only: bool = False) -> list[Hit]:
    if rows is None:
        return top_k(scores, k, positive_only=positive_only)
    local = top_k(scores[rows], k, positive_only=positive_only)
    return [Hit(int(rows[hit.index]), hit.score) for hit in local]


async def search_local(
    index: LocalIndex,
    embedder: Embedder | None,
    query: str,
    *,
    library: str | None,
    config: HybridConfig,
    k: int,
    question: str | None = None,
) -> list[Hit]:
    """BM25 and vector search over the index (or one library of it), run concurrently and fused; BM25
    alone where the vectors are not ready (or belong to another model). BM25 searches the words `query`; the
    vector search embeds `question` (the request as written) when given, else `query`."""
    lexical = asyncio.create_task(
        asyncio.to_thread(index.lexical_and_named, query, config.candidates, library, named=NAMED_CANDIDATES)
    )
    dense: list[Hit] = []
    if embedder is not None and index.has_vectors(library) and embedder.model_id == index.model_id:
        try:
            vector = (await embedder.embed([question or query], input_type="query"))[0]
            dense = await asyncio.to_thread(index.dense, vector, config.candidates, library)
        except EmbeddingError:
            log.warning("query embedding failed; BM25 only", exc_info=True)
    ranked, named = await lexical
    hits = fuse(ranked, dense, config, limit=k)
    # The chunks that the question names follow (scored lexically when nothing was fused, else last).
    kept = {hit.index for hit in hits}
    floor = min((hit.score for hit in hits), default=0.0)
    return hits + [Hit(h.index, h.score if not dense else floor) for h in named if h.index not in kept]


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
    index = LocalIndex(
        libraries,
        chunks,
        BM25Index.from_bytes(row.bm25),
        vectors,
        row.model_id,
        row.built_at,
        popularity=Popularity.from_bytes(row.popularity),
        reference=from_bytes(row.reference),
    )
    index.warm()
    return index
