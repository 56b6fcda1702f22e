"""The request guards in front of every route: whatever a client puts in `Host`, `Origin`,
`Referer` or the cookie, the answer is the request passing on or a JSON refusal with a request ID —
never a crash. Fuzzed with hypothesis, directly on the parsing and through the application."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from starlette.types import Message, Receive, Scope, Send
from tests.support import make_user

from almanac.api.guards import HostRules, RequestGuard, same_origin, split_host
from almanac.main import create_app

ATTACKS = [
    "http://127.0.0.1:99999999999999999999",
    "http://127.0.0.1:43665.evil.example",
    "http://[::1",
    "http://[not-an-address]:80",
    "http://localhost:-1",
    "http://localhost:²",
    "http://localhost:" + "9" * 5000,
    "http://user:pass@localhost:0x50",
    "http:///",
    "\x00",
]
HEADER_TEXT = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=120)
ORIGINISH = st.one_of(
    HEADER_TEXT,
    st.builds(
        lambda scheme, host, port: f"{scheme}://{host}{port}",
        st.sampled_from(["http", "https", "ftp", "", "HTTP"]),
        st.sampled_from(["localhost", "127.0.0.1", "[::1]", "[::1", "evil.example", "", "0", "LOCALHOST."]),
        st.one_of(
            st.just(""), st.builds(lambda text: ":" + text, HEADER_TEXT), st.integers(-5, 10**25).map(lambda n: f":{n}")
        ),
    ),
)


@pytest.mark.parametrize("origin", ATTACKS)
def test_malformed_origins_are_never_ours_and_never_raise(origin: str) -> None:
    assert same_origin(origin, "127.0.0.1:43665") is False
    assert same_origin(origin, "localhost") is False


@given(origin=ORIGINISH, host=ORIGINISH)
@example(origin="http://localhost:8000", host="localhost:8000")
def test_origin_and_host_parsing_is_total(origin: str, host: str) -> None:
    same_origin(origin, host)  # an answer for any text, never an exception
    split_host(host)
    HostRules.parse(["localhost", "*.example.com", host]).allows(split_host(host)[0])


def test_a_well_formed_origin_of_this_server_is_ours() -> None:
    assert same_origin("http://localhost:8000", "localhost:8000")
    assert same_origin("http://[::1]:8000", "[::1]:8000")
    assert same_origin("https://chat.example.com", "chat.example.com:443")
    assert not same_origin("http://localhost:8001", "localhost:8000")


async def _answer(guard: RequestGuard, headers: list[tuple[bytes, bytes]], method: str = "POST") -> Message:
    scope: Scope = {"type": "http", "method": method, "path": "/api/chat", "headers": headers}
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await guard(scope, receive, send)
    return sent[0]


async def _app(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    host=ORIGINISH,
    origin=ORIGINISH,
    referer=ORIGINISH,
    cookie=st.one_of(st.just("almanac_session=abc"), HEADER_TEXT),
    authorization=st.one_of(st.just(""), HEADER_TEXT),
)
def test_the_guard_answers_any_headers_with_a_pass_or_a_json_refusal(
    host: str, origin: str, referer: str, cookie: str, authorization: str
) -> None:
    guard = RequestGuard(_app, hosts=HostRules.parse(["localhost", "127.0.0.1", "::1"]))
    headers = [
        (b"host", host.encode("latin-1")),
        (b"origin", origin.encode("latin-1")),
        (b"referer", referer.encode("latin-1")),
        (b"cookie", cookie.encode("latin-1")),
    ]
    if authorization:
        headers.append((b"authorization", authorization.encode("latin-1")))
    start = asyncio.run(_answer(guard, headers))
    assert start["status"] in (204, 400, 403, 431)
    if start["status"] != 204:
        assert (b"content-type", b"application/json") in start["headers"]


@pytest.mark.parametrize("origin", ATTACKS[:4])
async def test_a_malformed_origin_with_a_session_cookie_is_a_json_403_with_a_request_id(
    origin: str, sqlite_url: str, build: Any
) -> None:
    services, settings_ = build(sqlite_url)
    user = await make_user(services)
    transport = httpx.ASGITransport(app=create_app(settings_, services))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as browser:
        signed_in = await browser.post(
            "/api/auth/session", json={"api_key": user.api_key}, headers={"Origin": "http://localhost"}
        )
        assert signed_in.status_code == 200
        response = await browser.post("/api/chat", json={"message": "hi"}, headers={"Origin": origin})
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["code"] == "cross_origin_request"
    assert error["request_id"] == response.headers["x-request-id"]
