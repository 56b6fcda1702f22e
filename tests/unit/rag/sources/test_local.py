"""The local source's search puts public API first: an internal helper scoring a little higher than the
class users import comes after it."""

from datetime import UTC, datetime

from almanac.rag.bm25 import BM25Index
from almanac.rag.chunking import Chunk
from almanac.rag.hybrid import HybridConfig
from almanac.rag.local_docs import Library
from almanac.rag.local_search import LocalIndex
from almanac.rag.sources.local import LocalSource

LIBRARY = "/pypi/starlette"
SECTIONS = [
    ("class `starlette.middleware.gzip.GZipResponder` (internal)", "compression gzip gzip"),
    ("class `starlette.middleware.gzip.GZipMiddleware`", "gzip compression middleware"),
    ("class `starlette.middleware.cors.CORSMiddleware`", "cors middleware with gzip mentioned once"),
]


async def test_search_prefers_public_api_over_a_slightly_better_scoring_internal_helper() -> None:
    chunks = [Chunk(f"c{i}", text, title, None, LIBRARY, i, 8) for i, (title, text) in enumerate(SECTIONS)]
    index = LocalIndex(
        {LIBRARY: Library(LIBRARY, "starlette", "", "package", "1", None)},
        chunks,
        BM25Index.build([f"{c.title}\n{c.text}" for c in chunks]),
        None,
        None,
        datetime.now(UTC),
    )
    assert [hit.index for hit in index.lexical("gzip compression", 3, LIBRARY)] == [0, 1, 2]  # helper first
    source = LocalSource(index=lambda: index, embedder=None, config=HybridConfig())
    [info] = [lib for lib in await source.libraries("starlette", "gzip") if lib.id == LIBRARY]
    corpus = await source.corpus(info, "gzip")
    assert [hit.index for hit in await corpus.search("gzip compression", 3)] == [1, 0, 2]
