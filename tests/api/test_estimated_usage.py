"""Usage that the model server does not report is counted, marked estimated and shown as such — never
recorded as zero (SQLite and PostgreSQL). The upstreams are local fakes speaking the real wire:
an OpenAI-compatible server that omits usage exactly as llama-cpp-python does (it ignores
`stream_options.include_usage`), one that omits `usage` from complete responses too, and the
Anthropic API (which always reports)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.api.gateway_support import gateway
from tests.fakes.anthropic_server import FakeAnthropic, Turn
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.server import ServerThread
from tests.ops_support import value
from tests.support import api_client, make_user

TOKEN = "scrape-token-0123456789"
ANSWER = "Cancel the task, then await it and handle CancelledError where cleanup is needed."


@pytest.fixture
def upstream() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(default=Reply(text=ANSWER, prompt_tokens=40, completion_tokens=16))
    with ServerThread(fake.app) as server:
        yield fake, server.url + "/v1"


def _chat_models(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in report["models"] if m["source"] == "chat"]


# --- chat ----------------------------------------------------------------------------------------


async def test_a_chat_query_on_a_server_without_stream_usage_records_estimated_tokens_and_its_calls(
    database_url: str, build: Any, upstream: tuple[FakeOpenAI, str]
) -> None:
    fake, url = upstream
    fake.usage = "llama.cpp"
    services, settings = build(
        database_url, chat_provider="openai", openai_base_url=url, openai_model="smollm2", mcp_enabled=False
    )
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        answered = await http.post("/api/chat", json={"message": "How do I cancel an asyncio task?"})
        assert answered.status_code == 200, answered.text
        assert ANSWER.split()[0] in answered.json()["response"]
        report = (await http.get("/api/usage")).json()
    [row] = _chat_models(report)
    assert (row["model"], row["provider"], row["role"]) == ("smollm2", "openai", "chat")
    assert row["calls"] == 1 and row["estimated_calls"] == 1 and row["estimated"] is True
    assert row["input_tokens"] > 10 and row["output_tokens"] >= len(ANSWER) // 4


async def test_a_chat_query_streams_usage_events_marked_estimated(
    sqlite_url: str, build: Any, upstream: tuple[FakeOpenAI, str]
) -> None:
    fake, url = upstream
    fake.usage = "llama.cpp"
    services, settings = build(
        sqlite_url, chat_provider="openai", openai_base_url=url, openai_model="smollm2", mcp_enabled=False
    )
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        response = await http.post(
            "/api/chat", json={"message": "How do I cancel an asyncio task?"}, headers={"Accept": "text/event-stream"}
        )
    usage = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith('data: {"type": "usage"')]
    assert len(usage) == 1  # one per model call
    assert usage[0]["estimated"] is True and usage[0]["output_tokens"] > 0


async def test_a_server_that_reports_usage_is_recorded_as_reported(
    database_url: str, build: Any, upstream: tuple[FakeOpenAI, str]
) -> None:
    _, url = upstream
    services, settings = build(
        database_url, chat_provider="openai", openai_base_url=url, openai_model="gpt-test", mcp_enabled=False
    )
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        assert (await http.post("/api/chat", json={"message": "How do I cancel an asyncio task?"})).status_code == 200
        report = (await http.get("/api/usage")).json()
    [row] = _chat_models(report)
    assert (row["calls"], row["input_tokens"], row["output_tokens"]) == (1, 40, 16)
    assert row["estimated_calls"] == 0 and row["estimated"] is False


async def test_the_offline_model_is_always_estimated(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        assert (await http.post("/api/chat", json={"message": "hello there"})).status_code == 200
        report = (await http.get("/api/usage")).json()
    [row] = _chat_models(report)
    assert row["provider"] == "offline" and row["calls"] == 1 and row["estimated_calls"] == 1
    assert row["input_tokens"] > 0 and row["output_tokens"] > 0


async def test_a_discussion_records_its_participants_estimated_usage(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    participants = [{"model": "offline", "role": "asks"}, {"model": "offline", "role": "answers"}]
    async with api_client(services, settings, user.api_key) as http:
        response = await http.post(
            "/api/discussions",
            json={"goal": "Agree on how to cancel asyncio tasks", "turns": 2, "participants": participants},
            headers={"Accept": "text/event-stream"},
        )
        assert response.status_code == 200
        usage = [json.loads(line[6:]) for line in response.text.splitlines() if '"type": "usage"' in line]
        report = (await http.get("/api/usage")).json()
    assert len(usage) == 2 and all(event["estimated"] for event in usage)
    [row] = [m for m in report["models"] if m["role"] == "participant"]
    assert row["calls"] == 2 and row["estimated_calls"] == 2 and row["output_tokens"] > 0


# --- the gateway ---------------------------------------------------------------------------------


async def test_gateway_stream_from_a_server_without_stream_usage_is_estimated_on_the_wire_and_recorded(
    database_url: str, upstream: tuple[FakeOpenAI, str]
) -> None:
    fake, url = upstream
    fake.usage = "llama.cpp"
    async with gateway(database_url, openai_base_url=url) as gw:
        async with gw.client.messages.stream(
            model="claude-haiku-4-5", max_tokens=200, messages=[{"role": "user", "content": "How do I cancel?"}]
        ) as events:
            final = await events.get_final_message()
        [row] = await gw.usage()
    assert final.usage.output_tokens > 0 and final.usage.input_tokens > 0  # the client sees counts too
    assert row.usage_estimated and row.stream
    assert (row.input_tokens, row.output_tokens) == (final.usage.input_tokens, final.usage.output_tokens)


async def test_gateway_non_stream_without_usage_is_estimated(
    database_url: str, upstream: tuple[FakeOpenAI, str]
) -> None:
    fake, url = upstream
    fake.usage = "none"
    async with gateway(database_url, openai_base_url=url) as gw:
        message = await gw.client.messages.create(
            model="claude-haiku-4-5", max_tokens=200, messages=[{"role": "user", "content": "How do I cancel?"}]
        )
        [row] = await gw.usage()
    assert message.usage.output_tokens > 0 and row.usage_estimated
    assert (row.input_tokens, row.output_tokens) == (message.usage.input_tokens, message.usage.output_tokens)


async def test_gateway_reported_usage_is_not_estimated(database_url: str, upstream: tuple[FakeOpenAI, str]) -> None:
    fake, url = upstream
    fake.usage = "llama.cpp"  # llama-cpp-python does report usage in complete responses
    async with gateway(database_url, openai_base_url=url) as gw:
        message = await gw.client.messages.create(
            model="claude-haiku-4-5", max_tokens=200, messages=[{"role": "user", "content": "How do I cancel?"}]
        )
        [row] = await gw.usage()
    assert (message.usage.input_tokens, message.usage.output_tokens) == (40, 16)
    assert not row.usage_estimated and (row.input_tokens, row.output_tokens) == (40, 16)


@pytest.mark.parametrize("stream", [False, True])
async def test_gateway_anthropic_upstream_reports_and_is_never_estimated(sqlite_url: str, stream: bool) -> None:
    fake = FakeAnthropic()
    fake.enqueue(Turn(text=ANSWER, input_tokens=33, output_tokens=14))
    with ServerThread(fake.app) as server:
        settings = {"anthropic_api_key": "k", "anthropic_base_url": server.url, "gateway_upstream": "anthropic"}
        async with gateway(sqlite_url, **settings) as gw:
            kwargs: dict[str, Any] = {
                "model": "claude-haiku-4-5",
                "max_tokens": 100,
                "messages": [{"role": "user", "content": "hi"}],
            }
            if stream:
                async with gw.client.messages.stream(**kwargs) as events:
                    await events.get_final_message()
            else:
                await gw.client.messages.create(**kwargs)
            [row] = await gw.usage()
    assert (row.input_tokens, row.output_tokens, row.usage_estimated) == (33, 14, False)


@pytest.mark.parametrize("stream", [False, True])
async def test_gateway_offline_upstream_is_estimated(sqlite_url: str, stream: bool) -> None:
    async with gateway(sqlite_url) as gw:
        kwargs: dict[str, Any] = {
            "model": "claude-haiku-4-5",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "hello"}],
        }
        if stream:
            async with gw.client.messages.stream(**kwargs) as events:
                await events.get_final_message()
        else:
            await gw.client.messages.create(**kwargs)
        [row] = await gw.usage()
    assert row.upstream == "offline" and row.usage_estimated and row.output_tokens > 0


@pytest.mark.parametrize("stream", [False, True])
async def test_gateway_boost_estimates_executor_and_planner_usage(database_url: str, stream: bool) -> None:
    executor, planner = FakeOpenAI(default=Reply(text=ANSWER)), FakeOpenAI()
    executor.usage = planner.usage = "llama.cpp"
    planner.enqueue(Reply(text="GUIDANCE:\n1. Answer the question directly."))
    with ServerThread(executor.app) as e, ServerThread(planner.app) as p:
        settings = {
            "openai_base_url": e.url + "/v1",
            "boost_base_url": p.url + "/v1",
            "boost_api_key": "sk-boost",
            "boost_model": "planner-1",
            "enable_boost_support": "MIDDLE_MODEL",
            "middle_model": "executor-1",
        }
        async with gateway(database_url, **settings) as gw:
            kwargs: dict[str, Any] = {
                "model": "claude-sonnet-4-6",
                "max_tokens": 300,
                "messages": [{"role": "user", "content": "analyze market trends from data files"}],
            }
            if stream:
                async with gw.client.messages.stream(**kwargs) as events:
                    await events.get_final_message()
            else:
                await gw.client.messages.create(**kwargs)
            [row] = await gw.usage()
    assert row.planner_model == "planner-1" and row.boost_outcome
    assert row.usage_estimated and row.input_tokens > 0 and row.output_tokens > 0
    assert row.planner_usage_estimated and row.planner_input_tokens > 0 and row.planner_output_tokens > 0


# --- /metrics ------------------------------------------------------------------------------------


async def test_metrics_say_which_tokens_were_estimated(
    sqlite_url: str, build: Any, upstream: tuple[FakeOpenAI, str]
) -> None:
    fake, url = upstream
    fake.usage = "llama.cpp"
    services, settings = build(
        sqlite_url,
        chat_provider="openai",
        openai_base_url=url,
        openai_model="smollm2",
        mcp_enabled=False,
        metrics_token=TOKEN,
    )
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        assert (await http.post("/api/chat", json={"message": "How do I cancel an asyncio task?"})).status_code == 200
        text = (await http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})).text
    labels = {"source": "chat", "provider": "openai", "model": "smollm2"}
    for direction in ("input", "output"):
        counted = value(text, "almanac_model_tokens_total", **labels, direction=direction)
        estimated = value(text, "almanac_model_tokens_estimated_total", **labels, direction=direction)
        assert counted >= estimated > 0


async def test_gateway_anthropic_compatible_upstream_reporting_zero_usage_is_estimated(sqlite_url: str) -> None:
    fake = FakeAnthropic()  # an Anthropic-compatible server that sends usage but counts nothing
    fake.enqueue(Turn(text=ANSWER, input_tokens=0, output_tokens=0))
    with ServerThread(fake.app) as server:
        settings = {"anthropic_api_key": "k", "anthropic_base_url": server.url, "gateway_upstream": "anthropic"}
        async with gateway(sqlite_url, **settings) as gw:
            async with gw.client.messages.stream(
                model="claude-haiku-4-5", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
            ) as events:
                await events.get_final_message()
            [row] = await gw.usage()
    assert row.usage_estimated and row.input_tokens > 0 and row.output_tokens > 0


async def test_a_boosted_chat_query_records_executor_and_planner_as_estimated(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        answered = await http.post("/api/chat", json={"message": "hello there", "strategy": "boost"})
        assert answered.status_code == 200, answered.text
        report = (await http.get("/api/usage")).json()
    roles = {m["role"]: m for m in _chat_models(report)}
    assert set(roles) == {"chat", "planner"}
    for row in roles.values():
        assert row["calls"] >= 1 and row["estimated_calls"] == row["calls"] and row["estimated"] is True
