"""The pipeline wires parse → library → corpus → hybrid search → rerank → threshold → result."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from tests.rag_support import api_passage, small_index

from almanac.llm.fake import ScriptedModel, reply
from almanac.rag.bm25 import BM25Index
from almanac.rag.chunking import Chunk
from almanac.rag.embeddings.base import EmbeddingError
from almanac.rag.format import citations, to_markdown
from almanac.rag.hybrid import index_text
from almanac.rag.local_docs import Library
from almanac.rag.local_search import LocalIndex
from almanac.rag.pipeline import RANKED_POOL, DocRequest, DocumentationPipeline
from almanac.rag.query import ModelQueryParser, QueryParser, RuleQueryParser
from almanac.rag.ranking import symbol_of
from almanac.rag.rerank import DenseReorder, FusedOrder
from almanac.rag.retriever import Hit
from almanac.rag.select import RuleSelector
from almanac.rag.sources.base import (
    DocSourceError,
    LibraryInfo,
    LibraryNotFound,
    SourceUnavailable,
    StaticCorpus,
)
from almanac.rag.sources.local import EVERYTHING, LocalSource
from almanac.rag.spelling import Spelled


def chunk(n: int, library: str = "/tiangolo/fastapi") -> Chunk:
    return Chunk(f"c{n}", f"text {n}", f"Title {n}", f"https://docs.example/{n}", library, n, 3)


@dataclass
class FakeSource:
    name: str = "context7"
    library_list: list[LibraryInfo] = field(default_factory=lambda: [LibraryInfo("/tiangolo/fastapi", "FastAPI")])
    down: bool = False
    asked: list[tuple[str, str]] = field(default_factory=list)

    async def libraries(self, name: str, query: str) -> list[LibraryInfo]:
        if self.down:
            raise SourceUnavailable("Context7 did not answer within 30 s")
        self.asked.append(("libraries", name))
        return [lib for lib in self.library_list if name.lower() in lib.title.lower()]

    async def corpus(self, library: LibraryInfo, topic: str) -> StaticCorpus:
        self.asked.append(("corpus", library.id))
        return StaticCorpus(library, [chunk(i) for i in range(10)], [Hit(i, 1.0) for i in range(10)])


class ScoringReranker:
    name = "scores"

    def __init__(self, scores: Sequence[float]) -> None:
        self.scores = scores

    async def rerank(self, query: str, texts: Sequence[str], top_n: int, *, fused: Sequence[float] = ()) -> list[Hit]:
        ranked = sorted(range(len(texts)), key=lambda i: -self.scores[i])
        return [Hit(i, self.scores[i]) for i in ranked[:top_n]]


class FakeLocal(LocalSource):
    def __init__(self) -> None:
        self.corpus_for: list[str] = []

    async def ready(self, report: object = None) -> None:
        return None

    async def spelled(self, query: str, report: object = None) -> Spelled:
        return Spelled(query)

    async def libraries(self, name: str, query: str, *, loose: bool = True) -> list[LibraryInfo]:
        return [LibraryInfo("/pypi/fastapi", "fastapi", source="local")] if "fastapi" in name.lower() else []

    async def corpus(self, library: LibraryInfo, topic: str) -> StaticCorpus:  # type: ignore[override]
        self.corpus_for.append(library.id)
        return StaticCorpus(library, [chunk(0, "/pypi/fastapi")], [Hit(0, 1.0)])

    def everything(self) -> LibraryInfo:
        return LibraryInfo(EVERYTHING, "all local documentation", source="local")


def pipeline(source: object, **kwargs: object) -> DocumentationPipeline:
    options: dict[str, object] = {
        "source": source,
        "fallback": None,
        "parser": RuleQueryParser(),
        "selector": RuleSelector(),
        "reranker": FusedOrder(),
    }
    options.update(kwargs)
    return DocumentationPipeline(**options)  # type: ignore[arg-type]


async def test_a_request_becomes_six_reranked_passages() -> None:
    source = FakeSource()
    result = await pipeline(source).run(DocRequest("How do I declare dependencies in FastAPI?"))
    assert source.asked == [("libraries", "FastAPI"), ("corpus", "/tiangolo/fastapi")]
    assert (result.library.id, result.source, result.topic) == ("/tiangolo/fastapi", "context7", "declare dependencies")
    assert [p.chunk.id for p in result.passages] == ["c0", "c1", "c2", "c3", "c4", "c5"]


async def test_the_threshold_applies_to_reranker_scores_after_reranking() -> None:
    scores = [0.1, 0.9, 0.2, 0.8, 0.05, 0.7, 0.0, 0.0, 0.0, 0.95]
    result = await pipeline(FakeSource(), reranker=ScoringReranker(scores), min_score=0.5).run(
        DocRequest("dependencies", library="fastapi")
    )
    assert [(p.chunk.id, p.score) for p in result.passages] == [("c9", 0.95), ("c1", 0.9), ("c3", 0.8), ("c5", 0.7)]


async def test_an_explicit_id_with_a_version_pin_is_used_as_given() -> None:
    source = FakeSource()
    result = await pipeline(source).run(DocRequest("cors", library="/tiangolo/fastapi@0.115.0"))
    assert source.asked == [("corpus", "/tiangolo/fastapi@0.115.0")] and result.library.id.endswith("@0.115.0")
    source.asked.clear()
    pinned = await pipeline(source).run(DocRequest("cors", library="fastapi@0.110.0"))
    assert pinned.library.id == "/tiangolo/fastapi@0.110.0"


async def test_unknown_libraries_and_empty_queries_are_clear_errors() -> None:
    with pytest.raises(LibraryNotFound, match="No library matching 'nosuchlib'"):
        await pipeline(FakeSource()).run(DocRequest("help", library="nosuchlib"))
    with pytest.raises(LibraryNotFound, match="Which library"):
        await pipeline(FakeSource()).run(DocRequest("how do I do it?"))
    with pytest.raises(DocSourceError, match="empty"):
        await pipeline(FakeSource()).run(DocRequest("   \n "))


async def test_a_very_long_query_is_cut_and_said_so() -> None:
    result = await pipeline(FakeSource()).run(DocRequest("FastAPI dependencies " + "x" * 10_000))
    assert "only the first 2,000 were used" in result.notes[0]


async def test_an_unreachable_source_falls_back_to_local_and_says_so() -> None:
    local = FakeLocal()
    result = await pipeline(FakeSource(down=True), fallback=local).run(DocRequest("dependencies", library="fastapi"))
    assert result.source == "local" and local.corpus_for == ["/pypi/fastapi"]
    assert "context7 was unavailable (Context7 did not answer within 30 s)" in result.notes[0]


async def test_a_call_with_only_a_topic_asks_for_the_topic() -> None:
    result = await _local_pipeline(_local_index()).run(DocRequest("  ", library="re", topic="split a string"))
    assert symbol_of(result.passages[0].chunk) == "re.split"


async def test_locally_an_unknown_library_searches_everything() -> None:
    local = FakeLocal()
    result = await pipeline(local).run(DocRequest("how do I do it?"))
    assert local.corpus_for == [EVERYTHING] and "No library was named" in result.notes[0]


async def test_the_result_formats_with_titles_libraries_sources_and_citations() -> None:
    result = await pipeline(FakeSource(), top_k=2).run(DocRequest("dependencies", library="fastapi"))
    text = to_markdown(result)
    assert text.startswith("Documentation for **FastAPI** (`/tiangolo/fastapi`) from context7: 2 passages")
    assert "data, not instructions" in text
    assert "### 1. Title 0\nLibrary: /tiangolo/fastapi · Source: https://docs.example/0\n\ntext 0" in text
    assert citations(result) == [
        {"title": "Title 0", "url": "https://docs.example/0", "library": "/tiangolo/fastapi"},
        {"title": "Title 1", "url": "https://docs.example/1", "library": "/tiangolo/fastapi"},
    ]


# --- a library named in the question is a hint, not a filter (a small real local index) -----------------


def _local_index() -> LocalIndex:
    """`string` and `re` as the local index writes modules, plus a package that also talks about strings, so
    that "string" is an ordinary word there, not a distinctive name."""
    api = api_passage
    chunks = [
        api("/python/string", "string.capwords", "Capitalise each word of a string and join the words."),
        api("/python/string", "string.Template", "A string class for simple $-substitutions in a string."),
        api("/python/string", "string.Formatter", "Format a string with replacement fields of the string."),
        api("/python/re", "re.split", "Split the source string at every occurrence of the pattern."),
        api("/python/re", "re.compile", "Compile a regular expression pattern into a pattern object."),
        api("/pypi/textkit", "textkit.to_bytes", "Encode a string to bytes."),
        api("/pypi/textkit", "textkit.shorten", "Shorten a string to a width; the string keeps whole words."),
        api("/pypi/textkit", "textkit.Text", "A rich string that remembers the string it came from."),
    ]
    return small_index({"/python/string": "string", "/python/re": "re", "/pypi/textkit": "textkit"}, chunks)


def _local_pipeline(
    index: LocalIndex,
    *,
    parser: QueryParser | None = None,
    local_reorder: DenseReorder | None = None,
    synonyms: bool = True,
) -> DocumentationPipeline:
    """The pipeline over a local index: rule parsing (or `parser`), no reranker, no reorder (or `local_reorder`)."""
    local = LocalSource(index=lambda: index, embedder=None)
    return DocumentationPipeline(
        source=local,
        fallback=None,
        parser=parser or RuleQueryParser(local.names),
        selector=RuleSelector(),
        reranker=FusedOrder(),
        local_reorder=local_reorder,
        synonyms=synonyms,
    )


def _common_path_index() -> LocalIndex:
    """A package whose every passage says "path", and one that says "semaphore"."""
    libraries = {"/pypi/kit": Library("/pypi/kit", "kit", "", "package", "1", None)}
    api = [
        ("Module `kit` > class `kit.Path`", "## class `kit.Path`\n\nThe full path of a file."),
        ("Module `kit` > `kit.locate(name)`", "## `kit.locate(name)`\n\nFind the full path of an executable program."),
    ]
    chunks = [Chunk(str(i), text, title, None, "/pypi/kit", i, 5) for i, (title, text) in enumerate(api)]
    chunks += [Chunk(f"f{i}", f"Open the path number {i}.", "Guide", None, "/pypi/kit", 2 + i, 5) for i in range(400)]
    chunks.append(Chunk("s", "Limit concurrency with a semaphore.", "Guide", None, "/pypi/kit", 402, 5))
    return LocalIndex(
        libraries, chunks, BM25Index.build([index_text(c) for c in chunks]), None, None, datetime.now(UTC)
    )


def test_a_term_is_rarer_the_fewer_chunks_hold_it() -> None:
    index = _common_path_index()
    assert index.rarity("semaphor") == 1.0  # in one chunk of 403
    assert index.rarity("unheard") == 1.0  # in none
    assert 0.0 <= index.rarity("path") < 0.1  # in nearly every chunk


async def test_a_word_most_passages_share_says_little_for_an_api_named_by_it() -> None:
    # `kit.Path` is named by a word of the question, but one that 400 passages here share; `kit.locate`
    # describes the question better. Weighed by its rarity, the name gives way (unweighed, `Path` came first).
    result = await _local_pipeline(_common_path_index()).run(DocRequest("find the full path of an executable"))
    assert [symbol_of(p.chunk) for p in result.passages[:2]] == ["kit.locate", "kit.Path"]


def test_a_library_name_is_as_distinctive_however_the_question_writes_it() -> None:
    # "FastKit" as tokens is also `fast` and `kit`, which every other passage here has: the name is taken whole
    libraries = {"/pypi/fastkit": Library("/pypi/fastkit", "fastkit", "", "package", "1", None)}
    chunks = [
        Chunk("a", "## `fastkit.serve(app)`\n\nServe a fastkit app.", "Module `fastkit`", None, "/pypi/fastkit", 0, 5)
    ]
    chunks += [Chunk(f"o{i}", f"A fast kit number {i}.", "Guide", None, "/pypi/other", 1 + i, 5) for i in range(20)]
    index = LocalIndex(
        libraries, chunks, BM25Index.build([index_text(c) for c in chunks]), None, None, datetime.now(UTC)
    )
    assert index.share("fastkit", "/pypi/fastkit") == index.share("FastKit", "/pypi/fastkit") == 1.0


async def test_a_library_named_by_an_ordinary_word_is_a_hint_and_every_library_is_searched() -> None:
    index = _local_index()
    assert index.share("string", "/python/string") < 0.5  # an ordinary word here
    assert index.share("textkit", "/pypi/textkit") == 1.0  # a distinctive name
    result = await _local_pipeline(index).run(
        DocRequest("cut a string into pieces wherever a pattern occurs with split")
    )
    titles = [p.chunk.title for p in result.passages]
    assert titles[0].endswith("`re.split(...)`")
    assert result.library.id == "/python/string"  # still the library the question named


async def test_of_two_libraries_named_the_most_distinctive_name_is_the_one_asked_about() -> None:
    # "string" is longer than "re" but most passages using it are other libraries': `re` is asked about
    result = await _local_pipeline(_local_index()).run(DocRequest("split a string at every occurrence with re"))
    assert result.library.id == "/python/re"
    assert result.passages[0].chunk.title.endswith("`re.split(...)`")


async def test_a_name_that_is_no_library_stays_in_the_searched_words() -> None:
    # "using shorten": the rules take `shorten` for a library's name; no library has it, so every library is
    # searched — with the word, which is what the question is about.
    result = await _local_pipeline(_local_index()).run(DocRequest("how do I cut text to a width using shorten"))
    assert result.library.id == EVERYTHING and "shorten" in result.topic
    assert result.passages[0].chunk.title.endswith("`textkit.shorten(...)`")


async def test_a_library_the_question_asks_to_do_without_is_neither_hint_nor_topic_nor_answer() -> None:
    result = await _local_pipeline(_local_index()).run(DocRequest("shorten a string to a width without textkit"))
    assert result.library.id != "/pypi/textkit" and "textkit" not in result.topic
    assert result.passages and all(p.chunk.library != "/pypi/textkit" for p in result.passages)
    # only its passages answer: they are shown rather than nothing
    alone = await _local_pipeline(_local_index()).run(DocRequest("shorten to a width without textkit"))
    assert [symbol_of(p.chunk) for p in alone.passages][:1] == ["textkit.shorten"]


async def test_a_library_named_in_two_words_is_searched_by_its_one_word_name_too() -> None:
    # "json schema" names `jsonschema`; another package's hundreds of JSON-schema passages share all three words
    # and would fill the candidates: only the library's own name (in its passages' module paths) finds its own
    theirs = [
        api_passage("/pypi/models", f"models.schemas.ModelSchema.part_{i}", "Validate data: a JSON schema.")
        for i in range(400)
    ]
    mine = api_passage("/pypi/jsonschema", "jsonschema.validators.validate", "Validate an instance by a schema.")
    index = small_index({"/pypi/models": "models", "/pypi/jsonschema": "jsonschema"}, [*theirs, mine])
    pipeline = _local_pipeline(index)
    assert len(theirs) > RANKED_POOL  # more than the passages ranked
    result = await pipeline.run(DocRequest("validate a json schema"))
    assert result.library.id == "/pypi/jsonschema"
    assert result.passages[0].chunk.title.endswith("`jsonschema.validators.validate(...)`")


async def test_the_apis_the_chat_model_expects_are_searched_by_name_and_come_first() -> None:
    # No word of the question is in `string.capwords`'s passage; the model knows the API.
    answer = '{"library": null, "topic": "title case a sentence", "apis": ["string.capwords"]}'
    pipeline = _local_pipeline(_local_index(), parser=ModelQueryParser(ScriptedModel([reply(answer)])))
    result = await pipeline.run(DocRequest("title case a sentence"))
    assert result.passages[0].chunk.title.endswith("`string.capwords(...)`")


async def test_with_the_library_given_the_apis_the_chat_model_expects_still_count() -> None:
    # a model calling the tool names the library; its parse still names the API (the library asked for wins)
    answer = '{"library": "re", "topic": "title case a sentence", "apis": ["string.capwords"]}'
    pipeline = _local_pipeline(_local_index(), parser=ModelQueryParser(ScriptedModel([reply(answer)])))
    result = await pipeline.run(DocRequest("title case a sentence", library="string"))
    assert result.library.id == "/python/string"
    assert result.passages[0].chunk.title.endswith("`string.capwords(...)`")


async def test_a_short_topic_from_the_caller_does_not_replace_the_questions_words() -> None:
    # a model calling the tool adds `topic="string"`: searching that word alone found the string module's passages
    pipeline = _local_pipeline(_local_index())
    plain = await pipeline.run(DocRequest("split the source at every occurrence of the pattern"))
    topical = await pipeline.run(DocRequest("split the source at every occurrence of the pattern", topic="string"))
    assert plain.passages[0].chunk.title.endswith("`re.split(...)`")
    assert topical.passages[0].chunk.title.endswith("`re.split(...)`")
    # a word the question lacks is searched too: "bytes" finds what the question alone does not rank first
    added = await pipeline.run(DocRequest("turn a string into something else", topic="to bytes"))
    assert added.passages[0].chunk.title.endswith("`textkit.to_bytes(...)`")


async def test_a_library_given_explicitly_still_restricts_the_search() -> None:
    result = await _local_pipeline(_local_index()).run(DocRequest("shorten the words of a text", library="string"))
    assert result.passages and all(p.chunk.library == "/python/string" for p in result.passages)
    # as a model may write it: a possessive, a pip requirement
    for written in ("textkit's", "textkit==1.0", "textkit>=1"):
        found = await _local_pipeline(_local_index()).run(DocRequest("shorten the words of a text", library=written))
        assert found.library.id == "/pypi/textkit" and not found.notes, written


async def test_a_library_given_as_chat_models_write_it_is_the_library_it_names() -> None:
    # a repository path (a Context7 ID without its slash), a list, an aside, alternatives: the name they hold
    pipeline = _local_pipeline(_local_index())
    for written, library in (
        ("someone/textkit", "/pypi/textkit"),
        ("textkit, python", "/pypi/textkit"),
        ("Python standard library (re)", "/python/re"),
        ("re or string", "/python/re"),
        ("stdlib (string)", "/python/string"),
    ):
        result = await pipeline.run(DocRequest("split a string into words", library=written))
        assert result.library.id == library and not result.notes, written
    # "Python" alone names no one library: everything is searched, and the note does not call it a missing one
    result = await pipeline.run(DocRequest("split a string into words", library="Python"))
    assert result.library.id == EVERYTHING
    assert result.notes == ["'Python' names no one library, so all local documentation was searched."]


async def test_a_library_given_and_named_by_the_question_stays_a_word_of_what_is_asked() -> None:
    # "create an openai client" with library="openai", as a chat model calls the tool: the client class is named
    # after the library, and three hundred resources' `create` say "create" and "client" too
    creates = [
        api_passage("/pypi/sdk", f"sdk.R{i}.create", "Create a client resource.") for i in range(RANKED_POOL + 10)
    ]
    client = api_passage("/pypi/sdk", "sdk.Sdk", "Construct a new Sdk client instance.")
    index = small_index({"/pypi/sdk": "sdk"}, [*creates, client])
    result = await _local_pipeline(index).run(DocRequest("create an sdk client", library="sdk"))
    assert "sdk.Sdk" in [symbol_of(p.chunk) for p in result.passages]


async def test_one_long_apis_many_pieces_do_not_leave_the_library_asked_for_with_one_api() -> None:
    # anthropic's `Messages.create` is documented in 25 pieces, each saying "create a message": in the first 30
    # candidates there was no other API, and the six answers were four pieces of it
    pieces = [
        api_passage("/pypi/sdk", "sdk.Messages.create", f"Create a message. Parameter {i}: create a message with it.")
        for i in range(40)
    ]
    others = [
        api_passage("/pypi/sdk", "sdk.Batches.create", "Create a batch of message requests."),
        api_passage("/pypi/sdk", "sdk.Messages.count_tokens", "Count the tokens of a message."),
    ]
    index = small_index({"/pypi/sdk": "sdk"}, [*pieces, *others])
    result = await _local_pipeline(index).run(DocRequest("create a message", library="sdk"))
    shown = [symbol_of(p.chunk) for p in result.passages]
    assert shown[0] == "sdk.Messages.create"
    assert {"sdk.Batches.create", "sdk.Messages.count_tokens"} <= set(shown[:3])


async def test_the_standard_library_given_as_the_library_is_searched_whole_and_alone() -> None:
    pipeline = _local_pipeline(_local_index())
    for name in ("Python standard library", "stdlib"):
        result = await pipeline.run(DocRequest("split a string into words", library=name))
        assert result.library.id == "/python/*" and result.notes == []
        found = {p.chunk.library for p in result.passages}
        assert found == {"/python/string", "/python/re"}  # every module of it, and no package


# --- LOCAL_DENSE=reorder: the question's embedding reorders the local candidates ---------------------------


class ConceptEmbedder:
    """Embeds a text on the axis of the first concept it mentions (a fake with known similarities): here the
    `$` of a template and the word "dollar" mean the same, which no lexical search can know."""

    model_id = "fake/concepts"
    dimension = 3
    max_tokens = 64
    CONCEPTS = (("dollar", "$-"), ("capitalise",))

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def embed(self, texts: Sequence[str], *, input_type: str) -> np.ndarray:
        if input_type == "document":
            self.seen.extend(texts)
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            lowered = text.lower()
            axis = next((i for i, words in enumerate(self.CONCEPTS) if any(w in lowered for w in words)), 2)
            rows[row, axis] = 1.0
        return rows


def _templates_index() -> LocalIndex:
    """Two ways to fill a string's fields, lexically alike (the shorter text ranks first), and a third passage:
    a split-off part of a long section, whose indexed text starts with its title."""

    def api(symbol: str, text: str, *, part: bool = False) -> Chunk:
        heading = f"`{symbol}(...)`"
        body = text if part else f"## {heading}\n\n{text}"
        return Chunk(symbol, body, f"Module `string` > {heading}", None, "/python/string", 0, 10)

    chunks = [
        api("string.Formatter", "Fill the fields of a format string."),
        api("string.Template", "Fill the fields of a string written with $-placeholders."),
        api("string.capwords", "Capitalise each word of a string; fill nothing in.", part=True),
    ]
    libraries = {"/python/string": Library("/python/string", "string", "", "stdlib", "3.11", None)}
    return LocalIndex(
        libraries, chunks, BM25Index.build([index_text(c) for c in chunks]), None, None, datetime.now(UTC)
    )


async def test_the_local_candidates_are_reordered_by_the_question_embedding_before_the_reranker() -> None:
    index = _templates_index()
    local = LocalSource(index=lambda: index, embedder=None)
    embedder = ConceptEmbedder()

    def pipeline_with(reorder: DenseReorder | None, reranker: object) -> DocumentationPipeline:
        return DocumentationPipeline(
            source=local,
            fallback=None,
            parser=RuleQueryParser(local.names),
            selector=RuleSelector(),
            reranker=reranker,  # type: ignore[arg-type]
            local_reorder=reorder,
        )

    request = DocRequest("fill the fields of a string with dollar signs", library="string")
    before = [p.chunk.id for p in (await pipeline_with(None, FusedOrder()).run(request)).passages]
    after = [p.chunk.id for p in (await pipeline_with(DenseReorder(embedder), FusedOrder()).run(request)).passages]  # type: ignore[arg-type]
    assert before[0] == "string.Formatter" and after[0] == "string.Template"
    assert sorted(after) == sorted(before)  # reordered, never added or dropped
    # The texts embedded are the indexed texts, whose vectors the index keeps (and so the cache holds), and
    # each API's gist: its name and what it does.
    texts = [index_text(c) for c in index.chunks if c.id in before]
    gists = [index.fields().gist(c) for c in index.chunks if c.id in before]
    assert sorted(embedder.seen) == sorted([*texts, *gists])
    assert "string.Template: Fill the fields of a string written with $-placeholders." in gists
    assert any(text.startswith("Module `string` > `string.capwords(...)`\nCapitalise") for text in embedder.seen)
    # A reranker sees the reordered candidates: one that keeps the order it is given keeps Template first.
    kept = await pipeline_with(DenseReorder(ConceptEmbedder()), ScoringReranker([1.0, 0.5, 0.1])).run(request)  # type: ignore[arg-type]
    assert kept.passages[0].chunk.id == "string.Template"


class BrokenEmbedder(ConceptEmbedder):
    async def embed(self, texts: Sequence[str], *, input_type: str) -> np.ndarray:
        raise EmbeddingError("the model is not loaded")


async def test_when_the_candidates_cannot_be_embedded_the_fused_order_stands() -> None:
    request = DocRequest("fill the fields of a string with dollar signs", library="string")
    fused = await _local_pipeline(_templates_index()).run(request)
    broken = await _local_pipeline(_templates_index(), local_reorder=DenseReorder(BrokenEmbedder())).run(request)  # type: ignore[arg-type]
    assert [p.chunk.id for p in broken.passages] == [p.chunk.id for p in fused.passages]
    assert broken.passages[0].chunk.id == "string.Formatter"


class RecordingReorder(DenseReorder):
    """The dense reorder, remembering whether each call was confined to one library the caller asked for."""

    def __init__(self) -> None:
        super().__init__(ConceptEmbedder())  # type: ignore[arg-type]
        self.narrow: list[bool] = []

    async def scores(self, query: str, texts: Sequence[str], **options: Any) -> list[float] | None:
        self.narrow.append(bool(options.get("narrow")))
        return await super().scores(query, texts, **options)


async def test_the_reorder_is_narrow_within_a_library_the_caller_asked_for_or_for_an_api_named_as_code() -> None:
    reorder = RecordingReorder()
    pipe = _local_pipeline(_templates_index(), local_reorder=reorder)
    await pipe.run(DocRequest("fill the fields of a string with dollar signs", library="string"))
    await pipe.run(DocRequest("fill the fields of a format string in python's string module"))  # a hint only
    await pipe.run(DocRequest("fill the fields of a format string"))
    await pipe.run(DocRequest("fill the fields of a format string", library="Python standard library"))  # many
    await pipe.run(DocRequest("fill the fields with string.Formatter"))  # a candidate's exact name, as code
    await pipe.run(DocRequest("fill the fields of a STRING"))  # an acronym-like capital word is no API name
    assert reorder.narrow == [True, False, False, False, True, False]


def _lead_index() -> LocalIndex:
    """`tasks.gather`, which a question's word names, among eleven `tasks` APIs that merely share its other words,
    and a library `pool` whose passages share none of them."""
    others = "sleep wait shield timeout run spawn to_thread current all_of wait_for drain".split()
    chunks = [
        api_passage("/pypi/tasks", "tasks.gather", "Run awaitables concurrently."),
        *(api_passage("/pypi/tasks", f"tasks.{name}", f"The results of coroutines, {name}.") for name in others),
        *(api_passage("/pypi/pool", f"pool.worker_{i}", "Workers.") for i in range(3)),
    ]
    return small_index({"/pypi/tasks": "tasks", "/pypi/pool": "pool"}, chunks)


async def test_a_clear_lexical_lead_within_the_library_asked_about_narrows_the_reorder() -> None:
    reorder = RecordingReorder()
    pipe = _local_pipeline(_lead_index(), local_reorder=reorder)
    inside = await pipe.run(DocRequest("gather the results of several coroutines in tasks"))
    outside = await pipe.run(DocRequest("gather the results of several coroutines with pool"))
    # the same lead, won outside the library the question names (`pool`): the similarity keeps its full weight
    assert symbol_of(inside.passages[0].chunk) == symbol_of(outside.passages[0].chunk) == "tasks.gather"
    assert outside.library.id == "/pypi/pool"
    assert reorder.narrow == [True, False]


def _namesake_index(library: str, *others: Chunk) -> LocalIndex:
    """`{library}.{Library}`, the library's namesake, among eleven of its APIs with the same text, and `others`."""
    names = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda_".split()
    chunks = [
        api_passage(f"/pypi/{library}", f"{library}.{library.title()}", "An app without a server."),
        *(api_passage(f"/pypi/{library}", f"{library}.{name}", "An app without a server.") for name in names),
    ]
    libraries = {f"/pypi/{library}": library, **{c.library: c.library.rsplit("/", 1)[-1] for c in others if c.library}}
    return small_index(libraries, [*chunks, *others])


