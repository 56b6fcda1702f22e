"""A long conversation with a small-window model, over the HTTP API, against a fake OpenAI-compatible
server that counts each prompt with a real tokenizer and refuses any over its window (as OpenAI
does). Every query is answered, no request is refused, and every item stays retrievable by ID."""

from collections.abc import Iterator
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.server import ServerThread
from tests.support import api_client, make_user

WINDOW = 8_000
MESSAGE = (
    "I am migrating a service from synchronous requests to asyncio with httpx. We keep a pool of "
    "connections per upstream, retry on timeouts with exponential backoff and jitter, and record "
    "metrics for every call. "
) * 30  # ~6,000 characters


@pytest.fixture
def upstream() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    fake.context_window = WINDOW

    def answer(body: dict[str, Any]) -> Reply:
        system = next((m.get("content") for m in body["messages"] if m["role"] == "system"), "") or ""
        if "summaries for a conversation's memory" in str(system):
            return Reply(text="Discusses moving a service to asyncio and httpx with retries and metrics.")
        return Reply(text="Here is how to do it. " * 60)  # a real-sized answer (~1,300 characters)

    fake.route = answer
    with ServerThread(fake.app) as server:
        yield fake, server.url + "/v1"


async def test_twenty_five_long_queries_all_fit_an_8k_window(
    upstream: tuple[FakeOpenAI, str], sqlite_url: str, build: Any
) -> None:
    fake, url = upstream
    services, settings = build(
        sqlite_url,
        chat_provider="openai",
        openai_base_url=url,
        openai_api_key="sk-test",
        openai_model="small-local-model",
        model_context_tokens=WINDOW,
        max_output_tokens=1_024,
        mcp_enabled=False,
    )
    user = await make_user(services)
    await services.credits.grant_pack(user_id=user.user.id, amount=500, reason="test")
    conversation = None
    async with api_client(services, settings, user.api_key) as http:
        for number in range(1, 26):
            body: dict[str, Any] = {"message": f"Question {number}. {MESSAGE}"}
            if conversation:
                body["conversation_id"] = conversation
            response = await http.post("/api/chat", json=body)
            assert response.status_code == 200, (number, response.text)
            conversation = response.json()["conversation_id"]
            assert response.json()["query_id"] == f"q{number}"
        assert fake.refused_too_long == 0
        chat_prompts = [
            tokens + int(request["body"].get("max_completion_tokens") or request["body"].get("max_tokens") or 0)
            for request, tokens in zip(fake.requests, fake.prompt_tokens, strict=True)
        ]
        assert max(chat_prompts) <= WINDOW
        for number in (1, 12, 25):  # nothing was dropped: every item is still there by ID
            for item in (f"q{number}", f"q{number}-r", f"q{number}-r-sum"):
                fetched = await http.get(f"/api/conversations/{conversation}/items/{item}")
                assert fetched.status_code == 200, item
        first = await http.get(f"/api/conversations/{conversation}/items/q1")
        assert first.json()["content"] == f"Question 1. {MESSAGE}"
    chat_requests = [r["body"] for r in fake.requests if "Question 25." in str(r["body"]["messages"][-1])]
    latest = chat_requests[0]["messages"]
    memory_note = next(m["content"] for m in latest if m["role"] == "user")
    assert "[Memory: earlier queries q1–" in memory_note
