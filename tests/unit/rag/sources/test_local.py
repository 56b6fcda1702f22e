"""The local source's search puts public API first: an internal helper scoring a little higher than the
class users import comes after it."""

from collections.abc import Sequence
from datetime import UTC, datetime

from tests.fakes.embedder import HashEmbedder
from tests.rag_support import api_passage, small_index

from almanac.rag.bm25 import BM25Index
from almanac.rag.chunking import Chunk
from almanac.rag.embeddings.base import Embeddings, InputType
from almanac.rag.hybrid import HybridConfig
from almanac.rag.local_docs import Library
from almanac.rag.local_search import LocalIndex
from almanac.rag.pipeline import hinted_library
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


def _packages_index() -> LocalIndex:
    """PyYAML, imported as `yaml`, and a package whose name merely starts with the word (more passages)."""
    chunks = [
        api_passage("/pypi/pyyaml", "yaml.safe_dump", "Serialize a Python object into a YAML stream."),
        api_passage("/pypi/pyyaml", "_yaml.helper", "A private module is no import name."),
        api_passage("/pypi/yamlfix", "yamlfix.fix_code", "Fix the style of YAML source code."),
        api_passage("/pypi/yamlfix", "yamlfix.fix_files", "Fix the style of YAML files."),
        api_passage("/pypi/yamlfix", "yamlfix.Config", "How to fix."),
    ]
    return small_index({"/pypi/pyyaml": "PyYAML", "/pypi/yamlfix": "yamlfix"}, chunks)


async def test_a_library_is_known_by_the_names_code_imports_it_by() -> None:
    index = _packages_index()
    assert index.import_names() == {"/pypi/pyyaml": {"yaml"}, "/pypi/yamlfix": {"yamlfix"}}
    source = LocalSource(index=lambda: index, embedder=None, config=HybridConfig())
    assert "yaml" in source.names() and "_yaml" not in source.names()
    # `yaml` names PyYAML as surely as its own name does, before `yamlfix` (more passages), which merely starts
    # with the word
    assert [info.id for info in await source.libraries("yaml", "dump")] == ["/pypi/pyyaml", "/pypi/yamlfix"]
    assert next(info.id for info in await source.libraries("yamlfix", "fix")) == "/pypi/yamlfix"


async def test_a_library_named_in_the_question_by_its_import_name_is_a_hint() -> None:
    index = _packages_index()
    source = LocalSource(index=lambda: index, embedder=None, config=HybridConfig())
    [pyyaml, yamlfix] = await source.libraries("yaml", "dump")
    assert hinted_library(await source.corpus(pyyaml, "dump"), "yaml") == "/pypi/pyyaml"  # how code names it
    assert hinted_library(await source.corpus(pyyaml, "dump"), "PyYAML") == "/pypi/pyyaml"
    assert hinted_library(await source.corpus(yamlfix, "fix"), "yaml") is None  # a looser match is no hint
