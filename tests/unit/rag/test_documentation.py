"""The local index's lifecycle in the running service: BM25 first, then — where a whole-index vector search
runs (LOCAL_DENSE=both or fuse) — embeddings library by library (most-asked first, each library hybrid as
soon as it is embedded), resumed after a restart; with the default reorder, no passage is embedded ahead
of a question. A question asked during the first build waits for it and says so. Every stage is observed,
never raced: the fake embedder only proceeds when the test lets it."""

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.fakes.embedder import HashEmbedder

from almanac.llm.providers.offline import OfflineModel
from almanac.rag.documentation import DocConfig, Documentation, build_documentation, build_reranker
from almanac.rag.embeddings.base import Embeddings, InputType
from almanac.rag.local_index import IndexInputs
from almanac.rag.pipeline import DocRequest
from almanac.rag.priority import LibraryPriority
from almanac.rag.rerank import DenseReorder, FusedOrder, ModelReranker
from almanac.tools.base import ToolContext
from almanac.tools.builtin.documentation import DocumentationTool


class GatedEmbedder(HashEmbedder):
    """Embeds documents only when `release()`d, one call per release; queries at once."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Semaphore(0)
        self.waiting = asyncio.Event()
        self.documents: list[int] = []

    async def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        if input_type == "document":
            self.waiting.set()
            await self.gate.acquire()
            self.documents.append(len(texts))
        return await super().embed(texts, input_type=input_type)

    def release(self, calls: int = 1) -> None:
        for _ in range(calls):
            self.gate.release()


def docs(root: Path) -> IndexInputs:
    for name, text in {
        "ops": "# Guide\n\nDeploy with Docker.\n\n## Backups\n\nRun pg_dump nightly.",
        "billing": "# Credits\n\nA query costs five credits.",
        "search": "# Search\n\nBM25 and vectors, fused.",
    }.items():
        (root / "docs" / name).mkdir(parents=True)
        (root / "docs" / name / "guide.md").write_text(text)
    return IndexInputs(docs_paths=(root / "docs",), packages=False, stdlib=False)


def documentation(services: Any, inputs: IndexInputs, embedder: Any, **config: Any) -> Documentation:
    """The service's documentation, wired by `build_documentation` with `embedder` as the configured one."""
    return build_documentation(DocConfig(inputs=inputs, **config), services.database, OfflineModel(), embedder=embedder)


async def until(docs: Documentation, condition: Any) -> None:
    """Wait for the state to satisfy `condition` (it changes only when the build moves on)."""
    while not condition():
        await asyncio.wait_for(docs.state.changed(), timeout=60)


async def test_auto_indexing_serves_bm25_first_then_each_library_hybrid_then_all(
    sqlite_url: str, build: Any, tmp_path: Path
) -> None:
    services, _ = build(sqlite_url)
    embedder = GatedEmbedder()
    first = documentation(services, docs(tmp_path), embedder, local_dense="fuse")
    await first.start(services.database)
    assert first.state.task is not None

    # Stage 1: BM25 only, searchable while no document has been embedded.
    await until(first, lambda: first.state.index is not None)
    await embedder.waiting.wait()
    index = first.state.index
    assert index is not None and index.vectors is None and "(BM25 only)" in first.state.status
    result = await first.pipeline.run(DocRequest("nightly backups with pg_dump", library="ops"))
    assert "pg_dump" in result.passages[0].chunk.text

    # Stage 2: one library embedded → hybrid there, BM25 elsewhere.
    embedder.release()
    await until(first, lambda: first.state.index is not None and first.state.index.vectors is not None)
    partial = first.state.index
    assert partial.hybrid is not None and len(partial.hybrid) == 1
    assert "hybrid for 1 of 3 libraries" in first.state.published[1]
    [done] = partial.hybrid
    assert partial.has_vectors(done) and not partial.has_vectors(None)

    # Stage 3: everything embedded → hybrid everywhere, stored.
    embedder.release(10)
    await first.state.task
    assert first.state.index.hybrid is None and "(hybrid)" in first.state.status
    assert [stage.rsplit("(", 1)[1] for stage in first.state.published] == [
        "BM25 only)",
        "hybrid for 1 of 3 libraries, BM25 for the rest)",
        "hybrid for 2 of 3 libraries, BM25 for the rest)",
        "hybrid)",  # the last library's stage and the stored, complete index
        "hybrid)",
    ]

    restarted = documentation(services, first.config.inputs, HashEmbedder(), local_dense="fuse")
    await restarted.start(services.database)
    assert restarted.state.task is None and restarted.state.index is not None
    assert restarted.state.index.hybrid is None and restarted.state.status == first.state.status


