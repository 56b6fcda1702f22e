"""The built UI is served at / with deep links, and every response carries a strict CSP."""

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.api.conftest import live_server, raw_request
from tests.support import make_user

from almanac.main import create_app


def built_ui(folder: Path) -> Path:
    (folder / "assets").mkdir(parents=True)
    (folder / "index.html").write_text("<!doctype html><title>Almanac</title><script src='/assets/app.js'></script>")
    (folder / "assets" / "app.js").write_text("console.log('ui')")
    return folder


async def test_the_ui_is_served_with_deep_links_and_a_strict_csp(sqlite_url: str, build: Any, tmp_path: Path) -> None:
    services, settings = build(sqlite_url, frontend_dist=str(built_ui(tmp_path / "dist")))
    app = create_app(settings, services)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        index = await http.get("/")
        assert index.status_code == 200 and "<title>Almanac</title>" in index.text
        csp = index.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self';" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp and "http" not in csp
        assert index.headers["x-content-type-options"] == "nosniff"
        assert (await http.get("/c/some-conversation-id")).text == index.text
        asset = await http.get("/assets/app.js")
        assert asset.text == "console.log('ui')" and "immutable" in asset.headers["cache-control"]
        assert (await http.get("/../pyproject.toml")).text == index.text
        api_missing = await http.get("/api/unknown")
        assert api_missing.status_code == 404 and api_missing.json()["error"]["code"] == "not_found"
        assert "content-security-policy" in (await http.get("/health")).headers
        assert services.web_ui == (tmp_path / "dist").resolve()


async def test_without_a_build_the_api_still_serves(sqlite_url: str, build: Any, tmp_path: Path) -> None:
    services, settings = build(sqlite_url, frontend_dist=str(tmp_path / "missing"))
    app = create_app(settings, services)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        assert (await http.get("/health")).status_code == 200
        assert (await http.get("/")).status_code == 404
    assert services.web_ui is None


SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}
TRAVERSALS = (
    "/%2e%2e/secret.txt",
    "/%2E%2E/secret.txt",
    "/..%2fsecret.txt",
    "/%2e%2e%2fsecret.txt",
    "/assets/%2e%2e/%2e%2e/secret.txt",
    "/assets/..%2f..%2fsecret.txt",
    "/.%2e/secret.txt",
)


def ui_beside_a_secret(tmp_path: Path) -> Path:
    """A built UI in tmp/site/dist, and a file one level above it that must never be served."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "secret.txt").write_text("TOP-SECRET-CONTENTS")
    return built_ui(tmp_path / "site" / "dist")


async def test_encoded_dot_segments_never_leave_the_ui_folder(sqlite_url: str, build: Any, tmp_path: Path) -> None:
    """httpx keeps `%2e%2e` as sent (it removes only literal dot segments), so the server sees `..`."""
    services, settings = build(sqlite_url, frontend_dist=str(ui_beside_a_secret(tmp_path)))
    app = create_app(settings, services)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        for path in TRAVERSALS:
            response = await http.get(path)
            assert httpx.URL(f"http://localhost{path}").raw_path == path.encode()  # not normalised away
            assert "TOP-SECRET" not in response.text and "<title>Almanac</title>" in response.text, path


async def test_encoded_dot_segments_through_a_real_server(sqlite_url: str, build: Any, tmp_path: Path) -> None:
    services, settings = build(sqlite_url, frontend_dist=str(ui_beside_a_secret(tmp_path)))
    with live_server(create_app(settings, services)) as address:
        for path in (*TRAVERSALS, "/../secret.txt", "/assets/../../secret.txt"):
            request = f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode()
            status, _, body = raw_request(address, request)
            assert b"TOP-SECRET" not in body, path
            assert status in (200, 400, 404), (path, status)


async def test_paths_no_page_can_have_are_a_4xx_naming_the_path(
    sqlite_url: str, build: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    services, settings = build(sqlite_url, frontend_dist=str(built_ui(tmp_path / "dist")))
    app = create_app(settings, services)
    long_path = "/" + "a" * 300
    caplog.set_level(logging.DEBUG)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        for path, status in (("/%00", 400), ("/c/%01x", 400), ("/assets/%7f", 400), (long_path, 414)):
            response = await http.get(path)
            assert response.status_code == status, path
            assert response.json()["error"]["field"] == "path"
            assert response.headers["x-frame-options"] == "DENY"
        # a name over the file system's 255 bytes (400 here) is no file: the UI gets it as a deep link
        assert (await http.get("/c/" + "é" * 200)).status_code == 200
    server_side = [r for r in caplog.records if not r.name.startswith("httpx")]
    assert not [r for r in server_side if r.levelno >= logging.WARNING]
    assert all(len(r.getMessage()) < 1_000 for r in server_side)


async def test_every_response_carries_exactly_the_security_headers(sqlite_url: str, build: Any, tmp_path: Path) -> None:
    services, settings = build(sqlite_url, frontend_dist=str(built_ui(tmp_path / "dist")))
    user = await make_user(services)
    app = create_app(settings, services)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        responses = {
            "ui": await http.get("/"),
            "ui asset": await http.get("/assets/app.js"),
            "api": await http.get("/api/me", headers={"Authorization": f"Bearer {user.api_key}"}),
            "api error": await http.get("/api/me"),
            "validation error": await http.get("/api/conversations", params={"offset": -1}),
            "docs": await http.get("/docs"),
            "docs asset": await http.get("/docs/init.js"),
            "openapi": await http.get("/openapi.json"),
            "probe": await http.get("/health"),
        }
    for name, response in responses.items():
        assert response.status_code < 500, name
        assert {key: response.headers.get(key) for key in SECURITY_HEADERS} == SECURITY_HEADERS, name
        assert all(len(response.headers.get_list(key)) == 1 for key in SECURITY_HEADERS), name


async def test_an_api_path_asked_with_another_method_is_a_405_listing_the_methods(
    sqlite_url: str, build: Any, tmp_path: Path
) -> None:
    services, settings = build(sqlite_url, frontend_dist=str(built_ui(tmp_path / "dist")))
    app = create_app(settings, services)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        wrong = await http.get("/api/chat")  # the UI's catch-all serves GET: it must not turn this into a 404
        assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
        both = await http.put("/api/auth/local")
        assert both.status_code == 405 and both.headers["allow"] == "GET, HEAD, POST"
        assert (await http.get("/api/nothing")).status_code == 404
