"""Scale-out: two real `almanac serve` processes on different ports share one PostgreSQL database
and serve the same users at once. Conversation IDs and item IDs never collide or interleave,
credits never overspend, and every user's ledger sums to their balance."""

import asyncio
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support import clean_environment, wait_ready

from almanac.auth.service import AccountService
from almanac.billing.ledger import CreditService
from almanac.storage.db import Database

USERS = 3
SHARED_MESSAGES = 6  # per user, concurrently on one conversation
NEW_CONVERSATIONS = 10  # per user: with the shared conversation's first query, more than 50 credits


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def servers(postgres_url: str, tmp_path: Path) -> Iterator[list[str]]:
    environment = clean_environment()
    environment.update(
        DATABASE_URL=postgres_url,
        LOCAL_USER="false",
        MCP_ENABLED="false",
        OFFLINE_TOKEN_DELAY_MS="0",
        DOCS_AUTO_INDEX="false",
        SUMMARY_WAIT_S="2",
        LOG_LEVEL="WARNING",
    )
    ports = [free_port(), free_port()]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "almanac.cli", "serve", "--port", str(port)],
            cwd=tmp_path,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for port in ports
    ]
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        for url, process in zip(urls, processes, strict=True):
            wait_ready(process, url, timeout_s=240)
        yield urls
    finally:
        for process in processes:
            process.send_signal(signal.SIGINT)
        for process in processes:
            _, errors = process.communicate(timeout=30)
            assert "Traceback" not in errors, errors


async def post(http: httpx.AsyncClient, url: str, key: str, body: dict[str, Any]) -> tuple[str, int, dict[str, Any]]:
    response = await http.post(f"{url}/api/chat", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    return url, response.status_code, response.json()


async def test_two_processes_on_one_database_serve_the_same_users_at_once(
    servers: list[str], postgres_url: str
) -> None:
    database = Database(postgres_url)
    try:
        accounts = AccountService(database)
        users = [await accounts.create_user(email=f"u{i}@example.com", plan="free") for i in range(USERS)]
        async with httpx.AsyncClient() as http:
            shared: dict[str, str] = {}
            for user in users:  # one conversation per user, shared by concurrent requests below
                _, status, body = await post(http, servers[0], user.api_key, {"message": "first question: a long tour"})
                assert status == 200
                shared[user.user.id] = body["conversation_id"]
            requests = []
            for user in users:
                for i in range(SHARED_MESSAGES):
                    message = "Show me the full answer from earlier" if i % 2 else f"shared question {i}: a long tour"
                    body = {"message": message, "conversation_id": shared[user.user.id]}
                    requests.append((user, post(http, servers[i % 2], user.api_key, body)))
                for i in range(NEW_CONVERSATIONS):
                    body = {"message": f"q{i}: a long tour"}
                    requests.append((user, post(http, servers[(i + 1) % 2], user.api_key, body)))
            results = await asyncio.gather(*(request for _, request in requests))

            statuses = Counter(status for _, status, _ in results)
            assert set(statuses) <= {200, 402, 409}, statuses
            assert statuses[402] > 0 and statuses[200] > 0
            served_by = {url for url, status, _ in results if status == 200}
            assert served_by == set(servers)  # both processes did work
            for _, status, body in results:
                if status == 402:
                    assert body["error"]["code"] == "insufficient_credits"

            ok = [(user, body) for (user, _), (_, status, body) in zip(requests, results, strict=True) if status == 200]
            answers = [(body["conversation_id"], body["message_id"]) for _, body in ok]
            assert len(answers) == len(set(answers))  # no two answers share an ID
            for user in users:
                key = {"Authorization": f"Bearer {user.api_key}"}
                await check_conversations(http, servers, key)
                spent = 5 + sum(body["credits_used"] for owner, body in ok if owner is user)
                credits = (await http.get(f"{servers[1]}/api/credits", headers=key)).json()
                assert credits["balance"] >= 0 and credits["balance"] == 50 - spent  # never overspent
                sums = await CreditService(database).ledger_sums(user_id=user.user.id)
                assert sums.get("daily", 0) == credits["buckets"]["daily"]
                assert sums.get("pack", 0) == credits["buckets"]["pack"]
    finally:
        await database.dispose()


async def check_conversations(http: httpx.AsyncClient, servers: list[str], key: dict[str, str]) -> None:
    """Each conversation's items are q1..qN, each query complete, and queries never interleave."""
    listing = (await http.get(f"{servers[0]}/api/conversations?limit=100", headers=key)).json()
    for conversation in listing["data"]:
        detail = (await http.get(f"{servers[1]}/api/conversations/{conversation['id']}", headers=key)).json()
        ids = [item["id"] for item in detail["full"]]
        numbers = [int(item_id[1:].split("-")[0]) for item_id in ids]
        assert numbers == sorted(numbers), ids  # one query's items never interleave with another's
        count = conversation["query_count"]
        assert sorted(set(numbers)) == list(range(1, count + 1)), ids
        for number in range(1, count + 1):
            assert f"q{number}" in ids and f"q{number}-r" in ids, ids
        assert len(ids) == len(set(ids)), ids
