"""GET /metrics: off unless METRICS_TOKEN is set, then only with that bearer token; what the app counts
— requests by route template, model calls and tokens, tool calls, credits, the gateway's calls."""

from __future__ import annotations

from typing import Any

from tests.ops_support import samples, value
from tests.support import api_client, make_user

from almanac.llm.fake import ScriptedModel, call, calls, reply

TOKEN = "scrape-token-0123456789"
SCRAPE = {"Authorization": f"Bearer {TOKEN}"}


async def test_metrics_are_off_without_a_token_and_need_the_token_with_one(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url)
    async with api_client(services, settings) as http:
        off = await http.get("/metrics", headers=SCRAPE)
        assert off.status_code == 404 and off.json()["error"]["code"] == "not_found"
    services, settings = build(sqlite_url, metrics_token=TOKEN)
    user = await make_user(services)
    async with api_client(services, settings) as http:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": f"Basic {TOKEN}"}):
            refused = await http.get("/metrics", headers=headers)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        # an API key is not a metrics token
        assert (await http.get("/metrics", headers={"Authorization": f"Bearer {user.api_key}"})).status_code == 401
        scraped = await http.get("/metrics", headers=SCRAPE)
        assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain; version=")
        assert "process_resident_memory_bytes" in scraped.text
    assert "/metrics" not in (await api_client(services, settings).get("/openapi.json")).json()["paths"]


async def test_requests_are_counted_by_route_template_never_by_raw_path(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url, metrics_token=TOKEN)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        for conversation in ("0b3ad7a4-7f9c-4c1e-9a55-3d0c1f4e2a11", "5d1e7c2b-1a2b-4c3d-8e9f-0a1b2c3d4e5f"):
            assert (await http.get(f"/api/conversations/{conversation}")).status_code == 404
        assert (await http.get("/api/no/such/path")).status_code == 404
        assert (await http.get("/health")).status_code == 200
        text = (await http.get("/metrics", headers=SCRAPE)).text
    template = "/api/conversations/{conversation_id}"
    assert value(text, "almanac_http_requests_total", method="GET", route=template, status="404") == 2
    not_found = {
        k: v for k, v in samples(text).items() if k[0] == "almanac_http_requests_total" and ("status", "404") in k[1]
    }
    assert sum(not_found.values()) == 3  # the unknown path is counted under the web UI's catch-all template
    assert value(text, "almanac_http_requests_total", method="GET", route="/health", status="200") == 1
    assert value(text, "almanac_http_request_duration_seconds_count", method="GET", route=template) == 2
    assert "0b3ad7a4" not in text and "/api/no/such/path" not in text


async def test_a_chat_counts_model_calls_tokens_tool_calls_and_credits(sqlite_url: str, build: Any) -> None:
    model = ScriptedModel(
        [calls(call("retrieve_full_context", {"id": "q9"})), calls(call("nonexistent_tool", {})), reply("done")]
    )
    services, settings = build(sqlite_url, model=model, metrics_token=TOKEN)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        answer = (await http.post("/api/chat", json={"message": "what did you say in q9?"})).json()
        text = (await http.get("/metrics", headers=SCRAPE)).text
    labels = {"source": "chat", "provider": "fake", "model": "scripted"}
    assert value(text, "almanac_model_calls_total", **labels, outcome="ok") == 3
    assert value(text, "almanac_model_tokens_total", **labels, direction="input") == 30
    assert value(text, "almanac_model_tokens_total", **labels, direction="output") == 15
    assert value(text, "almanac_tool_calls_total", tool="retrieve_full_context", status="error") == 1
    assert value(text, "almanac_tool_errors_total", tool="retrieve_full_context") == 1
    assert value(text, "almanac_tool_calls_total", tool="nonexistent_tool", status="unknown_tool") == 1
    debited = value(text, "almanac_credits_debited_total", source="chat")
    refunded = value(text, "almanac_credits_refunded_total", source="chat")
    assert debited - refunded == answer["credits_used"] and debited >= 5
    route = {"method": "POST", "route": "/api/chat"}
    assert value(text, "almanac_http_requests_total", **route, status="200") == 1


async def test_gateway_calls_and_tokens_are_counted_by_upstream_model(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url, metrics_token=TOKEN)
    user = await make_user(services)
    body = {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hello"}]}
    async with api_client(services, settings) as http:
        for stream in (False, True):
            sent = await http.post("/v1/messages", json={**body, "stream": stream}, headers={"x-api-key": user.api_key})
            assert sent.status_code == 200
        text = (await http.get("/metrics", headers=SCRAPE)).text
    labels = {"source": "gateway", "provider": "offline", "model": "almanac-offline"}
    assert value(text, "almanac_model_calls_total", **labels, outcome="ok") == 2
    assert value(text, "almanac_model_tokens_total", **labels, direction="output") > 0
    assert value(text, "almanac_http_requests_total", method="POST", route="/v1/messages", status="200") == 2
