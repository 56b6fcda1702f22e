"""The local source's search puts public API first: an internal helper scoring a little higher than the
class users import comes after it."""

from collections.abc import Sequence
from datetime import UTC, datetime

from tests.fakes.embedder import HashEmbedder

from almanac.rag.bm25 import BM25Index
from almanac.rag.chunking import Chunk
from almanac.rag.embeddings.base import Embeddings, InputType
from almanac.rag.hybrid import HybridConfig
from almanac.rag.local_docs import Library
from almanac.rag.local_search import LocalIndex
from almanac.rag.sources.local import LocalSource
from almanac.rag.vectors import VectorIndex

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


class RecordingEmbedder(HashEmbedder):
    """Records what it embeds as a query."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    async def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        if input_type == "query":
            self.queries.extend(texts)
        return await super().embed(texts, input_type=input_type)


async def test_the_vector_search_embeds_the_question_as_written_and_bm25_searches_its_words() -> None:
    chunks = [Chunk(f"c{i}", text, title, None, LIBRARY, i, 8) for i, (title, text) in enumerate(SECTIONS)]
    embedder = RecordingEmbedder()
    vectors = await embedder.embed([c.text for c in chunks], input_type="document")
    index = LocalIndex(
        {LIBRARY: Library(LIBRARY, "starlette", "", "package", "1", None)},
        chunks,
        BM25Index.build([f"{c.title}\n{c.text}" for c in chunks]),
        VectorIndex(vectors),
        embedder.model_id,
        datetime.now(UTC),
    )
    source = LocalSource(index=lambda: index, embedder=embedder, config=HybridConfig())
    corpus = await source.corpus(source.everything(), "gzip")
    question = "How do I add gzip compression to a Starlette app?"
    assert await corpus.search("gzip compression Starlette app", 3, question=question)
    assert embedder.queries == [question]
    assert await corpus.search("gzip compression", 3) and embedder.queries[-1] == "gzip compression"
