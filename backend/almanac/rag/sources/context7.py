"""Context7 (context7.com) as a doc source: its v2 REST API, cached in the database.

`GET {base}/v2/libs/search?query=&libraryName=` finds libraries (JSON); `GET {base}/v2/context?
query=&libraryId=` returns documentation text (snippets separated by lines of hyphens). An API key
is optional (the API works without one at lower limits). Responses are cached for `cache_ttl_s`,
so a repeated question costs no network call. 429 is retried after `Retry-After` (bounded), 5xx
and timeouts with backoff; 401/404/202 and garbage become clear `DocSourceError`s.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

from almanac.rag.chunking import Chunk, chunk_document
from almanac.rag.embeddings.base import Embedder
from almanac.rag.hybrid import HybridConfig, HybridIndex, HybridSearcher, index_text
from almanac.rag.retriever import Hit
from almanac.rag.sources.base import (
    AuthFailed,
    DocSourceError,
    LibraryInfo,
    LibraryNotFound,
    NotFinalized,
    RateLimited,
    SourceUnavailable,
)
from almanac.storage import docs as store
from almanac.storage.db import Database

log = logging.getLogger(__name__)
DEFAULT_BASE_URL = "https://context7.com/api"
MAX_PARAM = 500  # Context7 rejects query / libraryName / libraryId longer than this


class _Retry(Exception):
    """A response worth retrying; carries how long the server asked us to wait."""

    def __init__(self, error: DocSourceError, wait_s: float) -> None:
        super().__init__(str(error))
        self.error = error
        self.wait_s = wait_s


@dataclass
class HybridCorpus:
    """One library's fetched documentation, chunked and indexed for this request."""

    library: LibraryInfo
    chunks: Sequence[Chunk]
    searcher: HybridSearcher

    async def search(self, query: str, k: int, *, question: str | None = None) -> list[Hit]:
        return await self.searcher.search(query, k, question=question)


class Context7Source:
    name = "context7"

    def __init__(
        self,
        *,
        database: Database,
        embedder: Embedder | None,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        timeout_s: float = 30.0,
        cache_ttl_s: float = 86_400.0,
        max_retries: int = 2,
        max_retry_wait_s: float = 10.0,
        backoff_s: float = 1.0,
        clock: Callable[[], datetime] | None = None,
        hybrid: HybridConfig | None = None,
    ) -> None:
        self._db = database
        self._hybrid = hybrid or HybridConfig()
        self._embedder = embedder
        self._base_url = base_url.rstrip("/")
        self._cache_ttl = timedelta(seconds=cache_ttl_s)
        self._max_retries = max_retries
        self._max_retry_wait = max_retry_wait_s
        self._backoff = backoff_s
        self._timeout_s = timeout_s
        self._clock = clock or (lambda: datetime.now(UTC))
        headers = {"User-Agent": "almanac", "X-Context7-Source": "almanac"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(timeout_s, connect=min(10, timeout_s)))
        self.network_calls = 0

    async def aclose(self) -> None:
        await self._http.aclose()

    async def probe(self, *, timeout_s: float = 10.0) -> tuple[bool, str]:
        """Whether Context7 answers now — one library search, never cached or retried — and why not.

        Usable: a JSON answer, or 429 (it answers; a question then meets the limit and falls back).
        Not usable: no connection, a timeout, 5xx, HTML or garbage, or a rejected key.
        """
        self.network_calls += 1
        try:
            response = await self._http.get(
                self._base_url + "/v2/libs/search",
                params={"query": "documentation", "libraryName": "react"},
                timeout=min(timeout_s, self._timeout_s),
            )
        except httpx.HTTPError as exc:
            return False, f"not reachable ({type(exc).__name__})"
        if response.status_code == 429:
            return True, "answering (rate-limited right now)"
        try:
            _body(response, 0.0)
            json.loads(response.text)["results"]
        except (DocSourceError, _Retry) as exc:
            return False, str(exc)
        except (ValueError, KeyError, TypeError):
            return False, "answered with something other than a library search result"
        return True, "answering"

    async def libraries(self, name: str, query: str) -> list[LibraryInfo]:
        body = await self._get("/v2/libs/search", {"query": query[:MAX_PARAM], "libraryName": name[:MAX_PARAM]})
        try:
            results = json.loads(body)["results"]
            return [_library(entry) for entry in results if isinstance(entry, dict) and entry.get("id")]
        except (ValueError, KeyError, TypeError) as exc:
            raise SourceUnavailable("Context7 returned a malformed library search response") from exc

    async def corpus(self, library: LibraryInfo, topic: str) -> HybridCorpus:
        text = await self._get("/v2/context", {"query": topic[:MAX_PARAM] or library.title, "libraryId": library.id})
        chunks = chunk_document(text, library=library.id, fmt="context7")
        if not chunks:
            raise LibraryNotFound(f"Context7 has no documentation for {library.id} on this topic.")
        index = await HybridIndex.build([index_text(chunk) for chunk in chunks], self._embedder)
        return HybridCorpus(library, chunks, HybridSearcher(index, self._embedder, self._hybrid))

    async def _get(self, path: str, params: Mapping[str, str]) -> str:
        key = hashlib.sha256(json.dumps([path, sorted(params.items())]).encode()).hexdigest()
        async with self._db.session() as session:
            cached = await store.cached_response(session, key=key, now=self._clock())
        if cached is not None:
            return cached.body
        body = await self._fetch(path, params)
        async with self._db.session() as session:
            await store.cache_response(
                session, key=key, source=self.name, status=200, body=body, expires_at=self._clock() + self._cache_ttl
            )
        return body

    async def _fetch(self, path: str, params: Mapping[str, str]) -> str:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._max_retries + 1),
            retry=retry_if_exception_type(_Retry),
            wait=lambda state: _wait_of(
                state.outcome.exception() if state.outcome else None, state.attempt_number, self._backoff
            ),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._once(path, params)
        except _Retry as exc:
            raise exc.error from None
        raise SourceUnavailable("Context7 could not be reached")  # pragma: no cover - reraise=True above

    async def _once(self, path: str, params: Mapping[str, str]) -> str:
        self.network_calls += 1
        started = time.monotonic()
        try:
            response = await self._http.get(self._base_url + path, params=dict(params))
        except httpx.TimeoutException:
            raise _Retry(SourceUnavailable(f"Context7 did not answer within {self._timeout_s:g} s"), 1.0) from None
        except httpx.HTTPError as exc:
            raise _Retry(SourceUnavailable(f"Context7 could not be reached ({type(exc).__name__})"), 1.0) from None
        log.debug("context7 %s %s in %.0f ms", path, response.status_code, (time.monotonic() - started) * 1000)
        return _body(response, self._max_retry_wait)


