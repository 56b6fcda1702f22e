"""The built UI is served at / with deep links, and every response carries a strict CSP."""

from pathlib import Path
from typing import Any

import httpx

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
