"""Browser sessions: an API key (or, locally, nothing) becomes an HttpOnly cookie."""

from typing import Any

import httpx
from tests.support import make_user

from almanac.main import create_app


def client(app: Any, host: str = "127.0.0.1") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(host, 50000))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


async def test_an_api_key_is_exchanged_for_an_httponly_cookie(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url)
    user = await make_user(services, "web@example.com")
    async with client(create_app(settings, services)) as http:
        refused = await http.post("/api/auth/session", json={"api_key": "alm_wrong-key-000000000000000000"})
        assert refused.status_code == 401 and refused.json()["error"]["field"] == "api_key"
        signed_in = await http.post("/api/auth/session", json={"api_key": user.api_key})
        assert signed_in.status_code == 200 and signed_in.json()["email"] == "web@example.com"
        cookie = signed_in.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        assert user.api_key not in signed_in.headers["set-cookie"]
        assert (await http.get("/api/me")).json()["email"] == "web@example.com"
        assert (await http.post("/api/chat", json={"message": "hi"})).status_code == 200
        assert (await http.delete("/api/auth/session")).status_code == 204
        http.cookies.clear()
        assert (await http.get("/api/me")).status_code == 401


async def test_a_signed_out_cookie_no_longer_works(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url)
    user = await make_user(services)
    async with client(create_app(settings, services)) as http:
        await http.post("/api/auth/session", json={"api_key": user.api_key})
        token = http.cookies["almanac_session"]
        await http.delete("/api/auth/session")
        http.cookies.set("almanac_session", token)
        assert (await http.get("/api/me")).status_code == 401


async def test_local_runs_offer_keyless_sign_in_from_this_machine_only(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url, local_user=True)
    await make_user(services, "local@localhost")
    app = create_app(settings, services)
    async with client(app) as local:
        assert (await local.get("/api/auth/local")).json() == {"available": True, "email": "local@localhost"}
        signed_in = await local.post("/api/auth/local")
        assert signed_in.status_code == 200 and (await local.get("/api/me")).json()["email"] == "local@localhost"
    async with client(app, host="203.0.113.9") as remote:
        assert (await remote.get("/api/auth/local")).json() == {"available": False, "email": None}
        assert (await remote.post("/api/auth/local")).status_code == 403


async def test_production_runs_offer_no_keyless_sign_in(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url, local_user=False)
    async with client(create_app(settings, services)) as local:
        assert (await local.get("/api/auth/local")).json()["available"] is False
        assert (await local.post("/api/auth/local")).status_code == 403
