"""retrieve_documentation end to end through the chat API, on the offline model: the local index,
Context7 (a local fake speaking its real shapes), the fallback when Context7 is down, billing."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.fakes.context7_server import FakeContext7
from tests.fakes.server import ServerThread
from tests.support import make_user

from almanac.main import Services, create_app
from almanac.rag.local_index import IndexInputs, build_local_index

GUIDE = """# Deploying Almanac

## Healthchecks

Point the container HEALTHCHECK at /ready: it answers 200 once the database is reachable.

## Scaling out

Run several app processes against one PostgreSQL database; they share nothing else.
"""


async def index_docs(services: Services, tmp_path: Path) -> None:
    docs = tmp_path / "docs" / "ops"
    docs.mkdir(parents=True)
    (docs / "deploy.md").write_text(GUIDE)
    inputs = IndexInputs(docs_paths=(tmp_path / "docs",), packages=False, stdlib=False)
    await build_local_index(services.database, inputs, None)
    await services.documentation.start(services.database)


async def chat(services: Services, settings: Any, message: str) -> dict[str, Any]:
    user = await make_user(services)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(settings, services)),
        base_url="http://localhost",
        headers={"Authorization": f"Bearer {user.api_key}"},
    ) as http:
        response = await http.post("/api/chat", json={"message": message})
        assert response.status_code == 200, response.text
        body = response.json()
        detail = (await http.get(f"/api/conversations/{body['conversation_id']}")).json()
    body["items"] = {item["id"]: item for item in detail["full"] + detail["summarised"]}
    return body


async def test_the_offline_model_looks_up_local_docs_and_pays_15(database_url: str, build: Any, tmp_path: Path) -> None:
    services, settings = build(database_url, doc_source="local")  # never Context7, wherever the test runs
    await index_docs(services, tmp_path)
    body = await chat(services, settings, "How do I configure the healthcheck in ops?")
    assert body["tools_used"] == ["retrieve_documentation"]
    assert (body["credits_used"], body["credits_remaining"]) == (15, 35)
    result = body["items"]["q1-t1"]
    assert result["tool_name"] == "retrieve_documentation" and not result["is_error"]
    assert "Documentation for **ops** (`/local/ops`) from local" in result["content"]
    assert "Point the container HEALTHCHECK at /ready" in result["content"]
    assert body["items"]["q1-t1-sum"]["ref"] == "q1-t1"
    assert "HEALTHCHECK" in body["response"] and "[q1-t1]" in body["response"]


@pytest.fixture
def context7() -> Iterator[tuple[FakeContext7, str]]:
    fake = FakeContext7()
    with ServerThread(fake.app) as server:
        yield fake, server.url + "/api"


async def test_context7_answers_with_citations_and_is_cached(
    sqlite_url: str, build: Any, context7: tuple[FakeContext7, str]
) -> None:
    fake, url = context7
    services, settings = build(sqlite_url, doc_source="context7", context7_api_url=url)
    first = await chat(services, settings, "How do I declare dependencies in FastAPI?")
    assert first["tool_results"][0]["citations"][0] == {
        "title": "Declare a dependency",
        "url": "https://fastapi.tiangolo.com/tutorial/dependencies/",
        "library": "/tiangolo/fastapi",
    }
    assert "from context7" in first["items"]["q1-t1"]["content"]
    calls = len(fake.requests)
    again = await chat(services, settings, "How do I declare dependencies in FastAPI?")
    assert again["tools_used"] == ["retrieve_documentation"] and len(fake.requests) == calls


async def test_when_context7_is_down_local_docs_answer_and_say_so(
    sqlite_url: str, build: Any, context7: tuple[FakeContext7, str], tmp_path: Path
) -> None:
    fake, url = context7
    services, settings = build(sqlite_url, doc_source="context7", context7_api_url=url, context7_timeout_s=0.5)
    await index_docs(services, tmp_path)
    fake.fail(*[(503, {"error": "search_failed"}, {})] * 5)
    body = await chat(services, settings, "How do I scale out with ops?")
    content = body["items"]["q1-t1"]["content"]
    assert "context7 was unavailable" in content and "from local" in content and "PostgreSQL" in content


@pytest.mark.parametrize(
    ("fault", "expected", "cost"),
    [
        # Nothing looked up (or found): the lookup is not charged, and an answer that only reports its
        # problem carries nothing (the offline model declines), so the question is free too.
        ((401, {"error": "invalid_api_key"}, {}), "rejected the API key", 0),
        ((202, {"error": "library_not_finalized"}, {}), "not finalized", 0),
    ],
)
async def test_context7_errors_are_tool_errors_the_turn_survives(
    sqlite_url: str, build: Any, context7: tuple[FakeContext7, str], fault: tuple[Any, ...], expected: str, cost: int
) -> None:
    fake, url = context7
    services, settings = build(sqlite_url, doc_source="context7", context7_api_url=url)
    fake.libraries.pop("/someone/fastapi-clone")
    fake.fail(fault)
    body = await chat(services, settings, "How do I declare dependencies in FastAPI?")
    result = body["items"]["q1-t1"]
    assert result["is_error"] and expected in result["content"]
    assert body["stop_reason"] == "declined" and "reported a problem" in body["response"]
    assert body["credits_used"] == cost


async def test_an_unbuilt_local_index_is_an_error_that_costs_nothing(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url)
    body = await chat(services, settings, "How do I configure the healthcheck in ops?")
    [result] = body["tool_results"]
    assert (result["status"], result["credits"]) == ("unavailable", 0)
    assert "run `almanac docs index`" in body["items"]["q1-t1"]["content"] and body["credits_used"] == 0


async def test_documentation_is_charged_once_per_query(sqlite_url: str, build: Any, tmp_path: Path) -> None:
    from almanac.llm.fake import ScriptedModel, call, calls, reply

    model = ScriptedModel(
        [
            calls(
                call("retrieve_documentation", {"query": "healthcheck", "library": "ops"}),
                call("retrieve_documentation", {"query": "scaling", "library": "ops"}),
            ),
            calls(call("retrieve_documentation", {"query": "ready", "library": "ops"})),
            reply("done"),
        ]
    )
    services, settings = build(sqlite_url, model=model, doc_source="local")
    await index_docs(services, tmp_path)
    body = await chat(services, settings, "docs please")
    charged = {r["item_id"]: r["credits"] for r in body["tool_results"]}
    # The two parallel lookups both found passages: whichever settled first holds the +10.
    assert sorted([charged["q1-t1"], charged["q1-t2"]]) == [0, 10] and charged["q1-t3"] == 0
    assert body["credits_used"] == 15


async def test_auto_uses_context7_while_it_answers_and_the_local_index_when_it_does_not(
    sqlite_url: str, build: Any, context7: tuple[FakeContext7, str], tmp_path: Path
) -> None:
    fake, url = context7
    services, settings = build(sqlite_url, doc_source="auto", context7_api_url=url)  # no key needed
    await index_docs(services, tmp_path)  # starting the service checks Context7
    try:
        source = services.documentation.source
        assert "auto: Context7 (Context7 answering" in services.documentation.describe()[0]
        online = await chat(services, settings, "How do I declare dependencies in FastAPI?")
        assert "from context7" in online["items"]["q1-t1"]["content"]

        fake.fail((503, {"error": "search_failed"}, {}))
        await source.check()  # a periodic check finds it down
        assert services.documentation.off()[0].startswith("Context7 (Context7 failed (HTTP 503")
        before = len(fake.requests)
        offline = await chat(services, settings, "How do I scale out with ops?")
        content = offline["items"]["q1-t1"]["content"]
        assert "from local" in content and "PostgreSQL" in content and "unavailable" not in content
        assert len(fake.requests) == before  # the question never tried Context7

        await source.check()  # back
        again = await chat(services, settings, "How do I declare dependencies in FastAPI?")
        assert "from context7" in again["items"]["q1-t1"]["content"]
    finally:
        await services.documentation.stop()
