"""Malformed input never reaches the database and never answers 500: lone UTF-16 surrogates, NUL
characters (which PostgreSQL cannot store), IDs that are not IDs and numbers past any database's
integers all get a 4xx JSON error naming the field — on SQLite and PostgreSQL alike — and cost
nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from tests.support import api_client, make_user

UNKNOWN = "0b7c6f1e-3f4a-4c2e-9d1a-2b3c4d5e6f70"


@pytest.fixture
async def http(database_url: str, build: Any) -> AsyncIterator[httpx.AsyncClient]:
    services, settings = build(database_url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as client:
        yield client


def raw_json(text: str) -> dict[str, Any]:
    """Keyword arguments sending `text` as the JSON body, byte for byte (JSON escapes such as
    `\\ud800` stay escapes: no client library gets to re-encode them)."""
    return {"content": text.encode(), "headers": {"content-type": "application/json"}}


def assert_refused(response: httpx.Response, field: str, status: int = 422) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["field"] == field and field in [f["field"] for f in error.get("fields", [{"field": field}])]


async def assert_nothing_happened(http: httpx.AsyncClient) -> None:
    assert (await http.get("/api/credits")).json()["balance"] == 50
    assert (await http.get("/api/conversations")).json()["count"] == 0


SURROGATES = [
    ('{"message": "hi \\ud800 there"}', "message"),
    ('{"message": "\\udfff"}', "message"),
    ('{"message": "hi", "conversation_id": "\\ud800"}', "conversation_id"),
    ('{"message": "hi", "conversation_id": "0b7c6f1e-3f4a-4c2e-9d1a-2b3c4d5e6f7\\ud800"}', "conversation_id"),
]
NULS = [
    ({"message": "hi\x00there"}, "message"),
    ({"message": "\x00"}, "message"),
    ({"message": "hi", "conversation_id": "0b7c6f1e-3f4a-4c2e-9d1a-2b3c4d5e6f7\x00"}, "conversation_id"),
    ({"message": "hi", "conversation_id": "a\x00b"}, "conversation_id"),
]
BAD_PATHS = [
    (f"/api/conversations/{UNKNOWN[:-1]}%00", "conversation_id"),
    ("/api/conversations/a%00b", "conversation_id"),
    (f"/api/conversations/{UNKNOWN}/items/q1%00", "item_id"),
    (f"/api/conversations/{UNKNOWN}/items/q99999999999999999999", "item_id"),
    ("/api/conversations/not-an-id/items/q1", "conversation_id"),
]
BAD_NUMBERS = [
    ("/api/conversations?offset=831812437827437068288", "offset"),
    (f"/api/conversations?offset={2**63}", "offset"),
    (f"/api/conversations?offset={2**63 - 1}", "offset"),
    ("/api/conversations?offset=-1", "offset"),
    (f"/api/conversations?limit={2**64}", "limit"),
    (f"/api/credits?recent={2**63}", "recent"),
    ("/api/credits?recent=1e3", "recent"),
]


async def test_lone_surrogates_in_a_chat_are_refused(http: httpx.AsyncClient) -> None:
    for body, field in SURROGATES:
        for route in ("/api/chat", "/api/chat/stream"):
            assert_refused(await http.post(route, **raw_json(body)), field)
    await assert_nothing_happened(http)


async def test_nul_characters_in_a_chat_are_refused(http: httpx.AsyncClient) -> None:
    for body, field in NULS:
        for route in ("/api/chat", "/api/chat/stream"):
            assert_refused(await http.post(route, json=body), field)
    await assert_nothing_happened(http)


async def test_titles_and_key_names_refuse_nul_and_surrogates(http: httpx.AsyncClient) -> None:
    cid = (await http.post("/api/chat", json={"message": "a question"})).json()["conversation_id"]
    for body in ({"title": "a\x00b"}, {"title": "   "}):
        assert_refused(await http.patch(f"/api/conversations/{cid}", json=body), "title")
    assert_refused(await http.patch(f"/api/conversations/{cid}", **raw_json('{"title": "x\\udc00"}')), "title")
    assert (await http.get(f"/api/conversations/{cid}")).json()["title"] == "a question"
    assert_refused(await http.post("/api/keys", json={"name": "laptop\x00"}), "name")
    assert_refused(await http.post("/api/keys", **raw_json('{"name": "\\ud83d"}')), "name")
    assert (await http.get("/api/keys")).json()["count"] == 1
    renamed = await http.patch(f"/api/conversations/{cid}", json={"title": "  Retries  "})
    assert renamed.status_code == 200 and renamed.json()["title"] == "Retries"


async def test_path_ids_that_are_not_ids_are_refused(http: httpx.AsyncClient) -> None:
    for path, field in BAD_PATHS:
        methods = ("GET",) if "/items/" in path else ("GET", "PATCH", "DELETE")
        for method in methods:
            response = await http.request(method, path, json={"title": "x"} if method == "PATCH" else None)
            assert_refused(response, field)


async def test_numeric_query_parameters_are_bounded(http: httpx.AsyncClient) -> None:
    for query, field in BAD_NUMBERS:
        assert_refused(await http.get(query), field)


async def test_the_largest_offset_allowed_still_answers(http: httpx.AsyncClient) -> None:
    response = await http.get("/api/conversations", params={"offset": 1_000_000_000})
    assert response.status_code == 200 and response.json() == {"data": [], "count": 0}


async def test_a_message_over_the_configured_limit_is_a_413_stated_in_the_schema(database_url: str, build: Any) -> None:
    services, settings = build(database_url, max_message_chars=100)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        message = (await http.get("/openapi.json")).json()["components"]["schemas"]["ChatCreate"]["properties"][
            "message"
        ]
        assert (message["minLength"], message["maxLength"]) == (1, 100)
        assert (await http.post("/api/chat", json={"message": "a detailed tour " + "x" * 84})).status_code == 200
        too_long = await http.post("/api/chat", json={"message": "é" * 101})
        assert too_long.status_code == 413
        assert too_long.json()["error"] == {
            "code": "message_too_large",
            "message": "message is 101 characters; the limit is 100",
            "field": "message",
            "limit": 100,
            "size": 101,
            "request_id": too_long.headers["x-request-id"],
        }
        assert (await http.get("/api/credits")).json()["balance"] == 45


async def test_error_bodies_never_echo_what_was_sent(http: httpx.AsyncClient) -> None:
    secret = "my private question \x00 about my employer"
    response = await http.post("/api/chat", json={"message": secret})
    assert response.status_code == 422 and "employer" not in response.text
    assert json.loads(response.text)["detail"][0]["loc"] == ["body", "message"]