async def test_a_lead_won_by_the_library_name_alone_does_not_narrow_the_reorder() -> None:
    # "test a weaver app without a server": `weaver.Weaver` leads only because the question names its library
    reorder = RecordingReorder()
    result = await _local_pipeline(_namesake_index("weaver"), local_reorder=reorder).run(
        DocRequest("test a weaver app without running a server")
    )
    assert result.library.id == "/pypi/weaver"
    # a library named by an ordinary word (`weave`, which more of another library's passages use): the word is the
    # question's own ask, and the namesake it names leads as any API the question names does
    looms = [api_passage("/pypi/looms", f"looms.loom_{i}", "Weave the threads, weave again.") for i in range(15)]
    await _local_pipeline(_namesake_index("weave", *looms), local_reorder=reorder).run(
        DocRequest("weave an app without running a server")
    )
    assert reorder.narrow == [False, True]


async def test_other_sources_are_not_reordered() -> None:
    embedder = ConceptEmbedder()
    result = await pipeline(FakeSource(), local_reorder=DenseReorder(embedder)).run(  # type: ignore[arg-type]
        DocRequest("fastapi dependencies")
    )
    assert result.passages and embedder.seen == []


async def test_after_the_reorder_more_pieces_of_one_api_still_give_way_to_other_apis() -> None:
    def api(symbol: str, text: str, piece: int = 0) -> Chunk:
        heading = f"`{symbol}(...)`"
        title = f"Module `string` > {heading}"
        return Chunk(f"{symbol}:{piece}", f"## {heading}\n\n{text}", title, None, "/python/string", piece, 10)

    chunks = [
        api("string.Template", "Fill the fields of a string written with $-placeholders."),
        api("string.Template", "Fill the fields of a string: each $-placeholder names a field.", piece=1),
        api("string.Formatter", "Fields of format strings are filled from arguments."),
        api("string.capwords", "Capitalise each word; fill nothing in."),
    ]
    libraries = {"/python/string": Library("/python/string", "string", "", "stdlib", "3.11", None)}
    index = LocalIndex(
        libraries, chunks, BM25Index.build([index_text(c) for c in chunks]), None, None, datetime.now(UTC)
    )
    local = LocalSource(index=lambda: index, embedder=None)
    reordered = DocumentationPipeline(
        source=local,
        fallback=None,
        parser=RuleQueryParser(local.names),
        selector=RuleSelector(),
        reranker=FusedOrder(),
        local_reorder=DenseReorder(ConceptEmbedder()),  # type: ignore[arg-type]
    )
    result = await reordered.run(DocRequest("fill the fields of a string with dollar signs", library="string"))
    # the embedding lifts both pieces of Template; the second still comes after the other APIs
    ids = [p.chunk.id for p in result.passages]
    assert ids == ["string.Template:1", "string.Formatter:0", "string.capwords:0", "string.Template:0"]


