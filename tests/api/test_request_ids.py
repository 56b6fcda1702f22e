"""Request IDs: every response has `X-Request-ID` (a sane incoming one kept, anything else replaced),
every JSON error body has it in `error.request_id` whoever wrote the error, and every log line
written while a request is handled carries it — in the served process too, in JSON."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support import api_client, make_user, wait_ready

from almanac.main import create_app
from almanac.ops.log_format import TextFormatter


async def test_each_response_has_an_id_and_a_sane_incoming_one_is_kept(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url)
    async with api_client(services, settings) as http:
        first, second = (
            (await http.get("/health")).headers["x-request-id"],
            (await http.get("/health")).headers["x-request-id"],
        )
        assert first != second and len(first) == 32
        kept = await http.get("/health", headers={"X-Request-ID": "lb-7f3a:trace=42"})
        assert kept.headers["x-request-id"] == "lb-7f3a:trace=42"
        for forged in ("two words", "x" * 200, 'quote"d', "ok\tno"):
            replaced = await http.get("/health", headers={"X-Request-ID": forged})
            assert replaced.headers["x-request-id"] != forged and len(replaced.headers["x-request-id"]) == 32


async def test_every_json_error_carries_the_request_id_whoever_wrote_it(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url, max_message_chars=100)
    user = await make_user(services)
    async with api_client(services, settings) as http:
        key = {"Authorization": f"Bearer {user.api_key}"}
        answers = [
            await http.get("/api/credits"),  # 401: a dependency
            await http.get("/api/conversations/0b3ad7a4-7f9c-4c1e-9a55-3d0c1f4e2a11", headers=key),  # 404: a route
            await http.post("/api/chat", json={"message": 7}, headers=key),  # 422: validation
            await http.delete("/api/credits", headers=key),  # 405
            await http.post("/api/chat", content=b"x" * 200_000, headers={**key, "content-type": "application/json"}),
            await http.get("/health", headers={"Host": "evil.example"}),  # 400: the host guard, before routing
            await http.post("/v1/messages", json={}),  # 401 in Anthropic's shape, from the bare-ASGI gateway
        ]
        assert [answer.status_code for answer in answers] == [401, 404, 422, 405, 413, 400, 401]
        for answer in answers:
            assert answer.json()["error"]["request_id"] == answer.headers["x-request-id"], answer.text
            assert int(answer.headers["content-length"]) == len(answer.content)
        traced = await http.get("/api/credits", headers={"X-Request-ID": "client-trace-1"})
        assert traced.json()["error"]["request_id"] == "client-trace-1"
        ok = await http.get("/api/credits", headers=key)
        assert "request_id" not in ok.json()  # successes are left as they are


async def test_log_lines_written_during_a_request_carry_its_id_also_from_tasks_it_starts(
    sqlite_url: str, build: Any
) -> None:
    services, settings = build(sqlite_url)
    app = create_app(settings, services)
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Collect()
    handler.setFormatter(TextFormatter())
    logger = logging.getLogger("almanac.test.request_ids")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    async def background() -> None:
        await asyncio.sleep(0)
        logger.info("from a task")

    @app.get("/test-logging")
    async def logging_route() -> dict[str, str]:
        logger.info("in the route")
        await asyncio.create_task(background())
        return {}

    app.router.routes.insert(0, app.router.routes.pop())  # before the web UI's catch-all
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            await http.get("/test-logging", headers={"X-Request-ID": "req-abc"})
            await http.get("/test-logging")
        logger.info("outside")
    finally:
        logger.removeHandler(handler)
    assert [line.split(" ", 3)[3] for line in lines[:2]] == [
        "almanac.test.request_ids [req-abc] in the route",
        "almanac.test.request_ids [req-abc] from a task",
    ]
    other = lines[2].split("[", 1)[1].split("]", 1)[0]
    assert other != "req-abc" and len(other) == 32 and lines[4].endswith("[-] outside")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.timeout(120)
def test_the_served_process_writes_json_lines_each_with_the_request_id(tmp_path: Path) -> None:
    port = _free_port()
    env = {
        **os.environ,
        "DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'almanac.db'}",
        "LOCAL_USER": "false",
        "MCP_ENABLED": "false",
        "DOCS_AUTO_INDEX": "false",
        "EMBEDDINGS": "none",
        "CHAT_PROVIDER": "offline",
        "ANTHROPIC_API_KEY": "sk-ant-api03-THIS-MUST-NOT-BE-LOGGED",
        "LOG_FORMAT": "json",
        "LOG_LEVEL": "INFO",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "almanac.cli", "serve", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_ready(process, f"http://127.0.0.1:{port}")
        answer = httpx.get(f"http://127.0.0.1:{port}/api/credits", headers={"X-Request-ID": "json-log-test-1"})
        assert answer.status_code == 401 and answer.headers["x-request-id"] == "json-log-test-1"
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=60)
    entries = [json.loads(line) for line in output.splitlines() if line.strip()]  # every line is one JSON object
    assert all(set(entry) >= {"time", "level", "logger", "message", "request_id"} for entry in entries)
    access = [entry for entry in entries if entry["logger"] == "uvicorn.access" and "/api/credits" in entry["message"]]
    assert len(access) == 1 and access[0]["request_id"] == "json-log-test-1" and "401" in access[0]["message"]
    assert any(entry["message"].startswith("Almanac configuration") for entry in entries)
    assert "THIS-MUST-NOT-BE-LOGGED" not in output
