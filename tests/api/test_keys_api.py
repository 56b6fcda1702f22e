"""A user's own API keys: listed without the secret, created once-shown, revoked — and revoking a
key ends the browser sessions made from it at once."""

from typing import Any

import httpx
from tests.support import api_client, make_user

from almanac.main import create_app

ORIGIN = {"Origin": "http://localhost"}


async def test_keys_are_listed_created_and_revoked(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    alice = await make_user(services)
    async with api_client(services, settings, alice.api_key) as http:
        listed = (await http.get("/api/keys")).json()
        assert listed["count"] == 1 and listed["data"][0]["current"] is True
        assert alice.api_key not in str(listed) and listed["data"][0]["prefix"] == alice.api_key[:8]
        created = await http.post("/api/keys", json={"name": "laptop"})
        assert created.status_code == 201
        second = created.json()
        assert second["api_key"].startswith("alm_") and second["name"] == "laptop" and second["current"] is False
        listed = (await http.get("/api/keys")).json()
        assert listed["count"] == 2 and all("api_key" not in key for key in listed["data"])
        gateway = {"model": "claude-haiku-4-5", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}
        as_second = {"x-api-key": second["api_key"]}
        assert (await http.post("/v1/messages", json=gateway, headers=as_second)).status_code == 200  # cached
        assert (await http.delete(f"/api/keys/{second['id']}")).status_code == 204
        assert (await http.post("/v1/messages", json=gateway, headers=as_second)).status_code == 401  # forgotten
        revoked = {key["id"]: key for key in (await http.get("/api/keys")).json()["data"]}[second["id"]]
        assert revoked["revoked_at"] is not None
        assert (await http.delete(f"/api/keys/{second['id']}")).status_code == 404  # already revoked
    async with api_client(services, settings, second["api_key"]) as http:
        assert (await http.get("/api/me")).status_code == 401


async def test_nobody_revokes_or_sees_another_users_keys(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    alice, bob = await make_user(services), await make_user(services)
    async with api_client(services, settings, alice.api_key) as http:
        alice_key = (await http.get("/api/keys")).json()["data"][0]["id"]
    async with api_client(services, settings, bob.api_key) as http:
        assert [k["id"] for k in (await http.get("/api/keys")).json()["data"]] != [alice_key]
        refused = await http.delete(f"/api/keys/{alice_key}")
        assert refused.status_code == 404 and refused.json()["error"]["code"] == "key_not_found"
        assert (await http.delete("/api/keys/not-a-key-id")).status_code == 422
    async with api_client(services, settings, alice.api_key) as http:
        assert (await http.get("/api/me")).status_code == 200


async def test_revoking_a_key_ends_the_sessions_made_from_it(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    app = create_app(settings, services)
    transport = httpx.ASGITransport(app=app)
    async with api_client(services, settings, user.api_key) as keyed:
        other = (await keyed.post("/api/keys", json={"name": "browser"})).json()
    browser = httpx.AsyncClient(transport=transport, base_url="http://localhost", headers=ORIGIN)
    kept = httpx.AsyncClient(transport=transport, base_url="http://localhost", headers=ORIGIN)
    async with browser, kept:
        await browser.post("/api/auth/session", json={"api_key": other["api_key"]})
        await kept.post("/api/auth/session", json={"api_key": user.api_key})
        assert [k["current"] for k in (await browser.get("/api/keys")).json()["data"] if k["id"] == other["id"]] == [
            True
        ]
        assert (await kept.delete(f"/api/keys/{other['id']}")).status_code == 204
        assert (await browser.get("/api/me")).status_code == 401  # at once, not at the cookie's expiry
        assert (await kept.get("/api/me")).status_code == 200  # a session of another key lives on
