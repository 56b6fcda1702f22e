"""The built web UI (frontend/dist) served at `/`, and the security headers on every response.

Deep links such as `/c/{id}` get `index.html` (the UI routes them); `/api/...` never does. The
Content-Security-Policy allows only this origin: no inline scripts, no remote scripts, styles or
images, no framing — so even a rendering bug cannot load an attacker's resource.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from almanac.api.errors import error_body

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
DEFAULT_DIST = Path(__file__).resolve().parents[3] / "frontend" / "dist"


class SecurityHeaders:
    """ASGI middleware adding CSP and related headers to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = CONTENT_SECURITY_POLICY.encode()

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", policy),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                ]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


def mount_web_ui(app: FastAPI, dist: Path | None) -> Path | None:
    """Serve the UI from `dist` if it has been built; returns the folder in use (or None)."""
    folder = (dist or DEFAULT_DIST).resolve()
    index = folder / "index.html"
    if not index.is_file():
        return None

    @app.get("/{path:path}", include_in_schema=False)
    async def web_ui(path: str) -> Response:
        if path == "api" or path.startswith("api/"):
            return JSONResponse(error_body("not_found", "Not Found"), status_code=404)
        candidate = (folder / path).resolve()
        if path and candidate.is_file() and candidate.is_relative_to(folder):
            cache = "public, max-age=31536000, immutable" if path.startswith("assets/") else "no-cache"
            return FileResponse(candidate, headers={"Cache-Control": cache})
        return FileResponse(index, headers={"Cache-Control": "no-cache"})

    return folder
