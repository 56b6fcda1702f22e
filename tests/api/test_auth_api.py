"""Browser sessions: an API key (or, locally, the one-time sign-in link) becomes an HttpOnly cookie;
the attacks the security review ran against sign-in stay refused."""

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from tests.support import make_user

from almanac.auth.service import AccountService
from almanac.main import create_app

ORIGIN = {"Origin": "http://localhost"}


def client(app: Any, host: str = "127.0.0.1", base_url: str = "http://localhost") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(host, 50000))
    return httpx.AsyncClient(transport=transport, base_url=base_url)


async def test_an_api_key_is_exchanged_for_an_httponly_cookie(database_url: str, build: Any) -> None:
    services, settings = build(database_url, session_ttl_s=3600)
    user = await make_user(services, "web@example.com")
    async with client(create_app(settings, services)) as http:
        refused = await http.post("/api/auth/session", json={"api_key": "alm_wrong-key-000000000000000000"})
        assert refused.status_code == 401 and refused.json()["error"]["field"] == "api_key"
        signed_in = await http.post("/api/auth/session", json={"api_key": user.api_key}, headers=ORIGIN)
        assert signed_in.status_code == 200 and signed_in.json()["email"] == "web@example.com"
        cookie = signed_in.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        assert "max-age=3600" in cookie and "secure" not in cookie
        assert user.api_key not in signed_in.headers["set-cookie"]
        assert (await http.get("/api/me")).json()["email"] == "web@example.com"
        assert (await http.post("/api/chat", json={"message": "hi"}, headers=ORIGIN)).status_code == 200
        assert (await http.delete("/api/auth/session", headers=ORIGIN)).status_code == 204
        http.cookies.clear()
        assert (await http.get("/api/me")).status_code == 401


