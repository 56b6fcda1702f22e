"""A summariser whose provider fails over HTTP (500 on every summary request) never breaks an
answer: the answer is 200, and the item stays in the summarised track verbatim, bounded."""

from collections.abc import Iterator
from typing import Any

import pytest
from tests.fakes.openai_server import Failure, FakeOpenAI, Reply
from tests.fakes.server import ServerThread
from tests.support import api_client, make_user

ANSWER = "Use exponential backoff with jitter, cap the delay, and stop after a few tries. " * 60  # ~4,800 chars


@pytest.fixture
def upstream() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()

    def answer(body: dict[str, Any]) -> Reply | Failure:
        system = str(next((m.get("content") for m in body["messages"] if m["role"] == "system"), ""))
        if "summaries for a conversation's memory" in system:
            return Failure(500, "the summariser's server is down")
        return Reply(text=ANSWER)

    fake.route = answer  # type: ignore[assignment]
    with ServerThread(fake.app) as server:
        yield fake, server.url + "/v1"


async def test_a_summary_that_fails_over_http_leaves_the_item_bounded_and_the_answer_200(
    upstream: tuple[FakeOpenAI, str], sqlite_url: str, build: Any
) -> None:
    fake, url = upstream
    services, settings = build(
        sqlite_url,
        chat_provider="openai",
        openai_base_url=url,
        openai_api_key="sk-test",
        model_max_retries=0,
        summary_fallback_chars=500,
        summary_wait_s=10,
    )
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        reply = await http.post("/api/chat", json={"message": "how should I retry?"})
        assert reply.status_code == 200 and reply.json()["response"].strip() == ANSWER.strip()
        conversation = reply.json()["conversation_id"]
        await services.summaries.drain(timeout_s=10)
        summary = (await http.get(f"/api/conversations/{conversation}/items/q1-r-sum")).json()
    assert summary["status"] == "failed"
    assert summary["content"].startswith(ANSWER[:400].rstrip()[:300])
    assert len(summary["content"]) < 700 and "retrieve_full_context('q1-r')" in summary["content"]
    assert any("summaries for a conversation's memory" in r["body"]["messages"][0]["content"] for r in fake.requests)