async def test_a_library_asked_about_during_the_build_is_embedded_next(
    sqlite_url: str, build: Any, tmp_path: Path
) -> None:
    services, _ = build(sqlite_url)
    embedder = GatedEmbedder()
    first = documentation(services, docs(tmp_path), embedder, local_dense="fuse")
    await first.start(services.database)
    await embedder.waiting.wait()  # BM25 is served; the first library (billing: smallest) waits for its embedding
    # Unasked, ops (the largest folder) would go last; asked about, it goes next.
    await first.pipeline.run(DocRequest("nightly backups", library="ops"))
    embedder.release(2)
    await until(first, lambda: first.state.index is not None and len(first.state.index.hybrid or ()) == 2)
    assert first.state.index is not None and first.state.index.hybrid == {"/local/billing", "/local/ops"}
    embedder.release(10)
    await first.state.task


async def test_by_default_no_passage_is_embedded_ahead_and_a_question_embeds_only_its_candidates(
    sqlite_url: str, build: Any, tmp_path: Path
) -> None:
    services, _ = build(sqlite_url)
    embedder = GatedEmbedder()
    reorder = documentation(services, docs(tmp_path), embedder)  # LOCAL_DENSE=reorder, the default
    await reorder.start(services.database)
    assert reorder.state.task is not None
    await reorder.state.task  # the build ends without waiting for any embedding
    index = reorder.state.index
    assert index is not None and index.vectors is None and embedder.documents == []
    assert "(BM25 only)" in reorder.state.status

    asked = asyncio.create_task(reorder.pipeline.run(DocRequest("nightly backups with pg_dump")))
    await embedder.waiting.wait()  # the reorder embeds the question's candidates, no more
    embedder.release()
    result = await asked
    assert "pg_dump" in result.passages[0].chunk.text
    [candidates] = embedder.documents  # one call, for this question's candidates
    assert 0 < candidates <= len(index.chunks)

    restarted = documentation(services, reorder.config.inputs, embedder)
    await restarted.start(services.database)
    assert restarted.state.task is None  # the stored BM25 index is complete for the reorder


def test_priority_order() -> None:
    priority = LibraryPriority(most_asked=["pydantic", "asyncio"])
    sizes = {"/pypi/zzz": 5, "/python/json": 50, "/pypi/pydantic": 900, "/python/asyncio": 300, "/local/docs": 40,
             "/python/abc": 10, "/pypi/aaa": 70}  # fmt: skip
    assert priority.order(sizes) == [
        "/local/docs", "/pypi/pydantic", "/python/asyncio", "/python/abc", "/python/json", "/pypi/zzz", "/pypi/aaa"
    ]  # fmt: skip
    priority.ask("/pypi/aaa")
    priority.ask("/python/json")
    priority.ask("/python/json")
    assert priority.order(sizes)[:3] == ["/python/json", "/pypi/aaa", "/local/docs"]


async def test_a_question_during_the_first_build_waits_for_it_and_reports_progress(
    sqlite_url: str, build: Any, tmp_path: Path
) -> None:
    services, _ = build(sqlite_url)
    inputs = docs(tmp_path)
    started = asyncio.Event()
    released = asyncio.Event()
    from almanac.rag import documentation as module

    real = module.build_local_index

    async def slow_start(*args: Any, **kwargs: Any) -> Any:
        kwargs["progress"]("collecting documents", 0, 0)
        started.set()
        await released.wait()
        return await real(*args, **kwargs)

    module.build_local_index = slow_start  # type: ignore[assignment]
    try:
        first = documentation(services, inputs, HashEmbedder(), index_wait_s=60)
        await first.start(services.database)
        await started.wait()
        reports: list[str] = []
        reported = asyncio.Event()

        def report(message: str) -> None:
            reports.append(message)
            reported.set()

        context = ToolContext("u", "c", 1, "q1", "q1-t1", "toolu_1", progress=report)
        tool = DocumentationTool(first.pipeline)
        call = asyncio.ensure_future(tool.run({"query": "nightly backups", "library": "ops"}, context))
        await reported.wait()
        assert not call.done()  # waiting, not failing
        released.set()
        output = await call
    finally:
        module.build_local_index = real  # type: ignore[assignment]
    assert not output.is_error and "pg_dump" in output.content
    assert reports[0] == (
        "The local documentation index is being built (first start); waiting for it: being built: collecting documents"
    )