def _body(response: httpx.Response, max_wait: float) -> str:
    status = response.status_code
    message = _message(response)
    if status == 200:
        text = response.text
        content_type = response.headers.get("content-type", "")
        if "text/html" in content_type or text.lstrip()[:15].lower().startswith(("<!doctype html", "<html")):
            raise SourceUnavailable("Context7 answered with an HTML page instead of documentation")
        return text
    if status == 202:
        raise NotFinalized(
            "Context7 is still processing this library's documentation (not finalized yet); "
            "try again later or use another library."
        )
    if status in (401, 403):
        raise AuthFailed("Context7 rejected the API key (CONTEXT7_API_KEY; keys start with 'ctx7sk').")
    if status == 404:
        raise LibraryNotFound(message or "Context7 does not know this library.")
    if status == 429:
        wait = _retry_after(response.headers.get("retry-after"))
        error = RateLimited(f"Context7 is rate-limiting requests{f' (retry after {wait:g} s)' if wait else ''}.")
        if wait is not None and wait > max_wait:
            raise error
        raise _Retry(error, wait if wait is not None else 2.0)
    if status >= 500:
        raise _Retry(SourceUnavailable(f"Context7 failed (HTTP {status}{': ' + message if message else ''})"), 1.0)
    raise DocSourceError(f"Context7 refused the request (HTTP {status}{': ' + message if message else ''})")


def _message(response: httpx.Response) -> str:
    try:
        body: Any = response.json()
    except ValueError:
        return ""
    return str(body.get("message") or body.get("error") or "")[:300] if isinstance(body, dict) else ""


def _retry_after(header: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _wait_of(error: BaseException | None, attempt: int, base: float) -> float:
    """The server's Retry-After when it gave one, else exponential backoff (base × 1, 2, 4 …, ≤ 8 s)."""
    if isinstance(error, _Retry) and isinstance(error.error, RateLimited):
        return error.wait_s
    return min(8.0, base * 2 ** (attempt - 1))


def _library(entry: Mapping[str, Any]) -> LibraryInfo:
    versions = entry.get("versions") or []
    return LibraryInfo(
        id=str(entry["id"]),
        title=str(entry.get("title") or entry["id"]),
        description=str(entry.get("description") or ""),
        trust_score=float(entry.get("trustScore") or 0),
        snippets=int(entry.get("totalSnippets") or 0),
        versions=tuple(str(v) for v in versions if isinstance(v, str)),
        source="context7",
    )
