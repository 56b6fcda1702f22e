"""POST /api/chat and /api/chat/stream through the application, on the offline model."""

import json
from typing import Any

import httpx
import pytest
from tests.support import api_client, make_user

from almanac.billing.ledger import ChargeContext
from almanac.llm.base import ModelUnavailable
from almanac.llm.fake import ScriptedModel, reply


@pytest.fixture
async def client(database_url: str, build: Any) -> Any:
    services, settings = build(database_url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        yield http


def sse_events(body: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for frame in body.replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in frame.split("\n") if line and not line.startswith(":")]
        name = next((line[7:] for line in lines if line.startswith("event: ")), None)
        data = "\n".join(line[6:] for line in lines if line.startswith("data: "))
        if name:
            events.append((name, json.loads(data)))
    return events


async def test_a_chat_returns_the_answer_ids_and_credits(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/chat", json={"message": "Tell me something about the history of Rome."})
    assert response.status_code == 200
    body = response.json()
    assert set(body) >= {
        "response",
        "summary",
        "conversation_id",
        "message_id",
        "summary_id",
        "tools_used",
        "credits_used",
        "credits_remaining",
    }
    assert "offline model" in body["response"]
    assert (body["message_id"], body["summary_id"], body["query_id"]) == ("q1-r", "q1-r-sum", "q1")
    # The offline model says it cannot answer this: an answer that carries nothing is free.
    assert (body["tools_used"], body["credits_used"], body["credits_remaining"]) == ([], 0, 50)
    assert body["stop_reason"] == "declined"
    tour = (await client.post("/api/chat", json={"message": "Give me a detailed tour of Almanac"})).json()
    assert (tour["stop_reason"], tour["credits_used"], tour["credits_remaining"]) == ("end_turn", 5, 45)


async def test_asking_for_the_full_text_from_earlier_retrieves_it(client: httpx.AsyncClient) -> None:
    first = (await client.post("/api/chat", json={"message": "Explain retries " + "in depth " * 60})).json()
    second = await client.post(
        "/api/chat",
        json={"message": "Show me the full answer from earlier", "conversation_id": first["conversation_id"]},
    )
    body = second.json()
    assert body["tools_used"] == ["retrieve_full_context"]
    assert body["tool_results"][0]["item_id"] == "q2-t1" and body["tool_results"][0]["credits"] == 2
    assert first["response"] in body["response"] and "[q2-t1]" in body["response"]
    assert (body["credits_used"], body["credits_remaining"]) == (7, 38)


async def test_streaming_sends_the_event_sequence(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/chat/stream", json={"message": "hello"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    names = [name for name, _ in events]
    end = names.index("message_end")
    assert names[0] == "message_start" and set(names[end + 1 :]) <= {"summary"}  # summaries may finish later
    assert set(names[1:end]) == {"text_delta", "usage"}
    assert all(data["type"] == name for name, data in events)
    assert "".join(d["text"] for n, d in events if n == "text_delta") == events[end][1]["response"]


async def test_accept_event_stream_on_api_chat_streams_too(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/chat", json={"message": "hi"}, headers={"Accept": "text/event-stream"})
    assert response.headers["content-type"].startswith("text/event-stream")
    assert [name for name, _ in sse_events(response.text) if name != "summary"][-1] == "message_end"


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "message"), ({"message": 42}, "message"), ({"message": "hi", "conversation_id": 7}, "conversation_id")],
)
async def test_malformed_bodies_name_the_field(client: httpx.AsyncClient, body: dict[str, Any], field: str) -> None:
    response = await client.post("/api/chat", json=body)
    assert response.status_code == 422
    assert field in [f["field"] for f in response.json()["error"]["fields"]]


async def test_not_json_is_a_422(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/chat", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


async def test_an_empty_message_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/chat", json={"message": "   "})
    assert response.status_code == 422 and response.json()["error"]["field"] == "message"


async def test_an_oversized_message_is_a_413_and_costs_nothing(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/chat", json={"message": "x" * 32_001})
    assert response.status_code == 413
    assert response.json()["error"] == {
        "code": "message_too_large",
        "message": response.json()["error"]["message"],
        "field": "message",
        "limit": 32_000,
        "size": 32_001,
        "request_id": response.headers["x-request-id"],
    }
    huge = await client.post("/api/chat", json={"message": "x" * 1_000_000})
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "body_too_large"
    assert (await client.get("/api/credits")).json()["balance"] == 50


async def test_an_unknown_conversation_is_a_404(client: httpx.AsyncClient) -> None:
    unknown = "0b7c6f1e-3f4a-4c2e-9d1a-2b3c4d5e6f70"
    response = await client.post("/api/chat", json={"message": "hi", "conversation_id": unknown})
    assert response.status_code == 404 and response.json()["error"]["code"] == "conversation_not_found"
    malformed = await client.post("/api/chat", json={"message": "hi", "conversation_id": "nope"})
    assert malformed.status_code == 422 and malformed.json()["error"]["field"] == "conversation_id"


async def test_running_out_of_credits_is_a_402_with_what_to_do(client: httpx.AsyncClient) -> None:
    for _ in range(10):
        assert (await client.post("/api/chat", json={"message": "a detailed tour"})).status_code == 200
    response = await client.post("/api/chat", json={"message": "one more"})
    assert response.status_code == 402
    body = response.json()
    assert (body["balance"], body["needed"]) == (0, 5)
    assert body["error"]["code"] == "insufficient_credits" and body["error"]["payments_enabled"] is False
    # This server takes no payments: no offer to buy, but who grants credits, and when they renew.
    advice = body["how_to_get_more"]
    assert "00:00 UTC" in advice and "does not take payments" in advice and "operator" in advice
    assert "Pro" not in advice and "$" not in advice


async def test_with_payments_the_402_offers_to_buy(database_url: str, build: Any) -> None:
    stripe = {"stripe_secret_key": "sk_test_x", "stripe_webhook_secret": "whsec_x"}
    services, settings = build(database_url, **stripe, stripe_price_pro="price_p", stripe_price_pack="price_k")
    user = await make_user(services)
    await services.credits.debit(user_id=user.user.id, amount=48, context=ChargeContext("test"))
    async with api_client(services, settings, user.api_key) as http:
        body = (await http.post("/api/chat", json={"message": "one more"})).json()
    assert body["error"]["payments_enabled"] is True and "Upgrade to Pro" in body["how_to_get_more"]


async def test_a_model_failure_before_any_output_is_a_502_and_refunded(database_url: str, build: Any) -> None:
    services, settings = build(database_url, model=ScriptedModel([ModelUnavailable("upstream down"), reply("ok")]))
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        failed = await http.post("/api/chat", json={"message": "hi"})
        assert failed.status_code == 502
        assert failed.json()["error"]["code"] == "model_unavailable" and failed.json()["error"]["refunded"] is True
        assert (await http.get("/api/credits")).json()["balance"] == 50
        assert (await http.get("/api/conversations")).json()["count"] == 0
        streamed = await http.post("/api/chat/stream", json={"message": "hi"})
        assert [n for n, _ in sse_events(streamed.text)][-1] == "message_end"
