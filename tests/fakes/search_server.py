"""A fake Brave Search API: `GET /res/v1/web/search?q=…&count=…` with the key in
`X-Subscription-Token`, answering in Brave's shape (`{"type": "search", "query": {…}, "web":
{"type": "search", "results": [{"title", "url", "description", …}]}}`, matches marked with
`<strong>`), and its errors (`{"type": "ErrorResponse", "error": {"status", "code", "detail"}}`).

`results` maps a query to its results; `failures` is a queue of (status, error code) served before
normal answers. Every request is recorded in `requests`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

KEY = "BSA-test-key-0123456789"
PATH = "/res/v1/web/search"


def result(title: str, url: str, description: str) -> dict[str, Any]:
    """One web result as Brave sends it."""
    return {
        "type": "search_result",
        "title": title,
        "url": url,
        "description": description,
        "is_source_local": False,
        "is_source_both": False,
        "language": "en",
        "family_friendly": True,
        "profile": {"name": url.split("/")[2], "url": url, "long_name": url.split("/")[2]},
        "meta_url": {"scheme": "https", "netloc": url.split("/")[2], "path": "› docs"},
    }


@dataclass
class FakeSearch:
    results: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    failures: deque[tuple[int, str]] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(routes=[Route(PATH, self._search)])

    async def _search(self, request: Request) -> JSONResponse:
        self.requests.append({"params": dict(request.query_params), "headers": dict(request.headers)})
        if request.headers.get("x-subscription-token") != KEY:
            return _error(401, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.")
        if self.failures:
            status, code = self.failures.popleft()
            return _error(status, code, f"Fake failure {code}.")
        query = request.query_params.get("q", "")
        if not query or len(query) > 400:
            return _error(422, "VALIDATION", "Unable to validate request parameter(s).")
        count = int(request.query_params.get("count", "20"))
        found = self.results.get(query, [])[:count]
        body: dict[str, Any] = {"type": "search", "query": {"original": query, "more_results_available": False}}
        if found:
            body["web"] = {"type": "search", "results": found, "family_friendly": True}
        return JSONResponse(body)


def _error(status: int, code: str, detail: str) -> JSONResponse:
    return JSONResponse(
        {
            "type": "ErrorResponse",
            "error": {"id": "fake", "status": status, "code": code, "detail": detail, "meta": {}},
        },
        status_code=status,
    )
