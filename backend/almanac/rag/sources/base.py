"""Where documentation comes from: the `DocSource` protocol and its errors.

A source finds candidate libraries for a name and hands back a `Corpus` — the chunks of one
library's documentation for a topic, searchable by the hybrid retriever.

Errors (messages are shown to the model, so they say what to do next):
    DocSourceError        base class
      LibraryNotFound     no such library / no documentation for it
      NotFinalized        the source is still processing the library (Context7's 202)
      SourceUnavailable   the source cannot be reached or answered garbage (a fallback may help)
        RateLimited       still rate-limited after honouring Retry-After
      AuthFailed          the source rejected our credentials
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from almanac.rag.chunking import Chunk
from almanac.rag.retriever import Hit


class DocSourceError(Exception):
    """A documentation lookup failed; the message is safe and useful to show the model."""


class LibraryNotFound(DocSourceError):
    pass


class NotFinalized(DocSourceError):
    pass


class SourceUnavailable(DocSourceError):
    pass


class RateLimited(SourceUnavailable):
    pass


class AuthFailed(DocSourceError):
    pass


@dataclass(frozen=True)
class LibraryInfo:
    """A candidate library. `id` follows Context7's `/owner/repo[@version]` form."""

    id: str
    title: str
    description: str = ""
    trust_score: float = 0.0  # 0–10
    snippets: int = 0
    versions: tuple[str, ...] = ()
    source: str = ""


class Corpus(Protocol):
    """The documentation of one library for one request, ready to search."""

    library: LibraryInfo
    chunks: Sequence[Chunk]

    async def search(self, query: str, k: int, *, question: str | None = None) -> list[Hit]:
        """Up to `k` chunk indices (into `chunks`), best first, for the search words `query`; `question`, the
        request as written, is what the dense side of a hybrid search embeds (an embedding model reads a
        sentence better than its keywords; None: `query`)."""
        ...


@dataclass
class StaticCorpus:
    """A corpus whose search was done elsewhere (or an empty one)."""

    library: LibraryInfo
    chunks: Sequence[Chunk] = ()
    hits: list[Hit] = field(default_factory=list)

    async def search(self, query: str, k: int, *, question: str | None = None) -> list[Hit]:
        return self.hits[:k]


class DocSource(Protocol):
    @property
    def name(self) -> str:
        """The source's name as shown to the model and the user ("context7", "local")."""
        ...

    async def libraries(self, name: str, query: str) -> list[LibraryInfo]:
        """Candidate libraries for a name (best first); may be empty."""
        ...

    async def corpus(self, library: LibraryInfo, topic: str) -> Corpus:
        """The library's documentation for `topic`; raises `DocSourceError` subclasses."""
        ...