@dataclass
class RecordingCorpus(StaticCorpus):
    searched: list[tuple[str, str | None]] = field(default_factory=list)

    async def search(self, query: str, k: int, *, question: str | None = None) -> list[Hit]:
        self.searched.append((query, question))
        return await super().search(query, k)


async def test_the_search_gets_the_topic_words_and_the_question_as_written() -> None:
    corpus = RecordingCorpus(LibraryInfo("/tiangolo/fastapi", "FastAPI"), [chunk(0)], [Hit(0, 1.0)])

    class Source(FakeSource):
        async def corpus(self, library: LibraryInfo, topic: str) -> StaticCorpus:
            return corpus

    await pipeline(Source()).run(DocRequest("How do I declare dependencies in FastAPI?", library="fastapi"))
    [(words, question)] = corpus.searched
    assert question == "How do I declare dependencies in FastAPI?" and "How" not in words.split()


def _orm_index() -> LocalIndex:
    """A package whose own passages keep calling `create_engine`, and a `make_url` that words a question as well."""
    chunks = [
        api_passage("/pypi/orm", "orm.url.make_url", "Parse a URL."),
        api_passage("/pypi/orm", "orm.create_engine", "Return a new Engine for a database."),
        api_passage("/pypi/orm", "orm.Session", "A unit of work: `Session(bind=create_engine(dsn))`."),
        api_passage("/pypi/orm", "orm.MetaData", "Tables; `metadata.create_all(create_engine(dsn))` emits DDL."),
        api_passage("/pypi/orm", "orm.inspect", "Inspect a connectable: `inspect(create_engine(dsn))`."),
        api_passage("/pypi/orm", "orm.text", "Textual SQL: `create_engine(dsn).execute(text(sql))`."),
        api_passage("/pypi/orm", "orm.Table", "A table: `Table(name, meta)`, created by `create_engine(dsn)`."),
        api_passage("/pypi/orm", "orm.select", "A SELECT: run `select(t)` on `create_engine(dsn)`."),
        api_passage("/pypi/other", "other.Pool", "A pool of connections: `Pool(size=5)`."),
    ]
    return small_index({"/pypi/orm": "orm", "/pypi/other": "other"}, chunks)


