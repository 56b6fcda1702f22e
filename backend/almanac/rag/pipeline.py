"""`retrieve_documentation`'s pipeline, wiring the steps; each step is its own module.

1. parse the request into a library name and a topic (`query.py`);
2. find candidate libraries in the doc source and pick one (`select.py`); an explicit
   `/owner/repo[@version]` ID is used as given, so a version pin is honoured;
3. fetch and chunk the documentation for the topic (`sources/`, `chunking.py`);
4. hybrid search: BM25 and vectors concurrently, fused (`hybrid.py`, `fusion.py`), top 30;
5. rerank to the best few, then apply any relevance threshold (`rerank.py`);
6. the result, formatted by `format.py`.

When the primary source is unreachable the local source answers, and the result says so. With
DOC_SOURCE=auto the primary is whichever source `AutoSource` routes to now; a question that finds
Context7 unreachable also tells it (later questions go straight to the local index). Before the local
index is searched, a question waits for a first build still under way (bounded, with progress reports).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from almanac.rag.chunking import Chunk
from almanac.rag.query import LIBRARY_ID, ParsedQuery, QueryParser, guess_library, topic_of
from almanac.rag.rerank import Reranker
from almanac.rag.select import LibrarySelector
from almanac.rag.sources.auto import AutoSource
from almanac.rag.sources.base import DocSource, DocSourceError, LibraryInfo, LibraryNotFound, SourceUnavailable
from almanac.rag.sources.local import LocalSource

MAX_QUERY_CHARS = 2000


@dataclass(frozen=True)
class DocRequest:
    query: str
    library: str | None = None
    topic: str | None = None
    progress: Callable[[str], None] | None = field(default=None, compare=False)  # tells the user what is slow


@dataclass(frozen=True)
class Passage:
    chunk: Chunk
    score: float


@dataclass(frozen=True)
class DocResult:
    library: LibraryInfo
    source: str
    topic: str
    passages: list[Passage]
    notes: list[str] = field(default_factory=list)


class DocumentationPipeline:
    def __init__(
        self,
        *,
        source: DocSource,
        fallback: LocalSource | None,
        parser: QueryParser,
        selector: LibrarySelector,
        reranker: Reranker,
        top_k: int = 6,
        candidates: int = 30,
        min_score: float | None = None,
    ) -> None:
        self.source = source
        self.fallback = fallback
        self.parser = parser
        self.selector = selector
        self.reranker = reranker
        self.top_k = top_k
        self.candidates = candidates
        self.min_score = min_score

    async def run(self, request: DocRequest) -> DocResult:
        """The best passages for a request; raises `DocSourceError` with a message for the model."""
        query = " ".join(request.query.split())
        if not query:
            raise DocSourceError(
                "The documentation query is empty. Say what to look up, e.g. 'FastAPI dependency injection'."
            )
        notes: list[str] = []
        if len(query) > MAX_QUERY_CHARS:
            notes.append(f"The query was {len(query):,} characters; only the first {MAX_QUERY_CHARS:,} were used.")
            query = query[:MAX_QUERY_CHARS]
        library_name = (request.library or "").strip() or None
        parsed = (
            ParsedQuery(library_name, topic_of(query, library_name)) if library_name else await self.parser.parse(query)
        )
        topic = (request.topic or "").strip() or parsed.topic
        primary = self.source.active() if isinstance(self.source, AutoSource) else self.source
        try:
            return await self._answer(primary, query, parsed.library, topic, notes, request.progress)
        except SourceUnavailable as exc:
            if isinstance(self.source, AutoSource) and primary is not self.source.local:
                self.source.failed(exc)
            if self.fallback is None or primary is self.fallback:
                raise
            notes.append(
                f"{primary.name} was unavailable ({exc}) — these passages come from the local documentation instead."
            )
            return await self._answer(self.fallback, query, parsed.library, topic, notes, request.progress)

    async def _answer(
        self,
        source: DocSource,
        query: str,
        name: str | None,
        topic: str,
        notes: list[str],
        progress: Callable[[str], None] | None,
    ) -> DocResult:
        if isinstance(source, LocalSource):
            await source.ready(progress)
        library = await self._library(source, query, name, notes)
        corpus = await source.corpus(library, topic)
        hits = await corpus.search(f"{topic} {query}" if topic not in query else query, self.candidates)
        texts = [corpus.chunks[hit.index].text for hit in hits]
        fused = [hit.score for hit in hits]
        reranked = await self.reranker.rerank(query, texts, self.top_k, fused=fused) if texts else []
        if self.min_score is not None:
            reranked = [hit for hit in reranked if hit.score >= self.min_score]
        passages = [Passage(corpus.chunks[hits[hit.index].index], hit.score) for hit in reranked]
        return DocResult(corpus.library, source.name, topic, passages, notes)

    async def _library(self, source: DocSource, query: str, name: str | None, notes: list[str]) -> LibraryInfo:
        local = isinstance(source, LocalSource)
        if name and LIBRARY_ID.fullmatch(name) and not local:
            return LibraryInfo(name, name, source=source.name)
        base, _, version = (name or "").partition("@") if name and not name.startswith("/") else (name or "", "", "")
        if local and base.startswith("/"):
            base = base.split("@")[0]
        if not base and isinstance(source, LocalSource):
            notes.append("No library was named, so all local documentation was searched.")
            return source.everything()
        base = base or guess_library(query) or ""
        if not base:
            raise LibraryNotFound(
                "Which library is this about? Call retrieve_documentation again with `library` set, e.g. "
                "'fastapi' or a Context7 ID such as '/tiangolo/fastapi'."
            )
        lookup = base.rsplit("/", 1)[-1] if base.startswith("/") else base
        candidates = await source.libraries(lookup, query)
        if not candidates:
            if isinstance(source, LocalSource):
                notes.append(f"No library called '{lookup}' is in the local documentation; all of it was searched.")
                return source.everything()
            raise LibraryNotFound(
                f"No library matching '{lookup}' was found in {source.name}. Try the package's exact name, or a "
                "Context7 ID such as '/owner/repo'."
            )
        chosen = await self.selector.choose(query, lookup, candidates)
        if version and not local:
            return LibraryInfo(
                f"{chosen.id.split('@')[0]}@{version}",
                chosen.title,
                chosen.description,
                chosen.trust_score,
                chosen.snippets,
                chosen.versions,
                chosen.source,
            )
        if version and local and version not in chosen.versions:
            notes.append(
                f"Version {version} was asked for; the local documentation is for version "
                f"{', '.join(chosen.versions) or 'unknown'}."
            )
        return chosen
