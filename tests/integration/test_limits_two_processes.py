"""Limits across processes: two real `almanac serve` processes share one PostgreSQL and the Redis that
runs here. A user's requests per minute and open streams are counted once across both (chat and
/v1/messages together), refused requests cost nothing, and a process that dies holding a stream's
slot does not hold it for longer than STREAM_SLOT_TTL_S."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.ops_support import redis_url
from tests.support import clean_environment, wait_ready

from almanac.auth.service import AccountService, NewUser
from almanac.billing.ledger import CreditService
from almanac.storage.db import Database

ASK = {"message": "How do I cancel an asyncio task?"}
GATEWAY = {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hello"}]}
SLOT_TTL_S = 5  # renewed every 1.7 s: a dead process's slot lives 3.3 to 5 s after its death


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def servers(postgres_url: str, tmp_path: Path) -> Iterator[list[tuple[str, subprocess.Popen[str]]]]:
    environment = clean_environment()
    environment.update(
        DATABASE_URL=postgres_url,
        REDIS_URL=redis_url(),
        RATE_LIMIT_FREE_PER_MIN="4",
        RATE_LIMIT_PRO_PER_MIN="1000",
        MAX_CONCURRENT_STREAMS="2",
        STREAM_SLOT_TTL_S=str(SLOT_TTL_S),
        LOCAL_USER="false",
        MCP_ENABLED="false",
        OFFLINE_TOKEN_DELAY_MS="100",  # streams stay open for seconds
        DOCS_AUTO_INDEX="false",
        SUMMARY_WAIT_S="0",
        LOG_LEVEL="WARNING",
    )
    started = []
    for _ in range(2):
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "almanac.cli", "serve", "--port", str(port)],
            cwd=tmp_path,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append((f"http://127.0.0.1:{port}", process))
    try:
        for url, process in started:
            wait_ready(process, url, timeout_s=240)
        yield started
    finally:
        for _, process in started:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for _, process in started:
            _, errors = process.communicate(timeout=60)
            if process.returncode != -signal.SIGKILL:
                assert "Traceback" not in errors, errors


async def new_user(postgres_url: str, plan: str) -> NewUser:
    database = Database(postgres_url)
    try:
        return await AccountService(database).create_user(email=f"{plan}-{os.urandom(4).hex()}@example.com", plan=plan)
    finally:
        await database.dispose()


async def balance_and_ledger(postgres_url: str, user_id: str) -> tuple[int, int]:
    database = Database(postgres_url)
    try:
        credits = CreditService(database)
        return await credits.balance(user_id=user_id), sum((await credits.ledger_sums(user_id=user_id)).values())
    finally:
        await database.dispose()


async def test_a_users_requests_per_minute_are_counted_once_across_two_processes(
    servers: list[tuple[str, Any]], postgres_url: str
) -> None:
    (a, _), (b, _) = servers
    user = await new_user(postgres_url, "free")
    bearer = {"Authorization": f"Bearer {user.api_key}"}
    anthropic = {"x-api-key": user.api_key, "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient(timeout=60) as http:
        admitted = [
            (await http.post(f"{a}/api/chat", json=ASK, headers=bearer)).status_code,
            (await http.post(f"{b}/v1/messages", json=GATEWAY, headers=anthropic)).status_code,
            (await http.post(f"{b}/api/chat", json=ASK, headers=bearer)).status_code,
            (await http.post(f"{a}/v1/messages", json=GATEWAY, headers=anthropic)).status_code,
        ]
        assert admitted == [200, 200, 200, 200]
        refused = [
            await http.post(f"{a}/api/chat", json=ASK, headers=bearer),
            await http.post(f"{b}/api/chat/stream", json=ASK, headers=bearer),
            await http.post(f"{b}/v1/messages", json=GATEWAY, headers=anthropic),
        ]
    assert [r.status_code for r in refused] == [429, 429, 429]
    assert refused[0].json()["error"]["limit"] == "requests" and int(refused[0].headers["retry-after"]) >= 1
    assert refused[2].json()["error"]["type"] == "rate_limit_error" and int(refused[2].headers["retry-after"]) >= 1
    balance, ledger = await balance_and_ledger(postgres_url, user.user.id)
    # The chats were declined (no documentation index here: the offline model cannot answer), so free;
    # the refusals cost nothing either.
    assert balance == 50 and ledger == balance


async def open_stream(http: httpx.AsyncClient, url: str, key: str, *, gateway: bool) -> Any:
    if gateway:
        request = http.build_request(
            "POST", f"{url}/v1/messages", json={**GATEWAY, "stream": True}, headers={"x-api-key": key}
        )
    else:
        request = http.build_request(
            "POST", f"{url}/api/chat/stream", json=ASK, headers={"Authorization": f"Bearer {key}"}
        )
    response = await http.send(request, stream=True)
    if response.status_code == 200:
        body = response.aiter_bytes()
        await anext(body)  # streaming now
        response.extensions["kept"] = body  # a dropped iterator would close the stream
    else:
        await response.aread()
    return response


async def eventually_admitted(http: httpx.AsyncClient, url: str, key: str) -> Any:
    for _ in range(200):  # bounded: stops waiting, never a timing assertion
        response = await open_stream(http, url, key, gateway=False)
        if response.status_code == 200:
            return response
        await asyncio.sleep(0.1)
    raise AssertionError("a stream slot never came free")


async def test_open_streams_are_capped_across_processes_and_a_dead_processs_slots_expire(
    servers: list[tuple[str, Any]], postgres_url: str
) -> None:
    (a, process_a), (b, _) = servers
    user = await new_user(postgres_url, "pro")
    async with httpx.AsyncClient(timeout=60) as http:
        on_a = await open_stream(http, a, user.api_key, gateway=False)
        on_b = await open_stream(http, b, user.api_key, gateway=True)
        assert on_a.status_code == on_b.status_code == 200
        third = await open_stream(http, b, user.api_key, gateway=False)
        assert third.status_code == 429 and third.json()["error"]["limit"] == "streams"
        gateway_third = await open_stream(http, a, user.api_key, gateway=True)
        assert gateway_third.status_code == 429 and gateway_third.json()["error"]["type"] == "rate_limit_error"
        await on_b.aclose()  # B's stream ends: its slot is free for a stream on A
        replacement = await eventually_admitted(http, a, user.api_key)
        # A now holds both slots; it dies without giving them back
        process_a.send_signal(signal.SIGKILL)
        process_a.wait()
        for response in (on_a, replacement):
            await response.aclose()
        # B refuses while A's slots are still within their TTL, then admits once they expire
        assert (await open_stream(http, b, user.api_key, gateway=False)).status_code == 429
        assert (await eventually_admitted(http, b, user.api_key)).status_code == 200