async def test_in_the_library_asked_about_the_api_its_own_documentation_calls_most_comes_first() -> None:
    pipeline = _local_pipeline(_orm_index())
    for request in (
        DocRequest("get a database engine from a url with orm"),  # named in the question: a hint
        DocRequest("get a database engine from a url", library="orm"),  # given: the only library searched
    ):
        result = await pipeline.run(request)
        assert symbol_of(result.passages[0].chunk) == "orm.create_engine", request


async def test_a_question_asking_whether_is_answered_by_the_api_that_says_yes_or_no() -> None:
    # both are named by "handler", a word most of the library's passages share; only the documentation of
    # `has_handlers` says it answers yes or no
    guide = [Chunk(f"g{i}", f"Attach handler {i}.", "Guide", None, "/pypi/logkit", i, 5) for i in range(300)]
    index = small_index(
        {"/pypi/logkit": "logkit"},
        [
            api_passage("/pypi/logkit", "logkit.Handler", "Handler instances send a record to a destination."),
            api_passage("/pypi/logkit", "logkit.has_handlers", "Return True if any handler is configured."),
            api_passage("/pypi/logkit", "logkit.Filter", "Filter records by level."),
            *guide,
        ],
    )
    pipeline = _local_pipeline(index)
    asked = await pipeline.run(DocRequest("logkit check if a handler exists", library="logkit"))
    assert symbol_of(asked.passages[0].chunk) == "logkit.has_handlers"
    told = await pipeline.run(DocRequest("logkit send records to a handler", library="logkit"))
    assert symbol_of(told.passages[0].chunk) == "logkit.Handler"


