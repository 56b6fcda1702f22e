"""The gateway's front door: the caller is admitted from the headers alone (key, credits, rate)
before any of the body is read, a declared length over GATEWAY_MAX_BODY_MB is refused unread, and
token counting sits under the per-user limits. The attack these close: key-less connections that
each declare a 31 MB body made the server read (and hold) every one of them before asking for a key.
Driven through the application itself (ASGI, counting every read of the body) and over real
sockets."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from typing import Any

import pytest
from tests.api.conftest import live_server
from tests.api.gateway_support import gateway

from almanac.main import create_app

MESSAGES = [{"role": "user", "content": "hello"}]
CHUNK = b"x" * 65_536


class Endless:
    """An ASGI `receive` that sends body chunks forever and counts how often it was asked."""

    def __init__(self) -> None:
        self.reads = 0

    async def __call__(self) -> dict[str, Any]:
        self.reads += 1
        return {"type": "http.request", "body": CHUNK, "more_body": True}


async def call(app: Any, path: str, headers: dict[str, str], receive: Callable[[], Any]) -> tuple[int, dict[str, Any]]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
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
    return sent[0]["status"], json.loads(body)


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/messages/count_tokens"])
@pytest.mark.parametrize("key", [None, "alm_not_a_real_key_000000000000000"])
async def test_a_keyless_or_bad_key_request_is_refused_before_any_of_its_body_is_read(
    sqlite_url: str, path: str, key: str | None
) -> None:
    async with gateway(sqlite_url) as gw:
        app = create_app(gw.services.settings, gw.services)
        headers = {"content-type": "application/json", "content-length": "31000000"}
        if key:
            headers["x-api-key"] = key
        body = Endless()
        status, error = await call(app, path, headers, body)
    assert status == 401 and error["error"]["type"] == "authentication_error"
    assert body.reads == 0


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/messages/count_tokens"])
async def test_a_declared_body_over_the_limit_is_refused_unread_even_with_a_good_key(
    sqlite_url: str, path: str
) -> None:
    async with gateway(sqlite_url, gateway_max_body_mb=1) as gw:
        app = create_app(gw.services.settings, gw.services)
        body = Endless()
        status, error = await call(app, path, {"x-api-key": gw.key, "content-length": "1000001"}, body)
    assert status == 413 and error["error"]["type"] == "request_too_large"
    assert "GATEWAY_MAX_BODY_MB" in error["error"]["message"]
    assert body.reads == 0


async def test_an_undeclared_body_is_read_only_up_to_the_limit(sqlite_url: str) -> None:
    async with gateway(sqlite_url, gateway_max_body_mb=1) as gw:
        app = create_app(gw.services.settings, gw.services)
        body = Endless()  # chunked: no length declared, never ends
        status, error = await call(app, "/v1/messages", {"x-api-key": gw.key}, body)
    assert status == 413 and error["error"]["type"] == "request_too_large"
    assert body.reads * len(CHUNK) <= 1_000_000 + len(CHUNK)


async def test_a_body_within_the_limit_is_answered(sqlite_url: str) -> None:
    async with gateway(sqlite_url, gateway_max_body_mb=1) as gw:
        long = [{"role": "user", "content": "word " * 150_000}]  # 750 kB
        reply = await gw.client.messages.create(model="claude-haiku-4-5", max_tokens=20, messages=long)  # type: ignore[arg-type]
        assert reply.type == "message"


def _whole_response(connection: socket.socket) -> bytes:
    """An HTTP response's head and its Content-Length of body (they may come in separate reads)."""
    answer = b""
    while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < _content_length(answer):
        chunk = connection.recv(65_536)
        if not chunk:
            break
        answer += chunk
    return answer


def _content_length(answer: bytes) -> int:
    head = answer.partition(b"\r\n\r\n")[0].lower()
    for line in head.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


def test_ten_keyless_connections_declaring_31_mb_each_are_answered_without_sending_a_byte(sqlite_url: str) -> None:
    """Over real sockets: each connection sends only its headers; the server answers 401 at once
    instead of waiting for (and holding) 31 MB per connection."""

    async def prepare() -> Any:
        cm = gateway(sqlite_url)
        gw = await cm.__aenter__()
        return cm, gw

    cm, gw = asyncio.run(prepare())
    try:
        with live_server(create_app(gw.services.settings, gw.services)) as address:
            connections = [socket.create_connection(address, timeout=20) for _ in range(10)]
            head = b"POST /v1/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            for connection in connections:
                connection.sendall(head + b"Content-Length: 31000000\r\n\r\n")
            answers = [_whole_response(connection) for connection in connections]
            for connection in connections:
                connection.close()
    finally:
        asyncio.run(cm.__aexit__(None, None, None))
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 401 "), answer[:100]
        assert b'"authentication_error"' in answer


@pytest.mark.parametrize(
    "model",
    ["evil\x00model", "claude\u200bsonnet", "claude-sonnet\n", " claude-sonnet", "claude-\x1b[31msonnet", "s" * 201],
)
async def test_a_model_name_that_is_not_printable_text_is_a_400(sqlite_url: str, model: str) -> None:
    async with gateway(sqlite_url) as gw:
        for path in ("/v1/messages", "/v1/messages/count_tokens"):
            response = await gw.http.post(
                path, json={"model": model, "max_tokens": 5, "messages": MESSAGES}, headers={"x-api-key": gw.key}
            )
            assert response.status_code == 400, (path, response.text)
            error = response.json()
            assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
            assert error["error"]["message"].startswith("model: ")
        assert await gw.usage() == []


@pytest.mark.parametrize(
    "model", ["claude-sonnet-4-6", "anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-sonnet@2025"]
)
async def test_real_model_names_pass(sqlite_url: str, model: str) -> None:
    async with gateway(sqlite_url) as gw:
        reply = await gw.client.messages.create(model=model, max_tokens=5, messages=MESSAGES)  # type: ignore[arg-type]
        assert reply.model == model


async def test_count_tokens_is_rate_limited_per_user_in_a_budget_of_its_own(sqlite_url: str) -> None:
    async with gateway(sqlite_url, rate_limit_free_per_min=2) as gw:
        headers = {"x-api-key": gw.key}
        body = {"model": "claude-sonnet-4-6", "messages": MESSAGES}
        for _ in range(2):
            assert (await gw.http.post("/v1/messages/count_tokens", json=body, headers=headers)).status_code == 200
        refused = await gw.http.post("/v1/messages/count_tokens", json=body, headers=headers)
        assert refused.status_code == 429 and refused.json()["error"]["type"] == "rate_limit_error"
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        # Counting did not spend the budget of the requests that do the work.
        work = await gw.client.messages.create(model="claude-haiku-4-5", max_tokens=5, messages=MESSAGES)  # type: ignore[arg-type]
        assert work.type == "message"
