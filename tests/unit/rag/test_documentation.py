"""The local index's lifecycle in the running service: BM25 first, embeddings after, resumed."""

from pathlib import Path
from typing import Any

from tests.fakes.embedder import HashEmbedder

from almanac.llm.providers.offline import OfflineModel
from almanac.rag.documentation import DocConfig, build_documentation
from almanac.rag.embeddings.cache import CachedEmbedder
from almanac.rag.local_index import IndexInputs


async def test_auto_indexing_serves_bm25_first_then_the_hybrid_index(
    sqlite_url: str, build: Any, tmp_path: Path
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\nDeploy with Docker.\n\n## Backups\n\nRun pg_dump nightly.")
    services, _ = build(sqlite_url)
    config = DocConfig(
        embeddings="none", inputs=IndexInputs(docs_paths=(tmp_path / "docs",), packages=False, stdlib=False)
    )

    def documentation() -> Any:
        docs = build_documentation(config, services.database, OfflineModel())
        docs.embedder = CachedEmbedder(HashEmbedder(), services.database)
        return docs

    first = documentation()
    await first.start(services.database)
    assert first.state.task is not None
    await first.state.task
    index = first.state.index
    assert index is not None and index.vectors is not None and "(hybrid)" in first.state.status

    restarted = documentation()
    await restarted.start(services.database)
    assert restarted.state.task is None and restarted.state.index is not None
    assert restarted.state.status == first.state.status