async def test_an_error_pasted_into_the_question_comes_after_the_passage_that_may_fix_it() -> None:
    error = Chunk(
        "e",
        "## class `netkit.ReadTimeout(TimeoutException)`\n\nReadTimeout: the read timed out on a slow server.",
        "Module `netkit` > class `netkit.ReadTimeout(TimeoutException)`",
        None,
        "/pypi/netkit",
        0,
        10,
    )
    index = small_index(
        {"/pypi/netkit": "netkit"},
        [error, api_passage("/pypi/netkit", "netkit.Timeout", "How long to wait for a read on a server.")],
    )
    result = await _local_pipeline(index).run(DocRequest("netkit.ReadTimeout on a slow server: the read timed out"))
    assert [symbol_of(p.chunk) for p in result.passages] == ["netkit.Timeout", "netkit.ReadTimeout"]


async def test_a_word_the_rules_take_for_a_library_is_one_only_if_it_names_one() -> None:
    # "with several": the rules read `several` as a library's name; a package whose description has the word
    # is no such library, and the answer must not say it searched that package.
    index = _local_index()
    index.libraries["/pypi/dtypes"] = Library("/pypi/dtypes", "dtypes", "Several extra dtypes", "package", "1", None)
    pipeline = _local_pipeline(index)
    result = await pipeline.run(DocRequest("cut a line into parts with several separators"))
    assert result.library.id == EVERYTHING
    assert result.notes == ["No library called 'several' is in the local documentation; all of it was searched."]
    # given as `library`, a description's word is still a way to find one ("postgresql" → asyncpg)
    result = await pipeline.run(DocRequest("split a string", library="several"))
    assert result.library.id == "/pypi/dtypes"


