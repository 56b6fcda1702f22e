"""`web_search`: web results (title, URL, snippet) from a `SearchProvider`, cited like
documentation passages (`data["citations"]`: `{title, url}`).

One provider is built in: the Brave Search API (`GET <WEB_SEARCH_URL>?q=…&count=…` with the key in
`X-Subscription-Token`; results in `web.results[]` as `title`, `url`, `description`, where Brave
marks matches with `<strong>`). Its errors become ours at this boundary: a rejected key, rate
limits, server errors and unreachable hosts make the call unavailable (not charged); a search that
finds nothing is free.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from almanac.billing.pricing import BillingCategory
from almanac.tools.base import ToolContext, ToolError, ToolOutput, ToolUnavailable

MAX_QUERY_CHARS = 400  # Brave's own limit
_TAG = re.compile(r"<[^>]{0,200}>")


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str


class SearchUnavailable(Exception):
    """The provider could not answer (key refused, rate limited, down, unreachable)."""


class SearchProvider(Protocol):
    name: str

    async def search(self, query: str, *, count: int) -> list[SearchResult]:
        """Up to `count` results; `SearchUnavailable` or `ToolError` when it cannot answer."""
        ...


class BraveSearch:
    """The Brave Search API's web search."""

    name = "Brave Search"

    def __init__(self, api_key: str, *, url: str, timeout_s: float = 15.0, transport: Any = None) -> None:
        self._key = api_key
        self._url = url
        self._timeout = timeout_s
        self._transport = transport  # tests may pass an httpx transport

    async def search(self, query: str, *, count: int) -> list[SearchResult]:
        headers = {"Accept": "application/json", "X-Subscription-Token": self._key}
        params: dict[str, str | int] = {"q": query, "count": count}
        try:
            async with httpx.AsyncClient(timeout=self._timeout, transport=self._transport) as client:
                response = await client.get(self._url, params=params, headers=headers)
        except httpx.HTTPError as exc:
            raise SearchUnavailable(f"{self.name} could not be reached ({type(exc).__name__})") from None
        if response.status_code in (401, 403):
            raise SearchUnavailable(f"{self.name} refused the API key (HTTP {response.status_code})")
        if response.status_code == 429:
            raise SearchUnavailable(f"{self.name} rate limit reached; try again later")
        if response.status_code >= 500:
            raise SearchUnavailable(f"{self.name} failed (HTTP {response.status_code})")
        if response.status_code != 200:
            raise ToolError(f"{self.name} rejected the search: {_error_detail(response)}")
        try:
            body = response.json()
        except ValueError:
            raise SearchUnavailable(f"{self.name} answered with something other than JSON") from None
        web = body.get("web") if isinstance(body, dict) else None
        items = web.get("results") if isinstance(web, dict) else None
        return [result for item in (items or [])[:count] if (result := _result(item)) is not None]


def _result(item: Any) -> SearchResult | None:
    if not isinstance(item, dict) or not isinstance(item.get("url"), str):
        return None
    url = item["url"]
    if not url.startswith(("http://", "https://")):
        return None
    return SearchResult(_plain(item.get("title")) or url, url, _plain(item.get("description")))


def _plain(value: Any) -> str:
    """Brave's highlighted HTML fragment as plain text."""
    return " ".join(html.unescape(_TAG.sub("", value)).split()) if isinstance(value, str) else ""


def _error_detail(response: httpx.Response) -> str:
    try:
        error = response.json().get("error", {})
        return str(error.get("detail") or error.get("code") or response.status_code)[:300]
    except (ValueError, AttributeError):
        return f"HTTP {response.status_code}"


class WebSearchTool:
    name = "web_search"
    billing = BillingCategory.TOOL
    source = "builtin"
    output_schema: Mapping[str, Any] | None = None

    def __init__(self, provider: SearchProvider, *, count: int = 5) -> None:
        self._provider = provider
        self._count = count
        self.provider, self.count = provider, count  # the gateway runs web search server tools with them
        self.description = (
            f"Search the web ({provider.name}) and get the top results: title, URL and a snippet each. Use it for "
            "current events, releases and anything documentation does not cover; cite the URLs you use."
        )
        self.input_schema: Mapping[str, Any] = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "The search."},
                "count": {"type": "integer", "minimum": 1, "maximum": 20, "description": f"Results (default {count})."},
            },
            "required": ["query"],
            "additionalProperties": False,
        }

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        query = str(arguments["query"]).strip()
        try:
            results = await self._provider.search(query, count=int(arguments.get("count") or self._count))
        except SearchUnavailable as exc:
            raise ToolUnavailable(str(exc)) from None
        if not results:
            return ToolOutput(f"No web results for {query!r}.", free=True)
        lines = [f"Web results for {query!r} ({self._provider.name}):"]
        for number, result in enumerate(results, start=1):
            title = result.title.replace("[", "\\[").replace("]", "\\]")
            lines.append(f"\n{number}. [{title}]({result.url.replace(' ', '%20').replace(')', '%29')})")
            if result.snippet:
                lines.append(f"   {result.snippet}")
        return ToolOutput(
            "\n".join(lines),
            data={"citations": [{"title": r.title, "url": r.url} for r in results], "source": self._provider.name},
        )
