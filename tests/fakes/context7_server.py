"""A fake Context7 API serving the real v2 shapes: `GET /api/v2/libs/search` (JSON results) and
`GET /api/v2/context` (text snippets separated by lines of 32 hyphens), plus its errors.

`libraries` maps a library ID to (search entry, documentation text). `failures` is a queue of
faults served before normal answers: an HTTP status with body and headers, `"hang"` (never
answers), `"malformed"` (broken JSON for searches), `"html"` (an HTML page), `"empty"`.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

SEPARATOR = "\n\n" + "-" * 32 + "\n\n"


def snippet(title: str, url: str, description: str, code: str = "", language: str = "python") -> str:
    """One v2 text snippet."""
    block = f"\n\n```{language}\n{code}\n```" if code else ""
    return f"### {title}\n\nSource: {url}\n\n{description}{block}"


FASTAPI_DOCS = SEPARATOR.join(
    [
        snippet(
            "Declare a dependency",
            "https://fastapi.tiangolo.com/tutorial/dependencies/",
            "Dependencies are declared with Depends: FastAPI calls the dependency and passes its result.",
            "async def common(q: str | None = None):\n    return {'q': q}\n\n@app.get('/items')\n"
            "async def items(commons: dict = Depends(common)):\n    return commons",
        ),
        snippet(
            "Background tasks",
            "https://fastapi.tiangolo.com/tutorial/background-tasks/",
            "Add a BackgroundTasks parameter and call add_task to run work after returning the response.",
        ),
        snippet(
            "CORS middleware",
            "https://fastapi.tiangolo.com/tutorial/cors/",
            "Use CORSMiddleware with allow_origins to let browsers on other origins call the API.",
        ),
        snippet(
            "Path parameters",
            "https://fastapi.tiangolo.com/tutorial/path-params/",
            "Declare path parameters with the same syntax as Python format strings; types are validated.",
        ),
    ]
)

FASTAPI_ENTRY = {
    "id": "/tiangolo/fastapi",
    "title": "FastAPI",
    "description": "FastAPI framework, high performance",
    "branch": "master",
    "lastUpdateDate": "2026-10-01T10:00:00.000Z",
    "state": "finalized",
    "totalTokens": 900000,
    "totalSnippets": 1800,
    "stars": 90000,
    "trustScore": 9,
    "benchmarkScore": 90.5,
    "versions": ["0.115.0"],
}
FASTAPI_CLONE = {
    **FASTAPI_ENTRY,
    "id": "/someone/fastapi-clone",
    "title": "fastapi-clone",
    "trustScore": 2,
    "totalSnippets": 12,
    "description": "A fork",
}


@dataclass
class FakeContext7:
    libraries: dict[str, tuple[dict[str, Any], str]] = field(
        default_factory=lambda: {
            "/tiangolo/fastapi": (FASTAPI_ENTRY, FASTAPI_DOCS),
            "/someone/fastapi-clone": (FASTAPI_CLONE, snippet("Clone", "https://example.com", "Nothing useful.")),
        }
    )
    failures: deque[tuple[Any, ...]] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.app = Starlette(
            routes=[
                Route("/api/v2/libs/search", self._search),
                Route("/api/v2/context", self._context),
            ]
        )

    def fail(self, *faults: tuple[Any, ...]) -> None:
        """Queue faults: (status, body, headers) or ("hang",) / ("malformed",) / ("html",) / ("empty",)."""
        self.failures.extend(faults)

    async def _fault(self) -> Response | None:
        if not self.failures:
            return None
        fault = self.failures.popleft()
        kind = fault[0]
        if kind == "hang":
            await asyncio.sleep(3600)
        if kind == "malformed":
            return PlainTextResponse('{"results": [', media_type="application/json")
        if kind == "html":
            return PlainTextResponse(
                "<!DOCTYPE html><html><body>Just a moment...</body></html>", media_type="text/html"
            )
        if kind == "empty":
            return PlainTextResponse("")
        status, body, headers = fault
        return JSONResponse(body, status_code=status, headers=headers)

    async def _search(self, request: Request) -> Response:
        self.requests.append(
            {"path": request.url.path, "params": dict(request.query_params), "headers": dict(request.headers)}
        )
        fault = await self._fault()
        if fault is not None:
            return fault
        name = request.query_params.get("libraryName", "").lower()
        results = [
            entry
            for entry, _ in self.libraries.values()
            if name and (name in entry["title"].lower() or name in entry["id"].lower())
        ]
        return Response(json.dumps({"results": results, "searchFilterApplied": False}), media_type="application/json")

    async def _context(self, request: Request) -> Response:
        self.requests.append(
            {"path": request.url.path, "params": dict(request.query_params), "headers": dict(request.headers)}
        )
        fault = await self._fault()
        if fault is not None:
            return fault
        library = request.query_params.get("libraryId", "")
        base = library.split("@")[0]
        if base not in self.libraries:
            return JSONResponse({"error": "not_found", "message": f"Library {library} not found"}, status_code=404)
        return PlainTextResponse(self.libraries[base][1])
