"""The Context7 source against a local server serving the real v2 shapes, errors and limits."""

import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.fakes.context7_server import FakeContext7
from tests.fakes.embedder import HashEmbedder
from tests.fakes.server import ServerThread

from almanac.rag.sources.base import (
    AuthFailed,
    LibraryInfo,
    LibraryNotFound,
    NotFinalized,
    RateLimited,
    SourceUnavailable,
)
from almanac.rag.sources.context7 import Context7Source

KEY = "ctx7sk-test-secret"
FASTAPI = LibraryInfo("/tiangolo/fastapi", "FastAPI")


@pytest.fixture
def fake() -> Iterator[tuple[FakeContext7, str]]:
    fake = FakeContext7()
    with ServerThread(fake.app) as server:
        yield fake, server.url + "/api"


@pytest.fixture
def make(sqlite_url: str, build: Any, fake: tuple[FakeContext7, str]) -> Any:
    services, _ = build(sqlite_url)

    def factory(**kwargs: Any) -> Context7Source:
        options = {
            "database": services.database,
            "embedder": HashEmbedder(),
            "api_key": KEY,
            "base_url": fake[1],
            "timeout_s": 2.0,
            "max_retry_wait_s": 3.0,
            "backoff_s": 0.05,
        }
        options.update(kwargs)
        return Context7Source(**options)

    return factory


async def test_library_search_parses_the_v2_response(make: Any, fake: tuple[FakeContext7, str]) -> None:
    found = await make().libraries("fastapi", "dependency injection")
    assert [(lib.id, lib.title, lib.trust_score, lib.snippets) for lib in found] == [
        ("/tiangolo/fastapi", "FastAPI", 9.0, 1800),
        ("/someone/fastapi-clone", "fastapi-clone", 2.0, 12),
    ]
    sent = fake[0].requests[0]
    assert sent["params"] == {"query": "dependency injection", "libraryName": "fastapi"}
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"


async def test_documentation_is_chunked_per_snippet_and_searchable(make: Any) -> None:
    corpus = await make().corpus(FASTAPI, "dependencies")
    assert [chunk.title for chunk in corpus.chunks] == [
        "Declare a dependency",
        "Background tasks",
        "CORS middleware",
        "Path parameters",
    ]
    assert corpus.chunks[0].source_url == "https://fastapi.tiangolo.com/tutorial/dependencies/"
    hits = await corpus.search("run work after the response with background tasks", 3)
    assert corpus.chunks[hits[0].index].title == "Background tasks"


async def test_a_repeated_question_costs_no_network_call(
    database_url: str, build: Any, fake: tuple[FakeContext7, str]
) -> None:
    services, _ = build(database_url)

    def make() -> Context7Source:
        return Context7Source(database=services.database, embedder=HashEmbedder(), base_url=fake[1])

    source = make()
    await source.corpus(FASTAPI, "dependencies")
    await source.libraries("fastapi", "q")
    again = make()  # another process or request: the cache is in the database
    await again.corpus(FASTAPI, "dependencies")
    await again.libraries("fastapi", "q")
    assert len(fake[0].requests) == 2 and again.network_calls == 0


async def test_a_version_pin_is_sent_as_given(make: Any, fake: tuple[FakeContext7, str]) -> None:
    await make().corpus(LibraryInfo("/tiangolo/fastapi@0.115.0", "FastAPI"), "cors")
    assert fake[0].requests[0]["params"]["libraryId"] == "/tiangolo/fastapi@0.115.0"


async def test_rate_limits_are_honoured_then_retried(make: Any, fake: tuple[FakeContext7, str]) -> None:
    fake[0].fail((429, {"error": "rate_limit_exceeded", "message": "slow down"}, {"Retry-After": "1"}))
    started = time.monotonic()
    assert (await make().libraries("fastapi", "q"))[0].id == "/tiangolo/fastapi"
    assert time.monotonic() - started >= 0.9 and len(fake[0].requests) == 2


async def test_a_retry_after_beyond_the_bound_fails_fast(make: Any, fake: tuple[FakeContext7, str]) -> None:
    fake[0].fail((429, {"error": "rate_limit_exceeded"}, {"Retry-After": "120"}))
    with pytest.raises(RateLimited, match="retry after 120 s"):
        await make().libraries("fastapi", "q")
    assert len(fake[0].requests) == 1


