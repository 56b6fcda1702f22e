"""The local doc source: the index built by `almanac docs index` (folders under DOCS_PATHS, the
documentation of installed Python distributions, the standard library), loaded in memory.

While the first index is being built, a question waits for it (`ready`, bounded) instead of failing; each
library asked about is reported (`asked`), so the build embeds it next."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from almanac.rag.chunking import Chunk
from almanac.rag.embeddings.base import Embedder
from almanac.rag.hybrid import HybridConfig
from almanac.rag.local_search import STANDARD_LIBRARY, LocalIndex, search_local
from almanac.rag.public import prefer_public
from almanac.rag.retriever import Hit
from almanac.rag.select import EXACT, NAMED, name_match, normalise_name, rank_libraries
from almanac.rag.sources.base import LibraryInfo, LibraryNotFound, SourceUnavailable
from almanac.rag.spelling import Spelled

EVERYTHING = "/local/*"  # the whole index, when no library matches
LOCAL_TRUST = 7.0


@dataclass
class LocalCorpus:
    library: LibraryInfo
    chunks: Sequence[Chunk]
    index: LocalIndex
    embedder: Embedder | None
    config: HybridConfig

    async def search(self, query: str, k: int, *, question: str | None = None) -> list[Hit]:
        restrict = None if self.library.id == EVERYTHING else self.library.id
        hits = await search_local(
            self.index, self.embedder, query, library=restrict, config=self.config, k=k, question=question
        )
        return prefer_public(hits, lambda row: self.index.chunks[row].public)


class WaitLoaded(Protocol):
    def __call__(self, *, timeout_s: float, report: Callable[[str], None] | None) -> Awaitable[bool]:
        """Wait (at most `timeout_s`, only while a build runs) until an index is loaded; whether one is."""
        ...


class LocalSource:
    name = "local"

    def __init__(
        self,
        *,
        index: Callable[[], LocalIndex | None],
        embedder: Embedder | None,
        config: HybridConfig | None = None,
        missing: Callable[[], str] = lambda: "run `almanac docs index` to build it",
        wait: WaitLoaded | None = None,
        wait_s: float = 0.0,
        asked: Callable[[str], None] | None = None,
    ) -> None:
        self._index = index
        self._embedder = embedder
        self._config = config or HybridConfig()
        self._missing = missing
        self._wait = wait
        self._wait_s = wait_s
        self._asked = asked

    async def ready(self, report: Callable[[str], None] | None = None) -> None:
        """Return once the index is loaded; while the first one is being built, wait for it (at most the
        configured time), telling `report` how the build goes. Returns at once when nothing is being built."""
        if self._index() is None and self._wait is not None and self._wait_s > 0:
            await self._wait(timeout_s=self._wait_s, report=report)

    async def spelled(self, query: str, report: Callable[[str], None] | None = None) -> Spelled:
        """The question with its misspelt words read as the documentation's words (`spelling.py`); as it is
        while no index is loaded."""
        await self.ready(report)
        index = self._index()
        if index is None:
            return Spelled(query)
        return await asyncio.to_thread(lambda: index.speller().correct(query))

    def names(self) -> list[str]:
        """Every library title and ID tail the index knows (for offline query parsing)."""
        index = self._index()
        if index is None:
            return []
        imports = index.import_names()
        return [
            name
            for lib in index.libraries.values()
            for name in (lib.title, lib.id.rsplit("/", 1)[-1], *sorted(imports.get(lib.id, ())))
        ]

    def _loaded(self) -> LocalIndex:
        index = self._index()
        if index is None:
            raise SourceUnavailable(f"The local documentation index is not available yet ({self._missing()}).")
        return index

    async def libraries(self, name: str, query: str, *, loose: bool = True) -> list[LibraryInfo]:
        """The libraries a name may mean, best first: its own name, then an import name, then looser matches —
        with `loose`, a library whose description merely has the word too."""
        index = self._loaded()
        infos = [
            LibraryInfo(
                lib.id,
                lib.title,
                lib.description,
                LOCAL_TRUST,
                len(index.rows_of.get(lib.id, ())),
                (lib.version,) if lib.version else (),
                "local",
            )
            for lib in index.libraries.values()
        ]
        wanted, imports = normalise_name(name), index.import_names()

        def imported(info: LibraryInfo) -> bool:  # named the way code imports it: `yaml` for PyYAML
            return wanted in {normalise_name(module) for module in imports.get(info.id, ())}

        ranked = [info for info in rank_libraries(name, infos) if loose or name_match(name, info) >= NAMED]
        matched = {info.id for info in ranked}
        ranked += [info for info in infos if info.id not in matched and imported(info)]
        # its own name first, then an import name (as sure a sign), then looser matches; rank order within each
        ranked.sort(key=lambda info: 0 if name_match(name, info) >= EXACT else 1 if imported(info) else 2)
        return ranked[:10]

    async def most_distinctive(self, names: Sequence[str], query: str) -> str:
        """Of several library names in one question, the one most its library's own word: the highest share of
        the passages containing it that are its library's ("parse a JSON string into a dict" is about `json`,
        not `string`, an ordinary word). A name naming no library counts last; ties keep the given order."""
        index = self._loaded()

        async def share(name: str) -> float:
            named = await self.libraries(name, query, loose=False)
            return index.share(name, named[0].id) if named else -1.0

        shares = [await share(name) for name in names]
        return names[max(range(len(names)), key=lambda at: (shares[at], -at))]

    async def corpus(self, library: LibraryInfo, topic: str) -> LocalCorpus:
        index = self._loaded()
        base = library.id.split("@")[0]
        whole = base in (EVERYTHING, STANDARD_LIBRARY)
        if not whole and base not in index.libraries:
            raise LibraryNotFound(f"{library.id} is not in the local documentation index.")
        if not whole and self._asked is not None:
            self._asked(base)
        return LocalCorpus(
            library
            if base == library.id
            else LibraryInfo(
                base,
                library.title,
                library.description,
                library.trust_score,
                library.snippets,
                library.versions,
                "local",
            ),
            index.chunks,
            index,
            self._embedder,
            self._config,
        )

    def standard_library(self) -> LibraryInfo | None:
        """A pseudo-library standing for every standard-library module of the index (None: it has none)."""
        index = self._loaded()
        rows = sum(len(rows) for library, rows in index.rows_of.items() if library.startswith("/python/"))
        if not rows:
            return None
        return LibraryInfo(STANDARD_LIBRARY, "the Python standard library", "", LOCAL_TRUST, rows, (), "local")

    def everything(self) -> LibraryInfo:
        """A pseudo-library standing for the whole local index."""
        index = self._loaded()
        return LibraryInfo(EVERYTHING, "all local documentation", "", LOCAL_TRUST, len(index.chunks), (), "local")
