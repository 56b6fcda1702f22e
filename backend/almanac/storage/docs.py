"""Documentation storage: the doc-source response cache, the embedding cache and the local index."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.tables import CachedEmbedding, DocCacheEntry, DocChunk, DocIndex, DocLibrary, utcnow


@dataclass(frozen=True)
class CachedResponse:
    status: int
    body: str


@dataclass(frozen=True)
class LibraryRow:
    id: str
    title: str
    description: str
    kind: str
    version: str
    chunk_count: int


@dataclass(frozen=True)
class ChunkRow:
    library_id: str
    position: int
    title: str
    source_url: str | None
    text: str
    content_hash: str


@dataclass(frozen=True)
class IndexRow:
    built_at: datetime
    chunk_count: int
    fingerprint: str
    model_id: str | None
    bm25: bytes
    vectors: bytes | None
    popularity: bytes | None = None  # `rag.popularity.Popularity.to_bytes`
    reference: bytes | None = None  # `rag.python_reference.to_bytes`


async def cached_response(session: AsyncSession, *, key: str, now: datetime) -> CachedResponse | None:
    """An unexpired cached response, or None."""
    row = (
        await session.execute(select(DocCacheEntry).where(DocCacheEntry.key == key, DocCacheEntry.expires_at > now))
    ).scalar_one_or_none()
    return CachedResponse(row.status, row.body) if row else None


async def cache_response(
    session: AsyncSession, *, key: str, source: str, status: int, body: str, expires_at: datetime
) -> None:
    """Store (or replace) a cached response."""
    await session.execute(delete(DocCacheEntry).where(DocCacheEntry.key == key))
    await session.execute(
        insert(DocCacheEntry).values(
            key=key, source=source, status=status, body=body, created_at=utcnow(), expires_at=expires_at
        )
    )


async def cached_embeddings(session: AsyncSession, *, model_id: str, hashes: Sequence[str]) -> dict[str, bytes]:
    """The stored vectors among `hashes` for a model."""
    found: dict[str, bytes] = {}
    for start in range(0, len(hashes), 500):
        rows = await session.execute(
            select(CachedEmbedding.content_hash, CachedEmbedding.vector).where(
                CachedEmbedding.model_id == model_id, CachedEmbedding.content_hash.in_(hashes[start : start + 500])
            )
        )
        found.update({content_hash: vector for content_hash, vector in rows.all()})
    return found


async def cache_embeddings(session: AsyncSession, *, model_id: str, vectors: Mapping[str, bytes]) -> None:
    """Store vectors; ones already stored (by a concurrent request, say) are left alone."""
    if not vectors:
        return
    dialect = session.get_bind().dialect.name
    factory = pg_insert if dialect == "postgresql" else sqlite_insert
    now = utcnow()
    rows = [{"model_id": model_id, "content_hash": h, "vector": v, "created_at": now} for h, v in vectors.items()]
    for start in range(0, len(rows), 500):
        statement = factory(CachedEmbedding).values(rows[start : start + 500]).on_conflict_do_nothing()
        await session.execute(statement)


async def replace_local_index(
    session: AsyncSession,
    *,
    libraries: Iterable[LibraryRow],
    chunks: Sequence[ChunkRow],
    index: IndexRow,
) -> None:
    """Swap the whole local index for a new one (in the caller's transaction)."""
    await session.execute(delete(DocChunk))
    await session.execute(delete(DocLibrary))
    await session.execute(delete(DocIndex).where(DocIndex.name == "local"))
    library_rows = [vars(library) for library in libraries]
    if library_rows:
        await session.execute(insert(DocLibrary), library_rows)
    for start in range(0, len(chunks), 2000):
        await session.execute(insert(DocChunk), [vars(chunk) for chunk in chunks[start : start + 2000]])
    await session.execute(
        insert(DocIndex).values(
            name="local",
            built_at=index.built_at,
            chunk_count=index.chunk_count,
            fingerprint=index.fingerprint,
            model_id=index.model_id,
            bm25=index.bm25,
            vectors=index.vectors,
            popularity=index.popularity,
            reference=index.reference,
        )
    )


async def local_index(session: AsyncSession) -> tuple[list[LibraryRow], list[ChunkRow], IndexRow] | None:
    """The stored local index, or None if it was never built."""
    row = (await session.execute(select(DocIndex).where(DocIndex.name == "local"))).scalar_one_or_none()
    if row is None:
        return None
    libraries = [
        LibraryRow(r.id, r.title, r.description, r.kind, r.version, r.chunk_count)
        for r in (await session.execute(select(DocLibrary).order_by(DocLibrary.id))).scalars()
    ]
    chunks = [
        ChunkRow(r.library_id, r.position, r.title, r.source_url, r.text, r.content_hash)
        for r in (await session.execute(select(DocChunk).order_by(DocChunk.seq))).scalars()
    ]
    index = IndexRow(
        row.built_at,
        row.chunk_count,
        row.fingerprint,
        row.model_id,
        row.bm25,
        row.vectors,
        row.popularity,
        row.reference,
    )
    return libraries, chunks, index


async def local_index_fingerprint(session: AsyncSession) -> str | None:
    """The fingerprint of the stored local index (to skip rebuilding an unchanged one)."""
    return (await session.execute(select(DocIndex.fingerprint).where(DocIndex.name == "local"))).scalar_one_or_none()
