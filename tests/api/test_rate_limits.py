"""Per-user limits through the API: requests per minute by plan on the chat routes and /v1/messages
(one budget), open streams per user, 429 with Retry-After in our error shape and in Anthropic's,
nothing started or charged when refused, and the same limits shared by two apps on one Redis."""

from __future__ import annotations

import asyncio
import re
from contextlib import AsyncExitStack
from typing import Any

import httpx
from tests.api.conftest import live_server
from tests.ops_support import redis_url, value
from tests.support import api_client, make_user

from almanac.main import create_app

ASK = {"message": "Give me a long tour"}  # an answer the offline model gives (and charges for) without tools
SHORT = {"message": "How do I cancel an asyncio task?"}  # a short answer (declined here: no documentation index)
GATEWAY = {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hello"}]}


async def ledger_rows(services: Any, user_id: str) -> int:
    return len((await services.credits.snapshot(user_id=user_id, recent=1000)).recent)


async def test_past_the_plans_requests_per_minute_a_chat_gets_429_and_costs_nothing(
    database_url: str, build: Any
) -> None:
    services, settings = build(database_url, rate_limit_free_per_min=3)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        for _ in range(3):
            assert (await http.post("/api/chat", json=ASK)).status_code == 200
        rows = await ledger_rows(services, user.user.id)
        refused = await http.post("/api/chat", json=ASK)
        stream_refused = await http.post("/api/chat/stream", json=ASK)
        assert refused.status_code == stream_refused.status_code == 429
        error = refused.json()["error"]
        assert (error["code"], error["limit"], error["allowed"]) == ("rate_limited", "requests", 3)
        assert 1 <= error["retry_after"] <= 60 and refused.headers["retry-after"] == str(error["retry_after"])
        assert error["request_id"] == refused.headers["x-request-id"]
        assert (await http.get("/api/credits")).json()["balance"] == 50 - 3 * 5
        assert await ledger_rows(services, user.user.id) == rows  # nothing debited, nothing refunded
        assert (await http.get("/api/conversations")).json()["count"] == 3  # no conversation was started
    other = await make_user(services)
    async with api_client(services, settings, other.api_key) as http:
        assert (await http.post("/api/chat", json=ASK)).status_code == 200  # counted per user


async def test_each_plan_has_its_own_limit(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url, rate_limit_free_per_min=1, rate_limit_pro_per_min=2)
    free, pro = await make_user(services, plan="free"), await make_user(services, plan="pro")
    async with api_client(services, settings, free.api_key) as http:
        assert [(await http.post("/api/chat", json=ASK)).status_code for _ in range(2)] == [200, 429]
    async with api_client(services, settings, pro.api_key) as http:
        assert [(await http.post("/api/chat", json=ASK)).status_code for _ in range(3)] == [200, 200, 429]


async def test_chat_and_the_gateway_share_one_budget_and_the_gateway_answers_in_anthropics_shape(
    sqlite_url: str, build: Any
) -> None:
    services, settings = build(sqlite_url, rate_limit_free_per_min=3)
    user = await make_user(services)
    headers = {"x-api-key": user.api_key, "anthropic-version": "2023-06-01"}
    async with api_client(services, settings, user.api_key) as http:
        for _ in range(2):
            assert (await http.post("/v1/messages", json=GATEWAY, headers=headers)).status_code == 200
        assert (await http.post("/api/chat", json=ASK)).status_code == 200
        refused = await http.post("/v1/messages", json=GATEWAY, headers=headers)
        assert refused.status_code == 429
        body = refused.json()
        assert body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
        assert "3 requests per minute" in body["error"]["message"]
        assert int(refused.headers["retry-after"]) >= 1 and "x-should-retry" not in refused.headers
        assert (await http.post("/v1/messages", json={**GATEWAY, "stream": True}, headers=headers)).status_code == 429
        assert (await http.post("/api/chat", json=ASK)).status_code == 429
        assert (await http.get("/v1/models", headers=headers)).status_code == 200  # only work is limited
        assert (await http.get("/api/credits")).status_code == 200


async def test_open_streams_are_capped_per_user_and_a_slot_frees_when_a_stream_ends(
    sqlite_url: str, build: Any
) -> None:
    services, settings = build(sqlite_url, max_concurrent_streams=2, offline_token_delay_ms=150, metrics_token="t" * 20)
    user, other = await make_user(services), await make_user(services)
    bearer = {"Authorization": f"Bearer {user.api_key}"}
    gateway_headers = {"x-api-key": user.api_key, "anthropic-version": "2023-06-01"}
    with live_server(create_app(settings, services)) as (host, port):
        base = f"http://{host}:{port}"
        async with httpx.AsyncClient(base_url=base, timeout=60, headers={"Host": "localhost"}) as http:
            async with AsyncExitStack() as streams:
                chat = await streams.enter_async_context(
                    http.stream("POST", "/api/chat/stream", json=SHORT, headers=bearer)
                )
                gateway = await streams.enter_async_context(
                    http.stream("POST", "/v1/messages", json={**GATEWAY, "stream": True}, headers=gateway_headers)
                )
                assert chat.status_code == gateway.status_code == 200
                reading = [chat.aiter_bytes(), gateway.aiter_bytes()]  # (kept: a dropped iterator closes its stream)
                for body in reading:
                    await anext(body)  # both are streaming
                scraped = (await http.get("/metrics", headers={"Authorization": "Bearer " + "t" * 20})).text
                assert value(scraped, "almanac_active_streams", kind="chat") == 1
                assert value(scraped, "almanac_active_streams", kind="gateway") == 1
                third = await http.post("/api/chat", json=SHORT, headers={**bearer, "Accept": "text/event-stream"})
                assert third.status_code == 429 and third.json()["error"]["limit"] == "streams"
                assert third.headers["retry-after"] == "5"
                refused = await http.post("/v1/messages", json={**GATEWAY, "stream": True}, headers=gateway_headers)
                assert refused.status_code == 429 and refused.json()["error"]["type"] == "rate_limit_error"
                assert (await http.post("/api/chat", json=SHORT, headers=bearer)).status_code == 200  # not a stream
                others = {"Authorization": f"Bearer {other.api_key}"}
                assert (await http.post("/api/chat/stream", json=SHORT, headers=others)).status_code == 200
                scraped = (await http.get("/metrics", headers={"Authorization": "Bearer " + "t" * 20})).text
                assert value(scraped, "almanac_rate_limited_total", limit="streams") == 2
                await chat.aclose()  # the client leaves: its slot is given back
                status = 429
                for _ in range(100):  # bounded wait for the server to notice the disconnect
                    again = await http.post("/api/chat/stream", json=SHORT, headers=bearer)
                    status = again.status_code
                    if status == 200:
                        break
                    await asyncio.sleep(0.1)
                assert status == 200
                await gateway.aclose()  # the gateway stream's client leaves too: its slot is given back
                open_gateway = 1.0
                for _ in range(100):  # bounded wait, as above
                    scraped = (await http.get("/metrics", headers={"Authorization": "Bearer " + "t" * 20})).text
                    open_gateway = value(scraped, "almanac_active_streams", kind="gateway")
                    if open_gateway == 0:
                        break
                    await asyncio.sleep(0.1)
                assert open_gateway == 0


async def test_two_apps_on_one_redis_share_a_users_limits(sqlite_url: str, build: Any) -> None:
    url = redis_url()
    first, settings = build(sqlite_url, redis_url=url, rate_limit_free_per_min=3, max_concurrent_streams=1)
    second, _ = build(sqlite_url, redis_url=url, rate_limit_free_per_min=3, max_concurrent_streams=1)
    user = await make_user(first)
    try:
        async with api_client(first, settings, user.api_key) as a, api_client(second, settings, user.api_key) as b:
            statuses = [(await client.post("/api/chat", json=ASK)).status_code for client in (a, b, a, b, a)]
            assert statuses == [200, 200, 200, 429, 429]
        assert first.ops is not None and second.ops is not None
        held = await first.ops.limiter.open_stream(user_id=user.user.id, kind="gateway")
        async with api_client(second, settings, user.api_key) as b:
            refused = await b.post(
                "/v1/messages", json={**GATEWAY, "stream": True}, headers={"x-api-key": user.api_key}
            )
            assert refused.status_code == 429
        held.release()
        await first.ops.limiter.settled()
        assert await second.ops.limiter.store.acquire(f"streams:{user.user.id}", "probe", cap=1, ttl_s=5)
    finally:
        for services in (first, second):
            assert services.ops is not None
            await services.ops.close()


async def test_every_route_that_starts_work_is_limited(sqlite_url: str, build: Any) -> None:
    """Black-box, from the schema: once a user's budget is spent, every state-changing operation of the
    chat and discussion routers answers 429 (and declares it) — routes added later included."""
    services, settings = build(sqlite_url, rate_limit_free_per_min=1)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        paths = (await http.get("/openapi.json")).json()["paths"]
        assert (await http.post("/api/chat", json=ASK)).status_code == 200
        checked = []
        for path, operations in paths.items():
            if not path.startswith(("/api/chat", "/api/discussions")):
                continue
            for method in set(operations) & {"post", "put", "patch", "delete"}:
                assert "429" in operations[method]["responses"], (method, path)
                url = re.sub(r"\{[^}]+\}", "0b3ad7a4-7f9c-4c1e-9a55-3d0c1f4e2a11", path)
                answer = await http.request(method.upper(), url, json={})
                assert answer.status_code == 429, (method, path, answer.status_code)
                checked.append(path)
    assert {"/api/chat", "/api/chat/stream"} <= set(checked)