async def test_the_cookie_is_secure_over_https_or_when_configured(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    async with client(create_app(settings, services), base_url="https://localhost") as http:
        signed_in = await http.post("/api/auth/session", json={"api_key": user.api_key})
        assert "secure" in signed_in.headers["set-cookie"].lower()
    services, settings = build(database_url, session_cookie_secure=True)
    async with client(create_app(settings, services)) as http:
        signed_in = await http.post("/api/auth/session", json={"api_key": user.api_key})
        assert "secure" in signed_in.headers["set-cookie"].lower()


async def test_a_signed_out_cookie_no_longer_works(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    async with client(create_app(settings, services)) as http:
        await http.post("/api/auth/session", json={"api_key": user.api_key})
        token = http.cookies["almanac_session"]
        assert (await http.delete("/api/auth/session")).status_code == 403  # a cookie request needs our Origin
        assert (await http.delete("/api/auth/session", headers=ORIGIN)).status_code == 204
        http.cookies.set("almanac_session", token)
        assert (await http.get("/api/me")).status_code == 401


async def test_dns_rebinding_is_refused_on_every_route(database_url: str, build: Any) -> None:
    """A page whose hostname rebinds to 127.0.0.1 names its own host: nothing answers it."""
    services, settings = build(database_url, local_user=True)
    await make_user(services, "local@localhost")
    rebound = {"Host": "rebind.attacker.example:8000"}
    async with client(create_app(settings, services)) as http:
        for method, path in (("POST", "/api/auth/local"), ("GET", "/api/me"), ("GET", "/health"), ("GET", "/")):
            response = await http.request(method, path, headers=rebound, json={"token": "x" * 40})
            assert response.status_code == 400, (method, path)
            assert response.json()["error"]["code"] == "host_not_allowed"
        for host in ("localhost:8000", "127.0.0.1:8000", "[::1]:8000", "LOCALHOST"):
            assert (await http.get("/health", headers={"Host": host})).status_code == 200, host


async def test_allowed_hosts_are_configurable(database_url: str, build: Any) -> None:
    services, settings = build(database_url, allowed_hosts="chat.example.com,*.internal.example")
    async with client(create_app(settings, services)) as http:
        assert (await http.get("/health", headers={"Host": "chat.example.com"})).status_code == 200
        assert (await http.get("/health", headers={"Host": "a.internal.example:443"})).status_code == 200
        assert (await http.get("/health", headers={"Host": "localhost"})).status_code == 400
        assert (await http.get("/health", headers={"Host": "evil-chat.example.com"})).status_code == 400


async def test_cookie_requests_that_change_state_must_come_from_our_pages(database_url: str, build: Any) -> None:
    """CSRF: a foreign Origin, no Origin at all, or a body without a Content-Type — all refused."""
    services, settings = build(database_url)
    user = await make_user(services)
    async with client(create_app(settings, services)) as http:
        await http.post("/api/auth/session", json={"api_key": user.api_key})
        foreign = await http.post("/api/chat", json={"message": "hi"}, headers={"Origin": "http://evil.example"})
        assert foreign.status_code == 403 and foreign.json()["error"]["code"] == "cross_origin_request"
        assert (await http.post("/api/chat", json={"message": "hi"})).status_code == 403
        other_port = await http.post("/api/chat", json={"message": "hi"}, headers={"Origin": "http://localhost:9"})
        assert other_port.status_code == 403
        plain = await http.post(
            "/api/chat", content=b'{"message": "hi"}', headers={"Origin": "http://evil.example", "Content-Type": ""}
        )
        assert plain.status_code == 403
        assert (await http.get("/api/me", headers={"Origin": "http://evil.example"})).status_code == 200  # a read
        # API clients authenticate with the key, not the cookie: no Origin needed.
        keyed = await http.post(
            "/api/chat", json={"message": "hi"}, headers={"Authorization": f"Bearer {user.api_key}"}
        )
        assert keyed.status_code == 200
        assert (
            await http.post("/api/auth/session", json={"api_key": user.api_key}, headers={"Origin": "null"})
        ).status_code == 403


async def test_keyless_sign_in_needs_the_one_time_link_not_a_local_address(
    database_url: str, build: Any, tmp_path: Any
) -> None:
    services, settings = build(database_url, local_user=True, data_dir=str(tmp_path / "data"))
    await make_user(services, "local@localhost")
    assert services.local_sign_in is not None
    link = services.local_sign_in.issue()
    token = link.split("#sign-in=")[1]
    assert link.startswith("http://127.0.0.1:8000/#sign-in=")
    link_file = tmp_path / "data" / "local-sign-in-url"
    assert link_file.read_text().strip() == link and (link_file.stat().st_mode & 0o777) == 0o600
    app = create_app(settings, services)
    async with client(app) as local:  # from loopback, but without the token: refused
        assert (await local.get("/api/auth/local")).json() == {"available": True, "email": "local@localhost"}
        assert (await local.post("/api/auth/local", json={})).status_code == 422
        wrong = await local.post("/api/auth/local", json={"token": "x" * 43})
        assert wrong.status_code == 403 and wrong.json()["error"]["code"] == "invalid_sign_in_token"
        assert (await local.get("/api/me")).status_code == 401
    async with client(app, host="203.0.113.9") as remote:  # the address does not matter, the token does
        signed_in = await remote.post("/api/auth/local", json={"token": token})
        assert signed_in.status_code == 200 and (await remote.get("/api/me")).json()["email"] == "local@localhost"
    async with client(app) as again:
        reused = await again.post("/api/auth/local", json={"token": token})
        assert reused.status_code == 403  # one-time
        fresh = link_file.read_text().strip().split("#sign-in=")[1]
        assert fresh != token and (await again.post("/api/auth/local", json={"token": fresh})).status_code == 200


async def test_production_runs_offer_no_keyless_sign_in(database_url: str, build: Any) -> None:
    services, settings = build(database_url, local_user=False)
    assert services.local_sign_in is None
    async with client(create_app(settings, services)) as local:
        assert (await local.get("/api/auth/local")).json()["available"] is False
        assert (await local.post("/api/auth/local", json={"token": "x" * 43})).status_code == 403


async def test_sessions_expire_on_the_server_and_are_deleted(database_url: str, build: Any) -> None:
    services, settings = build(database_url, session_ttl_s=600)
    user = await make_user(services)
    now = [datetime(2026, 11, 24, 12, 0, tzinfo=UTC)]
    services.accounts = AccountService(services.database, clock=lambda: now[0])
    async with client(create_app(settings, services)) as http:
        await http.post("/api/auth/session", json={"api_key": user.api_key})
        assert (await http.get("/api/me")).status_code == 200
        now[0] += timedelta(seconds=601)
        assert (await http.get("/api/me")).status_code == 401  # the cookie is still sent; the server refuses it
    assert await services.accounts.purge_expired_sessions() == 1


async def test_a_user_holds_a_bounded_number_of_sessions(database_url: str, build: Any) -> None:
    services, settings = build(database_url, sessions_per_user=3)
    user = await make_user(services)
    app = create_app(settings, services)
    cookies = []
    for _ in range(5):
        async with client(app) as http:
            await http.post("/api/auth/session", json={"api_key": user.api_key})
            cookies.append(http.cookies["almanac_session"])
    async with client(app) as http:
        alive = []
        for cookie in cookies:
            http.cookies.set("almanac_session", cookie)
            alive.append((await http.get("/api/me")).status_code == 200)
    assert alive == [False, False, True, True, True]


async def test_oversized_headers_are_refused(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    async with client(create_app(settings, services)) as http:
        huge = await http.get("/api/me", headers={"Authorization": "Bearer " + "a" * 1_000_000})
        assert huge.status_code == 431 and huge.json()["error"]["code"] == "headers_too_large"


def cookie_attributes(set_cookie: str) -> dict[str, str]:
    """`almanac_session=…; HttpOnly; Max-Age=60; …` → {"httponly": "", "max-age": "60", …} (the value dropped)."""
    _, *attributes = (part.strip() for part in set_cookie.split(";"))
    return {name.lower(): value for name, _, value in (a.partition("=") for a in attributes)}


async def test_the_session_cookie_carries_exactly_its_flags(database_url: str, build: Any) -> None:
    """Over HTTP: HttpOnly, SameSite=Strict, Path=/, Max-Age = SESSION_TTL_S, no Secure. Over HTTPS
    (as a trusted proxy reports it) or with SESSION_COOKIE_SECURE: Secure as well."""
    services, settings = build(database_url, session_ttl_s=7200)
    user = await make_user(services)
    expected = {"httponly": "", "samesite": "strict", "path": "/", "max-age": "7200"}
    async with client(create_app(settings, services)) as http:
        signed_in = await http.post("/api/auth/session", json={"api_key": user.api_key}, headers=ORIGIN)
        assert {k: v for k, v in cookie_attributes(signed_in.headers["set-cookie"]).items() if k != "expires"} == (
            expected
        )
    async with client(create_app(settings, services), base_url="https://localhost") as http:
        secure = await http.post("/api/auth/session", json={"api_key": user.api_key})
        attributes = cookie_attributes(secure.headers["set-cookie"])
        assert attributes.get("secure") == "" and attributes["max-age"] == "7200"
    services, settings = build(database_url, session_ttl_s=60, session_cookie_secure=True)
    async with client(create_app(settings, services)) as http:
        configured = await http.post("/api/auth/session", json={"api_key": user.api_key})
        attributes = cookie_attributes(configured.headers["set-cookie"])
        assert attributes.get("secure") == "" and attributes["max-age"] == "60"
