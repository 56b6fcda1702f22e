"""Helpers for gateway tests: the app with its services, a user, and the official anthropic SDK as
the client (in-process through httpx's ASGI transport)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anthropic
import httpx2
from tests.support import make_user, services_for

from almanac.main import create_app
from almanac.services import Services
from almanac.storage import gateway as usage_store
from almanac.storage.gateway import GatewayUsageRecord


@dataclass
class Gateway:
    services: Services
    client: anthropic.AsyncAnthropic
    http: httpx2.AsyncClient
    key: str
    user_id: str
    app: Any = None

    async def usage(self) -> list[GatewayUsageRecord]:
        """Recorded usage rows, newest first (after flushing the recorder)."""
        assert self.services.gateway is not None
        await self.services.gateway.recorder.flush()
        async with self.services.database.session() as session:
            return await usage_store.recent_usage(session, user_id=self.user_id)


@asynccontextmanager
async def gateway(url: str, *, planner: Any = None, **settings: Any) -> AsyncIterator[Gateway]:
    """The app on database `url` with `settings`, a user, and an SDK client using the user's key."""
    services, config = services_for(url, **settings)
    if planner is not None:
        assert services.gateway is not None and services.gateway.boost is not None
        services.gateway.boost = replace(services.gateway.boost, planner=planner)
    created = await make_user(services)
    app = create_app(config, services)
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://localhost", timeout=30)
    client = anthropic.AsyncAnthropic(
        api_key=created.api_key, base_url="http://localhost", http_client=http, max_retries=0
    )
    try:
        yield Gateway(services, client, http, created.api_key, created.user.id, app)
    finally:
        await http.aclose()
        if services.gateway is not None:
            await services.gateway.close()
        await services.database.dispose()


CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"


def claude_code_request(name: str, **changes: Any) -> tuple[dict[str, str], dict[str, Any]]:
    """A request Claude Code 2.1 really sent (captured, trimmed: tests/fixtures/claude_code/), as
    (headers, body); `changes` replace top-level body fields."""
    capture = json.loads((CAPTURES / f"{name}.json").read_text())
    return dict(capture["headers"]), {**capture["body"], **changes}


async def send_raw(gw: Gateway, headers: dict[str, str], body: dict[str, Any]) -> httpx2.Response:
    """POST a raw body to /v1/messages with the user's key (as Claude Code sends it); a streamed
    answer is read to its end."""
    return await gw.http.post("/v1/messages?beta=true", json=body, headers={**headers, "x-api-key": gw.key})


def sse(text: str) -> list[dict[str, Any]]:
    """The JSON events of an SSE body."""
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


async def asgi_stream(
    gw: Gateway, body: dict[str, Any], on_chunk: Callable[[bytes], None], headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """POST /v1/messages straight to the ASGI app (httpx's ASGI transport hands over a response only
    once it is complete): `on_chunk` sees each body chunk the moment the app sends it. Returns the
    status and the whole body."""
    raw = json.dumps(body).encode()
    sent = False
    status = 0
    chunks: list[bytes] = []
    finished = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            if message.get("body"):
                chunks.append(message["body"])
                on_chunk(message["body"])
            if not message.get("more_body"):
                finished.set()

    request_headers = {"content-type": "application/json", "x-api-key": gw.key, **(headers or {})}
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/messages",
        "raw_path": b"/v1/messages",
        "query_string": b"",
        "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in request_headers.items()] + [(b"host", b"localhost")],
        "client": ("127.0.0.1", 1234),
        "server": ("localhost", 80),
    }
    await gw.app(scope, receive, send)
    return status, b"".join(chunks)
