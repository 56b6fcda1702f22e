"""The gateway's HTTP client to upstream model servers, and Server-Sent Events both ways.

One pooled `aiohttp` session per process (created on first use, closed at shutdown): the gateway
forwards every request, so its client is on the hot path, and aiohttp's pool costs a fraction of
the CPU per request that the vendor SDKs' clients do. A request that fails before any response
because a pooled keep-alive connection had been closed by the server is sent once more. The
session keeps no cookies: it serves every caller.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson

from almanac.gateway.errors import GatewayError, UpstreamError, upstream_error

Event = dict[str, Any]


def sse_event(event: Event) -> bytes:
    """One Anthropic stream event as SSE bytes (`event:` equals the JSON `type`)."""
    return b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


def sse_events(events: list[Event]) -> bytes:
    """Several events as one write."""
    return b"".join([sse_event(event) for event in events])


async def sse_blocks(response: aiohttp.ClientResponse) -> AsyncIterator[list[bytes]]:
    """The `data` of the SSE events in a response (multi-line data joined by newlines), in
    batches: every event complete after one network read comes in one list, so a fast upstream's
    burst is handled (and forwarded) at once instead of event by event."""
    pending = b""
    data: list[bytes] = []
    async for block in response.content.iter_any():
        lines = (pending + block).split(b"\n")
        pending = lines.pop()
        ready: list[bytes] = []
        for raw in lines:
            line = raw.rstrip(b"\r")
            if not line:
                if data:
                    ready.append(b"\n".join(data))
                    data = []
            elif line.startswith(b"data:"):
                data.append(line[6:] if line[5:6] == b" " else line[5:])
        if ready:
            yield ready
    if pending.startswith(b"data:"):
        data.append(pending[6:] if pending[5:6] == b" " else pending[5:])
    if data:
        yield [b"\n".join(data)]


class HttpPool:
    """A lazily created, shared `aiohttp.ClientSession`."""

    def __init__(self, *, connect_timeout_s: float = 10.0, read_timeout_s: float = 120.0) -> None:
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout_s, sock_read=read_timeout_s)
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30, enable_cleanup_closed=True)
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                json_serialize=lambda v: orjson.dumps(v).decode(),
                # Every caller shares this session: a cookie the upstream sets answering one caller
                # must not ride along with the next caller's request (and keeping none skips the
                # jar's per-request filtering).
                cookie_jar=aiohttp.DummyCookieJar(),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()

    @asynccontextmanager
    async def post(
        self, url: str, body: Any, headers: dict[str, str], *, timeout_s: float | None = None
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """POST JSON; yields the response (any status). Transport failures become `UpstreamError`s."""
        data = orjson.dumps(body)
        headers = {**headers, "content-type": "application/json"}
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=timeout_s) if timeout_s else None
        for attempt in (1, 2):
            try:
                async with self.session().post(url, data=data, headers=headers, timeout=timeout) as response:
                    yield response
                    return
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                if attempt == 2 or isinstance(exc, aiohttp.ClientConnectorError):
                    raise UpstreamError(
                        502, f"could not reach the upstream model server ({type(exc).__name__})"
                    ) from None
            except TimeoutError:
                raise UpstreamError(504, "the upstream model server did not answer in time") from None
            except aiohttp.ClientError as exc:
                raise UpstreamError(
                    502, f"the connection to the upstream model server failed ({type(exc).__name__})"
                ) from None


async def raise_for_status(response: aiohttp.ClientResponse) -> None:
    """Turn a non-200 upstream response into our error, with the upstream's own message."""
    if response.status != 200:
        raise await status_error(response)


async def status_error(response: aiohttp.ClientResponse) -> UpstreamError:
    """Our error for a non-200 upstream response: its status mapped, its own message and error
    object kept (`UpstreamError.detail`, `.fields`)."""
    raw = await response.read()
    detail = raw.decode("utf-8", "replace")[:2000]
    fields: dict[str, Any] | None = None
    try:
        parsed = orjson.loads(raw)
        error = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(error, dict):
            detail, fields = str(error.get("message") or detail), error
        elif isinstance(error, str):
            detail = error
    except orjson.JSONDecodeError:
        pass
    return upstream_error(response.status, detail, retry_after=response.headers.get("retry-after"), fields=fields)


def stream_error(payload: Event) -> GatewayError:
    """An `error` received mid-stream, as our error (its type kept)."""
    error: dict[str, Any] = payload["error"] if isinstance(payload.get("error"), dict) else {}
    kind = str(error.get("type") or "api_error")
    status = {"overloaded_error": 529, "rate_limit_error": 429, "invalid_request_error": 400}.get(kind, 500)
    return UpstreamError(status, str(error.get("message") or "the upstream stream failed"), error_type=kind)
