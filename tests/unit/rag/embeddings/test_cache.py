"""The embedding cache saves work but never fails an embedding: a database it cannot read or write (here,
one whose tables were never created) leaves the vectors computed, and says so in the log."""

import logging
from pathlib import Path

import numpy as np
import pytest
from tests.fakes.embedder import HashEmbedder

from almanac.rag.embeddings.cache import CachedEmbedder
from almanac.storage.db import Database


async def test_a_database_the_cache_cannot_use_still_gives_the_vectors(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'no-tables.db'}")  # never migrated
    inner = HashEmbedder()
    try:
        with caplog.at_level(logging.WARNING, logger="almanac.rag.embeddings.cache"):
            vectors = await CachedEmbedder(inner, database).embed(
                ["gzip compression", "retries"], input_type="document"
            )
    finally:
        await database.dispose()
    assert np.allclose(vectors, await inner.embed(["gzip compression", "retries"], input_type="document"))
    assert "embedding cache unreadable" in caplog.text and "embedding cache not written" in caplog.text


async def test_a_working_cache_embeds_each_text_once(sqlite_url: str) -> None:
    from almanac.storage.migrate import upgrade_async

    await upgrade_async(sqlite_url)
    database = Database(sqlite_url)
    inner = HashEmbedder()
    cached = CachedEmbedder(inner, database)
    try:
        first = await cached.embed(["a text", "another"], input_type="document")
        again = await cached.embed(["another", "a text"], input_type="document")
    finally:
        await database.dispose()
    assert cached.misses == 2 and inner.calls == [2]
    assert np.allclose(first[::-1], again)
