"""The built web UI (frontend/dist) served at `/`, and the security headers on every response.

Deep links such as `/c/{id}` get `index.html` (the UI routes them); `/api/...` never does (404,
or 405 when the path exists with other methods). A file is served only from inside the UI folder,
whatever encoding a path uses (`/%2e%2e/…` resolves outside and is refused). Paths no UI route can
have — control characters, NUL, over MAX_UI_PATH characters — are a 4xx naming `path`, before the
file system sees them. The Content-Security-Policy allows only this origin: no inline scripts, no
remote scripts, styles or images, no framing — so even a rendering bug cannot load an attacker's
resource.
"""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from almanac.api.errors import allowed_methods, error_body, error_json

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
DEFAULT_DIST = Path(__file__).resolve().parents[3] / "frontend" / "dist"
SECURITY_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
)
MAX_UI_PATH = 255
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class SecurityHeaders:
    """ASGI middleware adding CSP and related headers to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def mount_web_ui(app: FastAPI, dist: Path | None) -> Path | None:
    """Serve the UI from `dist` if it has been built; returns the folder in use (or None)."""
    folder = (dist or DEFAULT_DIST).resolve()
    index = folder / "index.html"
    if not index.is_file():
        return None

    @app.get("/{path:path}", include_in_schema=False)
    async def web_ui(path: str, request: Request) -> Response:
        if path == "api" or path.startswith("api/"):
            return _not_an_api_route(app, request)
        if len(path) > MAX_UI_PATH:
            return error_json(
                414, error_body("path_too_long", f"no page has a path over {MAX_UI_PATH} characters", field="path")
            )
        if _CONTROL.search(path):
            return error_json(400, error_body("invalid_path", "the path contains control characters", field="path"))
        candidate = _file_in(folder, path)
        if candidate is not None:
            cache = "public, max-age=31536000, immutable" if path.startswith("assets/") else "no-cache"
            return FileResponse(candidate, headers={"Cache-Control": cache})
        return FileResponse(index, headers={"Cache-Control": "no-cache"})

    return folder


def _file_in(folder: Path, path: str) -> Path | None:
    """The file `path` names inside `folder`, or None (also for names the file system refuses)."""
    if not path:
        return None
    try:
        candidate = (folder / path).resolve()
        inside = candidate.is_relative_to(folder)
        return candidate if inside and candidate.is_file() else None
    except (OSError, ValueError):  # a name too long for the file system, or one it cannot represent
        return None


def _not_an_api_route(app: FastAPI, request: Request) -> Response:
    """404 for an unknown /api path; 405 (with `Allow`) for a known one asked with another method."""
    allowed = allowed_methods(app, request.url.path)
    if allowed:
        return error_json(
            405,
            error_body("method_not_allowed", "Method Not Allowed"),
            {"Allow": ", ".join(sorted(allowed))},
        )
    return error_json(404, error_body("not_found", "Not Found"))