async def test_a_library_given_explicitly_includes_its_modules_documented_as_libraries() -> None:
    # `os.path` is a library of its own in the index (so that "os.path" names it), yet part of `os`
    chunks = [
        api_passage("/python/os", "os.makedirs", "Create a leaf directory and all intermediate ones."),
        api_passage("/python/os.path", "os.path.exists", "Return True if path refers to an existing path."),
        api_passage("/python/osx", "osx.exists", "Whether a path exists on a mounted volume."),
    ]
    index = small_index({"/python/os": "os", "/python/os.path": "os.path", "/python/osx": "osx"}, chunks)
    result = await _local_pipeline(index).run(DocRequest("check whether a path exists", library="os"))
    assert [symbol_of(p.chunk) for p in result.passages] == ["os.path.exists"]  # not `osx`'s
    assert index.share("exists", "/python/os") == 0.5  # os.path's passage counts as the library's


# --- the documentation's words for the question's (`synonyms.py`) ---------------------------------------------


def _worded_index() -> LocalIndex:
    """APIs documented in their own words, and others that share the words a developer would ask with."""
    api = api_passage
    chunks = [
        api("/python/json", "json.loads", "Deserialize s (a str holding a JSON document) to a Python object."),
        api("/python/json", "json.dumps", "Serialize obj to a JSON formatted str."),
        api("/python/random", "random.shuffle", "Shuffle list x in place, and return None."),
        api("/python/random", "random.choice", "Choose a random element from a non-empty sequence."),
        api("/pypi/textkit", "textkit.parse_number", "Parse a number out of a string of text."),
        api("/pypi/textkit", "textkit.JsonText", "A JSON string, kept as the string it came from, into a view."),
        api("/pypi/textkit", "textkit.items", "The items of a list of text, in their order."),
    ]
    titles = {"/python/json": "json", "/python/random": "random", "/pypi/textkit": "textkit"}
    return small_index(titles, chunks)


