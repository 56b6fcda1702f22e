"""Graceful shutdown of a real `almanac serve` process: on SIGTERM it stops accepting connections;
answers and streams that finish within SHUTDOWN_GRACE_S complete normally; those still running at
the deadline are stopped — each chat stream ends with an `error` event (then `message_end` with what
was said), each gateway stream with an Anthropic `error` event. Afterwards every ledger sums to its
balance, no conversation is left leased, and every started query has its answer stored."""

from __future__ import annotations

import asyncio
import json
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
from sqlalchemy import text
from tests.support import clean_environment, wait_ready

from almanac.auth.service import AccountService, NewUser
from almanac.billing.ledger import CreditService
from almanac.storage.db import Database

ASK = {"message": "Give me a long tour"}  # a long answer the offline model gives (and charges for) without tools
GATEWAY = {
    "model": "claude-haiku-4-5",
    "max_tokens": 64,
    "stream": True,
    "messages": [{"role": "user", "content": "hi"}],
}
CHATS = 3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    def __init__(self, postgres_url: str, folder: Path, **settings: str) -> None:
        environment = clean_environment()
        environment.update(
            DATABASE_URL=postgres_url,
            LOCAL_USER="false",
            MCP_ENABLED="false",
            DOCS_AUTO_INDEX="false",
            SUMMARY_WAIT_S="0",
            LOG_LEVEL="INFO",
            **settings,
        )
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "almanac.cli", "serve", "--port", str(self.port)],
            cwd=folder,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_ready(self.process, self.url, timeout_s=240)

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        return self.process.communicate(timeout=60)[1]


@pytest.fixture
def start(postgres_url: str, tmp_path: Path) -> Iterator[Any]:
    started: list[Server] = []

    def make(**settings: str) -> Server:
        started.append(Server(postgres_url, tmp_path, **settings))
        return started[-1]

    yield make
    for server in started:
        server.stop()


def events_of(body: str) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for frame in body.replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in frame.split("\n") if line and not line.startswith(":")]
        name = next((line[7:] for line in lines if line.startswith("event: ")), None)
        data = "\n".join(line[6:] for line in lines if line.startswith("data: "))
        if name and data:
            found.append((name, json.loads(data)))
    return found


async def stream(http: httpx.AsyncClient, request: httpx.Request, started: asyncio.Event) -> list[tuple[str, Any]]:
    """Read a whole SSE response; `started` is set once its text has begun."""
    body = ""
    response = await http.send(request, stream=True)
    assert response.status_code == 200
    async for chunk in response.aiter_text():
        body += chunk
        if "text_delta" in body or "content_block_delta" in body:
            started.set()
    return events_of(body)


async def run_streams(server: Server, users: list[NewUser], *, then: Any) -> list[list[tuple[str, Any]]]:
    """Open one chat stream per user and one gateway stream, wait until all are answering, call
    `then()`, and return every stream's events once they end."""
    async with httpx.AsyncClient(timeout=120) as http:
        requests = [
            http.build_request(
                "POST", f"{server.url}/api/chat/stream", json=ASK, headers={"Authorization": f"Bearer {user.api_key}"}
            )
            for user in users
        ]
        requests.append(
            http.build_request(
                "POST", f"{server.url}/v1/messages", json=GATEWAY, headers={"x-api-key": users[0].api_key}
            )
        )
        flags = [asyncio.Event() for _ in requests]
        readers = [
            asyncio.create_task(stream(http, request, flag)) for request, flag in zip(requests, flags, strict=True)
        ]
        await asyncio.wait_for(asyncio.gather(*(flag.wait() for flag in flags)), timeout=90)
        await then()
        return list(await asyncio.gather(*readers))


async def new_users(postgres_url: str, count: int) -> list[NewUser]:
    database = Database(postgres_url)
    try:
        accounts = AccountService(database)
        return [
            await accounts.create_user(email=f"u{i}-{os.urandom(4).hex()}@example.com", plan="pro")
            for i in range(count)
        ]
    finally:
        await database.dispose()


