"""Admission: every route that takes a body and needs a signed-in caller refuses a caller without
(valid) credentials from the headers alone — the same 401 the route gives — before reading a byte
of the body. Without it FastAPI reads (and holds) the whole body, up to the size limit, first.
Driven through the application, with a body that never ends and counts how often it is read."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from tests.support import make_user

from almanac.main import create_app

CHUNK = b" " * 65_536


class Endless:
    def __init__(self) -> None:
        self.reads = 0

    async def __call__(self) -> dict[str, Any]:
        self.reads += 1
        return {"type": "http.request", "body": CHUNK, "more_body": True}


async def call(app: Any, method: str, path: str, headers: dict[str, str], receive: Any) -> tuple[int, Any]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"localhost"), *((k.lower().encode(), v.encode()) for k, v in headers.items())],
        "client": ("127.0.0.1", 5000),
        "server": ("localhost", 80),
    }
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], json.loads(body) if body else None


def authenticated_routes_with_a_body(app: Any) -> list[tuple[str, str]]:
    """(method, path) of every operation that needs a signed-in caller and takes a body."""
    found = []
    for template, operations in app.openapi()["paths"].items():
        for method, operation in operations.items():
            if "requestBody" in operation and operation.get("security"):
                found.append((method.upper(), re.sub(r"\{[^}]+\}", "00000000-0000-4000-8000-000000000000", template)))
    return found


CREDENTIALS = [
    {},
    {"authorization": "Bearer alm_not_a_real_key_000000000000000000"},
    {"authorization": "Basic dXNlcjpwYXNz"},
    {"cookie": "almanac_session=not-a-session-token-at-all-000000", "origin": "http://localhost"},
]


@pytest.mark.parametrize("credentials", CREDENTIALS)
async def test_no_route_reads_a_body_before_the_caller_is_known(
    sqlite_url: str, build: Any, credentials: dict[str, str]
) -> None:
    services, settings = build(sqlite_url)
    app = create_app(settings, services)
    routes = authenticated_routes_with_a_body(app)
    assert len(routes) >= 10  # chat ×2, keys, conversations, discussions, admin, billing, integrations…
    for method, path in routes:
        body = Endless()
        headers = {"content-type": "application/json", "content-length": "400000", **credentials}
        status, error = await call(app, method, path, headers, body)
        assert (status, error["error"]["code"]) == (401, "unauthorized"), (method, path, credentials, error)
        assert body.reads == 0, (method, path, credentials)


async def test_a_known_caller_is_looked_up_once_and_the_route_runs(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url)
    user = await make_user(services)
    looked_up: list[str] = []
    identify = services.accounts.identify

    async def counting(key: str) -> Any:
        looked_up.append(key)
        return await identify(key)

    services.accounts.identify = counting  # type: ignore[method-assign]
    app = create_app(settings, services)
    sent = json.dumps({"name": "laptop"}).encode()
    chunks = [{"type": "http.request", "body": sent, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    headers = {"authorization": f"Bearer {user.api_key}", "content-type": "application/json"}
    status, created = await call(app, "POST", "/api/keys", {**headers, "content-length": str(len(sent))}, receive)
    assert status == 201, created
    assert created["name"] == "laptop" and looked_up == [user.api_key]