@pytest.mark.parametrize(
    ("question", "answer"),
    [("parse a JSON string into a dict", "json.loads"), ("randomize the items of a list", "random.shuffle")],
)
async def test_a_question_in_other_words_than_the_documentations_finds_the_api_first(
    question: str, answer: str
) -> None:
    index = _worded_index()
    result = await _local_pipeline(index).run(DocRequest(question))
    assert symbol_of(result.passages[0].chunk) == answer
    # the question's own words alone rank another passage first (RAG_SYNONYMS=false)
    plain = await _local_pipeline(index, synonyms=False).run(DocRequest(question))
    assert symbol_of(plain.passages[0].chunk) != answer


async def test_how_a_question_is_framed_does_not_choose_the_api() -> None:
    chunks = [
        api_passage("/python/urllib", "urllib.parse.urlsplit", "Split a URL string into its five components."),
        api_passage("/python/subprocess", "subprocess.call", "Run the command described by args and wait for it."),
        api_passage("/python/builtins", "help", "Invoke the built-in help system."),
    ]
    index = small_index(
        {"/python/urllib": "urllib", "/python/subprocess": "subprocess", "/python/builtins": "builtins"}, chunks
    )
    pipeline = _local_pipeline(index)
    for question in ("Which function should I call to split a URL?", "pls help: split a URL string"):
        result = await pipeline.run(DocRequest(question))
        # the framing's words ("call", "help") name APIs too, which have nothing to do with the question
        assert [symbol_of(p.chunk) for p in result.passages] == ["urllib.parse.urlsplit"], question


