"""Request bodies over the limit get the documented 413 JSON — declared (`Content-Length`) or sent
chunked without a length — through a real HTTP server, not only the in-process transport."""

from __future__ import annotations

import json
from typing import Any

from tests.api.conftest import live_server, raw_request
from tests.support import api_client, make_user

from almanac.main import create_app

LIMIT_CHARS = 1_000  # MAX_MESSAGE_CHARS: the body limit is 12 bytes a character plus 64,000
BODY_LIMIT = LIMIT_CHARS * 12 + 64_000


def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


def post(path: str, key: str, extra_headers: str = "") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nConnection: close\r\n{extra_headers}\r\n"
    ).encode()


async def test_a_chunked_body_over_the_limit_is_a_413_through_a_real_server(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url, max_message_chars=LIMIT_CHARS)
    user = await make_user(services)
    filler = b"x" * 16_384
    body = b'{"message": "' + filler * (BODY_LIMIT // len(filler) + 2) + b'"}'
    with live_server(create_app(settings, services)) as address:
        status, headers, answer = raw_request(
            address, post("/api/chat", user.api_key, "Transfer-Encoding: chunked\r\n"), chunked(body)
        )
        assert status == 413 and headers["content-type"] == "application/json"
        assert json.loads(answer)["error"]["code"] == "body_too_large"
        declared = post("/api/chat", user.api_key, f"Content-Length: {len(body)}\r\n")
        status, _, answer = raw_request(address, declared, body)
        assert status == 413 and json.loads(answer)["error"]["code"] == "body_too_large"
        small = b'{"message": "a detailed tour"}'
        status, _, answer = raw_request(
            address, post("/api/chat", user.api_key, "Transfer-Encoding: chunked\r\n"), chunked(small[:7], small[7:])
        )
        assert status == 200 and json.loads(answer)["credits_used"] == 5
    async with api_client(services, settings, user.api_key) as http:
        assert (await http.get("/api/credits")).json()["balance"] == 45  # the refused bodies cost nothing


async def test_a_streamed_body_over_the_limit_is_a_413_in_process(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url, max_message_chars=LIMIT_CHARS)
    user = await make_user(services)

    async def pieces() -> Any:
        yield b'{"message": "'
        for _ in range(BODY_LIMIT // 10_000 + 2):
            yield b"y" * 10_000
        yield b'"}'

    async with api_client(services, settings, user.api_key) as http:
        response = await http.post("/api/chat", content=pieces(), headers={"content-type": "application/json"})
        assert response.status_code == 413 and response.json()["error"]["code"] == "body_too_large"