async def test_the_wait_is_bounded_and_then_the_question_fails_without_charge(
    sqlite_url: str, build: Any, tmp_path: Path
) -> None:
    services, _ = build(sqlite_url)
    first = documentation(services, docs(tmp_path), HashEmbedder(), index_wait_s=0.01)
    never = asyncio.Event()
    first.state.task = asyncio.ensure_future(never.wait())  # a build that never produces an index
    first.state.set_status("being built: chunked 10/10")
    context = ToolContext("u", "c", 1, "q1", "q1-t1", "toolu_1")
    from almanac.tools.base import ToolUnavailable

    try:
        await DocumentationTool(first.pipeline).run({"query": "backups", "library": "ops"}, context)
    except ToolUnavailable as exc:
        assert "not available yet (being built: chunked 10/10)" in str(exc)
    else:
        raise AssertionError("expected the tool to be unavailable")
    finally:
        first.state.task.cancel()


def test_fusion_settings_reach_every_hybrid_search(sqlite_url: str, build: Any) -> None:
    from almanac.main import doc_config
    from almanac.rag.hybrid import HybridConfig

    services, settings = build(
        sqlite_url, fusion="rrf", rrf_k=10, doc_source="context7", rag_min_score=0.5, local_dense="fuse"
    )
    config = doc_config(settings)
    assert config.hybrid() == HybridConfig(method="rrf", rrf_k=10) and config.min_score == 0.5
    assert config.local_dense == "fuse"
    docs = services.documentation
    assert docs.local._config == HybridConfig(method="rrf", rrf_k=10)
    assert docs.source._hybrid == HybridConfig(method="rrf", rrf_k=10)  # type: ignore[attr-defined]
    default = doc_config(build(sqlite_url, doc_source="auto")[1])
    assert default.hybrid() == HybridConfig(method="gated", rrf_k=60.0) and default.source == "auto"
    assert default.local_dense == "reorder"


class _VendorModel:
    """A stand-in with a vendor's name: build_reranker treats it as a language model."""

    provider = "anthropic"
    name = "claude-test"
    supports_tools = True
    supports_streaming = True

    def stream(self, request: Any) -> Any:
        raise AssertionError("not called")


def test_the_chat_model_reranks_only_when_asked_and_then_within_the_configured_bounds() -> None:
    model = _VendorModel()
    assert isinstance(build_reranker(DocConfig(reranker="auto"), model), FusedOrder)  # type: ignore[arg-type]
    chosen = build_reranker(
        DocConfig(
            reranker="model",
            rerank_timeout_s=3.0,
            rerank_max_candidates=8,
            rerank_passage_chars=300,
            rerank_fused_weight=0.0,
        ),
        model,  # type: ignore[arg-type]
    )
    assert isinstance(chosen, ModelReranker)
    assert (chosen._timeout_s, chosen._max, chosen._chars, chosen._fused_weight) == (3.0, 8, 300, 0.0)


def test_the_rerank_settings_reach_the_chat_model_reranker(sqlite_url: str, build: Any) -> None:
    from almanac.main import doc_config

    _, settings = build(sqlite_url, reranker="model", rerank_fused_weight=0.0, rerank_max_candidates=5)
    chosen = build_reranker(doc_config(settings), _VendorModel())  # type: ignore[arg-type]
    assert isinstance(chosen, ModelReranker) and (chosen._fused_weight, chosen._max) == (0.0, 5)
    default = build_reranker(doc_config(build(sqlite_url, reranker="model")[1]), _VendorModel())  # type: ignore[arg-type]
    assert isinstance(default, ModelReranker) and default._fused_weight == 0.5


def test_by_default_bm25_finds_the_local_candidates_and_the_embeddings_reorder_them(
    sqlite_url: str, build: Any
) -> None:
    services, _ = build(sqlite_url)
    reorder = build_documentation(DocConfig(embeddings="local"), services.database, OfflineModel())
    assert reorder.embedder is not None and reorder.local._embedder is None  # no whole-index vector search
    assert isinstance(reorder.pipeline.local_reorder, DenseReorder)
    both = build_documentation(DocConfig(embeddings="local", local_dense="both"), services.database, OfflineModel())
    assert both.embedder is not None and both.local._embedder is both.embedder
    assert isinstance(both.pipeline.local_reorder, DenseReorder)
    fuse = build_documentation(DocConfig(embeddings="local", local_dense="fuse"), services.database, OfflineModel())
    assert fuse.local._embedder is fuse.embedder and fuse.pipeline.local_reorder is None
    without = build_documentation(DocConfig(embeddings="none"), services.database, OfflineModel())
    assert without.pipeline.local_reorder is None
    # Voyage's reranker scores all the candidates, whatever their order: no reorder to pay for first
    voyage = build_documentation(DocConfig(voyage_api_key="pa-test"), services.database, OfflineModel())
    assert voyage.embedder is not None and voyage.pipeline.local_reorder is None