async def check_nothing_half_written(postgres_url: str, users: list[NewUser], *, answer_status: str) -> None:
    database = Database(postgres_url)
    try:
        credits = CreditService(database)
        for user in users:
            ledger = sum((await credits.ledger_sums(user_id=user.user.id)).values())
            assert ledger == await credits.balance(user_id=user.user.id)
        ids = [user.user.id for user in users]
        async with database.session() as session:
            leased = await session.execute(
                text("SELECT count(*) FROM conversations WHERE lock_token IS NOT NULL AND user_id = ANY(:ids)"),
                {"ids": ids},
            )
            assert leased.scalar_one() == 0
            answers = await session.execute(
                text(
                    "SELECT h.item_id, h.status FROM history_items h JOIN conversations c ON c.id = h.conversation_id "
                    "WHERE c.user_id = ANY(:ids) AND h.item_id IN ('q1', 'q1-r')"
                ),
                {"ids": ids},
            )
            rows = answers.all()
            assert sorted(item for item, _ in rows) == ["q1"] * CHATS + ["q1-r"] * CHATS
            assert {status for item, status in rows if item == "q1-r"} == {answer_status}
            usage = await session.execute(
                text("SELECT count(*) FROM gateway_usage WHERE user_id = :id"), {"id": users[0].user.id}
            )
            assert usage.scalar_one() == 1  # the gateway stream was recorded (flushed at shutdown)
    finally:
        await database.dispose()


async def refuses_connections(url: str) -> bool:
    """Whether new requests stop being served: refused, or (a connection the kernel had already queued when
    the listening socket closed) reset or closed before any response."""
    for _ in range(100):  # bounded: uvicorn notices the signal within a tenth of a second or so
        try:
            async with httpx.AsyncClient(timeout=2) as http:
                await http.get(f"{url}/health")
        except (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_answers_that_finish_within_the_grace_period_complete_normally(start: Any, postgres_url: str) -> None:
    server = start(OFFLINE_TOKEN_DELAY_MS="4", SHUTDOWN_GRACE_S="60")  # 680 words: about 3 s
    users = await new_users(postgres_url, CHATS)
    refused: list[bool] = []

    async def terminate() -> None:
        server.process.send_signal(signal.SIGTERM)
        refused.append(await refuses_connections(server.url))

    streams = await run_streams(server, users, then=terminate)
    assert refused == [True]  # it stopped accepting at once, while the answers went on
    for events in streams[:CHATS]:
        names = [name for name, _ in events]
        assert "error" not in names and names[-1] == "message_end", names
        assert events[-1][1]["stop_reason"] == "end_turn"
    gateway = [name for name, _ in streams[CHATS]]
    assert gateway[-1] == "message_stop" and "error" not in gateway
    server.process.wait(timeout=60)
    assert "Traceback" not in server.stop()
    await check_nothing_half_written(postgres_url, users, answer_status="done")


async def test_answers_still_running_at_the_deadline_are_stopped_stored_and_billed(
    start: Any, postgres_url: str
) -> None:
    server = start(OFFLINE_TOKEN_DELAY_MS="400", SHUTDOWN_GRACE_S="1")
    users = await new_users(postgres_url, CHATS)

    async def terminate() -> None:
        server.process.send_signal(signal.SIGTERM)

    streams = await run_streams(server, users, then=terminate)
    for events in streams[:CHATS]:
        names = [name for name, _ in events]
        assert names[-2:] == ["error", "message_end"], names
        error, end = events[-2][1], events[-1][1]
        assert error["code"] == "server_shutting_down" and error["refunded"] is False
        said = "".join(data["text"] for name, data in events if name == "text_delta")
        assert end["stop_reason"] == "error" and end["response"].startswith(said) and said
    gateway = streams[CHATS]
    assert gateway[-1][0] == "error" and gateway[-1][1]["error"]["type"] == "overloaded_error"
    server.process.wait(timeout=60)
    log = server.stop()
    assert "Traceback" not in log and "stopped 4 answers and streams" in log
    await check_nothing_half_written(postgres_url, users, answer_status="interrupted")