@pytest.mark.parametrize(
    ("fault", "error", "text"),
    [
        ((401, {"error": "invalid_api_key", "message": "Invalid API key"}, {}), AuthFailed, "ctx7sk"),
        ((404, {"error": "not_found", "message": "Library /x/y not found"}, {}), LibraryNotFound, "/x/y"),
        ((202, {"error": "library_not_finalized", "message": "processing"}, {}), NotFinalized, "not finalized"),
        (("html",), SourceUnavailable, "HTML page"),
        (("empty",), LibraryNotFound, "no documentation"),
    ],
)
async def test_errors_become_clear_source_errors(
    make: Any, fake: tuple[FakeContext7, str], fault: tuple[Any, ...], error: type[Exception], text: str
) -> None:
    fake[0].fail(fault)
    with pytest.raises(error, match=text) as raised:
        await make().corpus(FASTAPI, "anything")
    assert KEY not in str(raised.value)


async def test_malformed_json_is_reported(make: Any, fake: tuple[FakeContext7, str]) -> None:
    fake[0].fail(("malformed",))
    with pytest.raises(SourceUnavailable, match="malformed"):
        await make().libraries("fastapi", "q")


async def test_server_errors_and_timeouts_are_retried_then_reported(make: Any, fake: tuple[FakeContext7, str]) -> None:
    fake[0].fail((503, {"error": "search_failed"}, {}), (500, {"error": "internal_error"}, {}))
    assert (await make().libraries("fastapi", "q"))[0].id == "/tiangolo/fastapi"
    fake[0].fail(("hang",))
    with pytest.raises(SourceUnavailable, match=r"did not answer within 0\.3 s"):
        await make(timeout_s=0.3, max_retries=0).libraries("django", "q")
    fake[0].fail(*[(500, {"error": "internal_error"}, {})] * 3)
    with pytest.raises(SourceUnavailable, match="HTTP 500"):
        await make().libraries("flask", "q")


async def test_without_a_key_no_authorization_is_sent(make: Any, fake: tuple[FakeContext7, str]) -> None:
    await make(api_key=None).libraries("fastapi", "q")
    assert "authorization" not in fake[0].requests[0]["headers"]


async def test_the_cache_refetches_after_its_ttl(make: Any, fake: tuple[FakeContext7, str]) -> None:
    from datetime import UTC, datetime, timedelta

    now = [datetime(2026, 11, 1, tzinfo=UTC)]
    source = make(clock=lambda: now[0], cache_ttl_s=3600)
    await source.corpus(FASTAPI, "dependencies")
    assert len(fake[0].requests) == 1
    now[0] += timedelta(seconds=3599)
    await source.corpus(FASTAPI, "dependencies")
    assert len(fake[0].requests) == 1  # still fresh: served from the database
    now[0] += timedelta(seconds=2)
    await source.corpus(FASTAPI, "dependencies")
    assert len(fake[0].requests) == 2  # expired: fetched again
    now[0] += timedelta(seconds=3599)
    await source.corpus(FASTAPI, "dependencies")
    assert len(fake[0].requests) == 2  # and cached again from the refetch on


@pytest.mark.parametrize(
    ("fault", "up", "detail"),
    [
        (None, True, "answering"),
        ((429, {"error": "rate_limit_exceeded"}, {"Retry-After": "30"}), True, "rate-limited"),
        ((503, {"error": "search_failed"}, {}), False, "HTTP 503"),
        ((401, {"error": "invalid_api_key"}, {}), False, "rejected the API key"),
        (("html",), False, "HTML page"),
        (("malformed",), False, "something other than a library search"),
    ],
)
async def test_probe_says_whether_context7_answers(
    make: Any, fake: tuple[FakeContext7, str], fault: tuple[Any, ...] | None, up: bool, detail: str
) -> None:
    if fault:
        fake[0].fail(fault)
    answer = await make().probe()
    assert answer[0] is up and detail in answer[1]
    assert len(fake[0].requests) == 1  # one request, never retried


async def test_probe_of_an_unreachable_server_is_down(make: Any) -> None:
    up, detail = await make(base_url="http://127.0.0.1:9/api").probe()
    assert not up and "not reachable" in detail
