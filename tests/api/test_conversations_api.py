"""Conversations, credits, auth and probes through the application."""

from typing import Any

import httpx
import pytest
from tests.support import api_client, make_user

from almanac.main import Services


@pytest.fixture
async def setup(database_url: str, build: Any) -> Any:
    services, settings = build(database_url)
    alice, bob = await make_user(services, "alice@example.com"), await make_user(services, "bob@example.com", "pro")
    async with api_client(services, settings, alice.api_key) as a, api_client(services, settings, bob.api_key) as b:
        yield services, a, b


async def test_every_api_route_needs_a_valid_key(setup: tuple[Services, httpx.AsyncClient, Any]) -> None:
    _services, alice, _ = setup
    anonymous = httpx.AsyncClient(transport=alice._transport, base_url="http://localhost")
    for method, path in [
        ("GET", "/api/conversations"),
        ("GET", "/api/credits"),
        ("POST", "/api/chat"),
        ("GET", "/api/me"),
        ("DELETE", "/api/conversations/x"),
    ]:
        response = await anonymous.request(method, path, json={"message": "hi"})
        assert response.status_code == 401, path
        assert response.json()["error"]["code"] == "unauthorized"
        assert response.headers["www-authenticate"] == "Bearer"
    bad = await anonymous.get("/api/me", headers={"Authorization": "Bearer alm_not-a-real-key-000000000000"})
    assert bad.status_code == 401
    basic = await anonymous.get("/api/me", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert basic.status_code == 401


async def test_me(setup: tuple[Services, httpx.AsyncClient, httpx.AsyncClient]) -> None:
    _, alice, bob = setup
    assert (await alice.get("/api/me")).json()["email"] == "alice@example.com"
    assert (await bob.get("/api/me")).json()["plan"] == "pro"


async def test_a_conversation_shows_both_tracks(setup: tuple[Services, httpx.AsyncClient, Any]) -> None:
    _, alice, _ = setup
    first = (
        await alice.post("/api/chat", json={"message": "Tell me about the history of Rome " + "please " * 80})
    ).json()
    cid = first["conversation_id"]
    await alice.post("/api/chat", json={"message": "show me the full answer from earlier", "conversation_id": cid})
    detail = (await alice.get(f"/api/conversations/{cid}")).json()
    assert detail["title"].startswith("Tell me about the history") and detail["query_count"] == 2
    assert [i["id"] for i in detail["full"]] == ["q1", "q1-r", "q2", "q2-t1", "q2-r"]
    assert [(i["id"], i["ref"]) for i in detail["summarised"]] == [
        ("q1", None),
        ("q1-r-sum", "q1-r"),
        ("q2", None),
        ("q2-t1-sum", "q2-t1"),
        ("q2-r-sum", "q2-r"),
    ]
    tool = next(i for i in detail["full"] if i["id"] == "q2-t1")
    assert tool["tool_name"] == "retrieve_full_context" and tool["tool_input"] == {"id": "q1-r"}
    summary = next(i for i in detail["summarised"] if i["id"] == "q1-r-sum")
    assert len(summary["content"]) < len(first["response"])
    item = (await alice.get(f"/api/conversations/{cid}/items/q1-r")).json()
    assert item["content"] == first["response"]
    assert (await alice.get(f"/api/conversations/{cid}/items/q9-r")).status_code == 404


async def test_list_rename_delete(setup: tuple[Services, httpx.AsyncClient, Any]) -> None:
    _, alice, _ = setup
    ids = [
        (await alice.post("/api/chat", json={"message": f"question {n}"})).json()["conversation_id"] for n in range(3)
    ]
    listing = (await alice.get("/api/conversations")).json()
    assert listing["count"] == 3 and [c["id"] for c in listing["data"]] == ids[::-1]
    assert (await alice.get("/api/conversations", params={"limit": 1, "offset": 1})).json()["data"][0]["id"] == ids[1]
    renamed = await alice.patch(f"/api/conversations/{ids[0]}", json={"title": "Retries"})
    assert renamed.status_code == 200 and renamed.json()["title"] == "Retries"
    assert (await alice.patch(f"/api/conversations/{ids[0]}", json={"title": ""})).status_code == 422
    assert (await alice.delete(f"/api/conversations/{ids[0]}")).status_code == 204
    assert (await alice.get(f"/api/conversations/{ids[0]}")).status_code == 404
    assert (await alice.get("/api/conversations")).json()["count"] == 2


async def test_another_users_conversation_is_absent(
    setup: tuple[Services, httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    _, alice, bob = setup
    cid = (await alice.post("/api/chat", json={"message": "private"})).json()["conversation_id"]
    assert (await bob.get(f"/api/conversations/{cid}")).status_code == 404
    assert (await bob.get(f"/api/conversations/{cid}/items/q1")).status_code == 404
    assert (await bob.patch(f"/api/conversations/{cid}", json={"title": "mine"})).status_code == 404
    assert (await bob.delete(f"/api/conversations/{cid}")).status_code == 404
    assert (await bob.post("/api/chat", json={"message": "hi", "conversation_id": cid})).status_code == 404
    assert (await bob.get("/api/conversations")).json()["count"] == 0
    assert (await alice.get(f"/api/conversations/{cid}")).json()["title"] == "private"
    assert (await bob.get("/api/credits")).json()["balance"] == 150


async def test_credits_show_buckets_plan_and_recent_entries(setup: tuple[Services, httpx.AsyncClient, Any]) -> None:
    services, alice, _ = setup
    user = await services.accounts.by_email("alice@example.com")
    await services.credits.grant_pack(user_id=user.id, amount=500, reason="pack purchase")
    await alice.post("/api/chat", json={"message": "a detailed tour, please"})  # an answer: 5 credits
    body = (await alice.get("/api/credits")).json()
    assert (body["plan"], body["balance"], body["buckets"]) == ("free", 545, {"daily": 45, "pack": 500})
    assert (body["daily_allowance"], body["left_today"], body["monthly_cap"]) == (50, 45, None)
    assert body["prices"] == {"query": 5, "retrieve_documentation": 10, "github_tool": 3, "other_tool": 2}
    assert [(e["kind"], e["delta"], e["bucket"]) for e in body["recent"]] == [
        ("debit", -5, "daily"),
        ("grant", 500, "pack"),
        ("allowance", 50, "daily"),
    ]
    assert body["recent"][0]["query_id"] == "q1"


async def test_probes_and_openapi(setup: tuple[Services, httpx.AsyncClient, Any]) -> None:
    _, alice, _ = setup
    assert (await alice.get("/health")).json() == {"status": "ok"}
    assert (await alice.get("/ready")).json() == {"status": "ready"}
    schema = (await alice.get("/openapi.json")).json()
    assert {"/api/chat", "/api/chat/stream", "/api/conversations", "/api/credits"} <= set(schema["paths"])
    assert (await alice.get("/docs")).status_code == 200
    missing = await alice.get("/api/nothing-here")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


async def test_everything_is_still_there_after_a_restart(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        cid = (await http.post("/api/chat", json={"message": "remember me: a detailed tour"})).json()["conversation_id"]
    await services.database.dispose()
    restarted, settings = build(database_url)
    async with api_client(restarted, settings, user.api_key) as http:
        detail = (await http.get(f"/api/conversations/{cid}")).json()
        assert [i["id"] for i in detail["full"]] == ["q1", "q1-r"]
        assert (await http.get("/api/credits")).json()["balance"] == 45
