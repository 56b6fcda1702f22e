"""An `Embedder` that remembers: every vector is cached in the database by (model, input type,
SHA-256 of the text), so a chunk is embedded once, whichever request or process meets it first.

The cache only saves work: when the database cannot be read or written (a lock held too long, a connection
lost), the texts are embedded anyway and the failure is logged, never passed on to the question."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

import numpy as np
from sqlalchemy.exc import SQLAlchemyError

from almanac.rag.embeddings.base import Embedder, Embeddings, InputType, empty_embeddings
from almanac.storage import docs as store
from almanac.storage.db import Database

log = logging.getLogger(__name__)


def content_hash(text: str) -> str:
    """The cache key of a text: hex SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEmbedder:
    """Wraps an embedder; only texts never seen before reach it."""

    def __init__(self, inner: Embedder, database: Database) -> None:
        self.inner = inner
        self._db = database
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        self.misses = 0

    async def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        if len(texts) == 0:
            return empty_embeddings(self.dimension)
        key = f"{self.model_id}|{input_type}"
        hashes = [content_hash(text) for text in texts]
        try:
            async with self._db.session() as session:
                found = await store.cached_embeddings(session, model_id=key, hashes=sorted(set(hashes)))
        except (SQLAlchemyError, OSError) as exc:
            log.warning("embedding cache unreadable (%s); embedding without it", type(exc).__name__)
            found = {}
        missing = sorted({h for h in hashes if h not in found})
        if missing:
            first_text = {h: text for h, text in zip(hashes, texts, strict=True)}
            fresh = await self.inner.embed([first_text[h] for h in missing], input_type=input_type)
            self.misses += len(missing)
            new = {h: fresh[i].astype(np.float32).tobytes() for i, h in enumerate(missing)}
            try:
                async with self._db.session() as session:
                    await store.cache_embeddings(session, model_id=key, vectors=new)
            except (SQLAlchemyError, OSError) as exc:
                log.warning("embedding cache not written (%s); the vectors are used anyway", type(exc).__name__)
            found.update(new)
        return np.vstack([np.frombuffer(found[h], dtype=np.float32) for h in hashes])
