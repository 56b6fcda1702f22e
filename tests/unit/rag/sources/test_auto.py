"""DOC_SOURCE=auto against the fake Context7 server: Context7 while it answers; when it does not, the
local index without any request to Context7 per question; Context7 again once a check finds it back."""

from collections.abc import Iterator
from typing import Any

import pytest
from tests.fakes.context7_server import FakeContext7
from tests.fakes.embedder import HashEmbedder
from tests.fakes.server import ServerThread

from almanac.rag.pipeline import DocRequest, DocumentationPipeline
from almanac.rag.query import RuleQueryParser
from almanac.rag.rerank import FusedOrder
from almanac.rag.select import RuleSelector
from almanac.rag.sources.auto import AutoSource
from almanac.rag.sources.base import LibraryInfo, StaticCorpus
from almanac.rag.sources.context7 import Context7Source
from almanac.rag.sources.local import EVERYTHING, LocalSource
from almanac.rag.spelling import Spelled


class Local(LocalSource):
    """A local source with one passage, whatever is asked."""

    def __init__(self) -> None:
        self.asked = 0

    async def ready(self, report: object = None) -> None:
        return None

    async def spelled(self, query: str, report: object = None) -> Spelled:
        return Spelled(query)

    async def libraries(self, name: str, query: str, *, loose: bool = True) -> list[LibraryInfo]:
        return []

    async def corpus(self, library: LibraryInfo, topic: str) -> StaticCorpus:  # type: ignore[override]
        from almanac.rag.chunking import Chunk
        from almanac.rag.retriever import Hit

        self.asked += 1
        return StaticCorpus(library, [Chunk("l", "local passage", "Local", None, "/local/x", 0, 2)], [Hit(0, 1.0)])

    def everything(self) -> LibraryInfo:
        return LibraryInfo(EVERYTHING, "all local documentation", source="local")


@pytest.fixture
def fake() -> Iterator[tuple[FakeContext7, str]]:
    fake = FakeContext7()
    with ServerThread(fake.app) as server:
        yield fake, server.url + "/api"


@pytest.fixture
def auto(sqlite_url: str, build: Any, fake: tuple[FakeContext7, str]) -> AutoSource:
    services, _ = build(sqlite_url)
    context7 = Context7Source(
        database=services.database, embedder=HashEmbedder(), base_url=fake[1], timeout_s=2.0, max_retries=0
    )
    return AutoSource(context7, Local(), recheck_s=3600)


def pipeline(auto: AutoSource) -> DocumentationPipeline:
    return DocumentationPipeline(
        source=auto, fallback=auto.local, parser=RuleQueryParser(), selector=RuleSelector(), reranker=FusedOrder()
    )


async def test_context7_when_it_answers_local_without_asking_it_when_not_and_back_again(
    auto: AutoSource, fake: tuple[FakeContext7, str]
) -> None:
    server, _ = fake
    ask = pipeline(auto)
    assert await auto.check() and auto.name == "context7"
    answered = await ask.run(DocRequest("How do I declare dependencies in FastAPI?"))
    assert answered.source == "context7" and answered.passages

    server.fail((503, {"error": "search_failed"}, {}))
    assert not await auto.check() and auto.name == "local"
    before = len(server.requests)
    for _ in range(3):
        offline = await ask.run(DocRequest("How do I declare dependencies in FastAPI?"))
        assert offline.source == "local" and not offline.notes[1:]  # no "was unavailable" detour
    assert len(server.requests) == before  # not one request per question while it is down

    assert await auto.check()  # it answers again
    again = await ask.run(DocRequest("How do I declare dependencies in FastAPI?"))
    assert again.source == "context7" and len(server.requests) > before


async def test_a_question_that_finds_context7_down_switches_to_local_at_once(
    auto: AutoSource, fake: tuple[FakeContext7, str]
) -> None:
    server, _ = fake
    ask = pipeline(auto)
    assert await auto.check()
    server.fail(*[(503, {"error": "search_failed"}, {})] * 3)
    first = await ask.run(DocRequest("How do I declare dependencies in FastAPI?"))
    assert first.source == "local" and "context7 was unavailable" in first.notes[0]
    assert not auto.up and "failed a question" in auto.detail
    before = len(server.requests)
    second = await ask.run(DocRequest("How do I declare dependencies in FastAPI?"))
    assert second.source == "local" and len(server.requests) == before


async def test_a_rate_limit_is_not_an_outage(auto: AutoSource, fake: tuple[FakeContext7, str]) -> None:
    assert await auto.check()
    fake[0].fail((429, {"error": "rate_limit_exceeded"}, {"Retry-After": "120"}))
    result = await pipeline(auto).run(DocRequest("How do I declare dependencies in FastAPI?"))
    assert result.source == "local" and auto.up  # this question fell back; Context7 stays in use


async def test_checks_run_at_start_and_again_periodically(auto: AutoSource, fake: tuple[FakeContext7, str]) -> None:
    auto.recheck_s = 0.01
    fake[0].fail((503, {"error": "search_failed"}, {}))
    await auto.start(wait_s=60)  # waits for the first check
    try:
        assert auto.checks >= 1
        while not auto.up:  # a later check finds it answering
            await auto.next_check()
        assert auto.name == "context7" and auto.checks >= 2
    finally:
        await auto.stop()
    assert "checked every 0.01 s" in auto.describe()