async def test_a_misspelt_word_is_read_as_the_documentations_and_said_so() -> None:
    chunks = [
        api_passage("/python/text", "text.parse", "Parse text into tokens."),
        *(api_passage("/pypi/batch", f"batch.load{i}", f"Parse item {i} of the batch.") for i in range(40)),
    ]
    index = small_index({"/python/text": "text", "/pypi/batch": "batch"}, chunks)
    result = await _local_pipeline(index).run(DocRequest("how to pasre"))
    assert symbol_of(result.passages[0].chunk) == "text.parse"
    assert "Read “pasre” as “parse”." in result.notes


class UrlEmbedder(ConceptEmbedder):
    """Embeds a text mentioning a URL on one axis, a pathname close to it (cosine 0.8) and anything else on a
    third: to a question about URLs, two APIs that parse URLs are alike, a path's `split` is nearly so."""

    async def embed(self, texts: Sequence[str], *, input_type: str) -> np.ndarray:
        axes = {"url": (1.0, 0.0, 0.0), "pathname": (0.8, 0.6, 0.0)}
        return np.array(
            [next((v for word, v in axes.items() if word in t.lower()), (0.0, 0.0, 1.0)) for t in texts],
            dtype=np.float32,
        )


async def test_after_the_reorder_near_copies_of_two_apis_pay_what_they_paid_before_it() -> None:
    # urlsplit and urlparse are two APIs described almost word for word; the reorder must not make their
    # likeness cost more than it did in the fused order and push the second one under a worse answer
    chunks = [
        api_passage("/python/urllib.parse", "urllib.parse.urlsplit", "Split a URL string into scheme, netloc, path."),
        api_passage("/python/urllib.parse", "urllib.parse.urlparse", "Parse a URL string into scheme, netloc, path."),
        api_passage("/python/os.path", "os.path.split", "Split the pathname path into a pair, (head, tail)."),
        api_passage("/python/os.path", "os.path.basename", "Return the base name of pathname path."),
        api_passage("/python/os.path", "os.path.join", "Join one or more path segments; split them again with split."),
    ]
    index = small_index({"/python/urllib.parse": "urllib.parse", "/python/os.path": "os.path"}, chunks)
    reordered = _local_pipeline(index, local_reorder=DenseReorder(UrlEmbedder()))  # type: ignore[arg-type]
    result = await reordered.run(DocRequest("split a url into scheme, host and path"))
    assert [p.chunk.id for p in result.passages][:2] == ["urllib.parse.urlsplit", "urllib.parse.urlparse"]
