"""CSRF: a request that carries the session cookie (and no API key) and changes state must come
from this server's own pages (`Origin`). Checked once for every route — those in the schema today,
any added later — whatever the body's Content-Type, so it does not depend on how a FastAPI version
parses bodies."""

from __future__ import annotations

import re
from typing import Any

import httpx
from fastapi import Request
from tests.support import make_user

from almanac.main import create_app

OURS = {"Origin": "http://localhost"}
FOREIGN = ({"Origin": "https://evil.example"}, {"Origin": "null"}, {"Origin": "http://localhost:9999"}, {})
CHANGES_STATE = ("post", "put", "patch", "delete")
BODIES = {
    "/api/chat": {"message": "spend my credits"},
    "/api/chat/stream": {"message": "spend my credits"},
    "/api/conversations/{conversation_id}": {"title": "renamed by another site"},
    "/api/keys": {"name": "planted"},
    "/api/auth/session": {"api_key": "alm_attackers-own-key-0000000000000000"},
    "/api/auth/local": {"token": "x" * 43},
}


async def test_every_state_changing_route_refuses_cookie_requests_from_other_sites(
    database_url: str, build: Any
) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    app = create_app(settings, services)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost", headers=OURS) as browser:
        await browser.post("/api/auth/session", json={"api_key": user.api_key})
        cid = (await browser.post("/api/chat", json={"message": "mine"})).json()["conversation_id"]
        key_id = (await browser.get("/api/keys")).json()["data"][0]["id"]
        routes = [
            (method, path)
            for path, operations in (await browser.get("/openapi.json")).json()["paths"].items()
            for method in operations
            if method in CHANGES_STATE
        ]
        assert len(routes) >= 9  # chat ×2, rename, delete, keys ×2, sign-in ×2, sign-out, …
        before = (await browser.get("/api/credits")).json()["balance"]
        for method, template in routes:
            path = template.replace("{conversation_id}", cid).replace("{key_id}", key_id)
            path = re.sub(r"\{[^}]+\}", "x", path)
            for origin in FOREIGN:
                headers = {"Origin": origin["Origin"]} if origin else {"Origin": ""}
                request = browser.build_request(method, path, json=BODIES.get(template, {}), headers=headers)
                if not origin:
                    del request.headers["Origin"]
                response = await browser.send(request)
                assert response.status_code == 403, (method, path, origin, response.text)
                assert response.json()["error"]["code"] == "cross_origin_request"
        # Nothing changed: the conversation, its title, the keys, the balance, the session.
        assert (await browser.get(f"/api/conversations/{cid}")).json()["title"] == "mine"
        assert [k["id"] for k in (await browser.get("/api/keys")).json()["data"]] == [key_id]
        assert (await browser.get("/api/credits")).json()["balance"] == before
        assert (await browser.get("/api/me")).status_code == 200


async def test_a_route_added_later_is_covered_without_asking(database_url: str, build: Any) -> None:
    """A new state-changing route that reads the session cookie itself (no `CurrentUser`)."""
    services, settings = build(database_url)
    user = await make_user(services)
    app = create_app(settings, services)
    calls: list[str] = []

    @app.post("/api/experimental/transfer")
    async def transfer(request: Request) -> dict[str, bool]:
        calls.append(request.cookies.get("almanac_session", ""))
        return {"done": True}

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as browser:
        await browser.post("/api/auth/session", json={"api_key": user.api_key}, headers=OURS)
        for headers in ({"Origin": "https://evil.example"}, {}):
            refused = await browser.post("/api/experimental/transfer", content=b"{}", headers=headers)
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "cross_origin_request"
        assert calls == []
        assert (await browser.post("/api/experimental/transfer", headers=OURS)).status_code == 200
        assert len(calls) == 1


async def test_a_body_without_a_content_type_is_refused_before_any_parsing(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    app = create_app(settings, services)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as browser:
        await browser.post("/api/auth/session", json={"api_key": user.api_key}, headers=OURS)
        for content_type in ("", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
            response = await browser.post(
                "/api/chat", content=b'{"message": "hi"}', headers={"Content-Type": content_type}
            )
            assert response.status_code == 403, content_type
        assert (await browser.get("/api/credits")).json()["balance"] == 50


async def test_api_keys_and_our_own_pages_are_not_affected(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    app = create_app(settings, services)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as browser:
        await browser.post("/api/auth/session", json={"api_key": user.api_key}, headers=OURS)
        assert (await browser.post("/api/chat", json={"message": "hi"}, headers=OURS)).status_code == 200
        keyed = await browser.post(  # an API client: the key authenticates, the cookie is not used
            "/api/chat",
            json={"message": "hi"},
            headers={"Authorization": f"Bearer {user.api_key}", "Origin": "https://evil.example"},
        )
        assert keyed.status_code == 200
        blank_key = await browser.post("/api/chat", json={"message": "hi"}, headers={"Authorization": ""})
        assert blank_key.status_code == 403  # an empty Authorization header leaves the cookie in charge
        assert (await browser.get("/api/me", headers={"Origin": "https://evil.example"})).status_code == 200
