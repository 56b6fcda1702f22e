"""`almanac serve --workers 2` as a real process tree on SQLite, with a fake OpenAI-compatible
upstream: both workers serve one port, a worker that dies is replaced, and on SIGTERM every worker
drains — the gateway usage each one queued is in the database when the server has exited."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.server import ServerThread
from tests.integration.test_gateway_serve import free_port
from tests.support import clean_environment, wait_ready

Served = tuple[str, str, subprocess.Popen[bytes], Path]


def workers_of(process: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The worker processes under `almanac serve` (not multiprocessing's resource tracker)."""
    found = []
    for child in psutil.Process(process.pid).children():
        try:
            if "multiprocessing.spawn" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:  # gone, or dead and not yet reaped by the server
            pass
    return found


def wait_for_workers(
    process: subprocess.Popen[bytes], count: int, *, but_not: frozenset[int] = frozenset(), timeout_s: float = 120
) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited"
        pids = [worker.pid for worker in workers_of(process) if worker.pid not in but_not]
        if len(pids) == count:
            return pids
        time.sleep(0.2)
    raise AssertionError(f"{count} workers did not come up")


def wait_for_log(path: Path, text: str, *, timeout_s: float = 120, times: int = 1) -> None:
    deadline = time.monotonic() + timeout_s
    while path.read_text(errors="replace").count(text) < times:
        assert time.monotonic() < deadline, f"{text!r} never logged"
        time.sleep(0.2)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    fake = FakeOpenAI(default=Reply(text="hello", prompt_tokens=7, completion_tokens=3))
    with ServerThread(fake.app) as upstream:
        port = free_port()
        environment = clean_environment("BOOST_")
        environment.update(
            OPENAI_BASE_URL=upstream.url + "/v1",
            CHAT_PROVIDER="offline",
            MCP_ENABLED="false",
            DOCS_AUTO_INDEX="false",
            EMBEDDINGS="none",
        )
        log = tmp_path / "serve.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "almanac.cli", "serve", "--port", str(port), "--workers", "2"],
                cwd=tmp_path,
                env=environment,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_ready(process, url, timeout_s=120)
            wait_for_log(log, "serving with 2 worker processes")
            key = (tmp_path / "data" / "local-api-key").read_text().strip()
            yield url, key, process, log
        finally:
            if process.poll() is None:
                process.kill()
                for worker in workers_of(process):
                    worker.kill()
                process.wait(30)


def ask(url: str, key: str, count: int) -> None:
    with httpx.Client(base_url=url, headers={"x-api-key": key, "anthropic-version": "2023-06-01"}) as http:
        for _ in range(count):
            response = http.post(
                "/v1/messages",
                json={"model": "claude-sonnet-4-6", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]},
            )
            assert response.status_code == 200, response.text
            assert response.json()["content"][0]["text"] == "hello"


def test_two_workers_serve_a_dead_one_is_replaced_and_shutdown_keeps_every_usage_row(
    served: Served, tmp_path: Path
) -> None:
    url, key, process, log = served
    first = wait_for_workers(process, 2)
    wait_for_log(log, "Application startup complete", times=2)  # both serve
    ask(url, key, 5)

    os.kill(first[0], signal.SIGKILL)  # its queued usage (if any) dies with it: asked again below
    replaced = wait_for_workers(process, 2, but_not=frozenset({first[0]}))
    assert first[0] not in replaced and first[1] in replaced
    wait_for_log(log, "starting another")
    deadline = time.monotonic() + 120
    while len(log.read_text(errors="replace").split("Application startup complete")) < 4:  # 2 + the new one
        assert time.monotonic() < deadline, "the replacement never started"
        time.sleep(0.2)

    with sqlite3.connect(tmp_path / "data" / "almanac.db") as database:
        before = database.execute("select count(*) from gateway_usage").fetchone()[0]
    asked = 20
    ask(url, key, asked)  # new connections: the kernel shares them among both workers
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0
    assert not [pid for pid in replaced if psutil.pid_exists(pid)]  # the workers drained and exited first
    with sqlite3.connect(tmp_path / "data" / "almanac.db") as database:
        after = database.execute("select count(*) from gateway_usage").fetchone()[0]
    assert after - before == asked


def test_a_worker_killed_before_it_serves_is_replaced_not_taken_for_a_failed_startup(served: Served) -> None:
    url, key, process, log = served
    # the second worker starts once the first serves; a fresh interpreter importing the service takes seconds
    starting = max(wait_for_workers(process, 2), key=lambda pid: psutil.Process(pid).create_time())
    os.kill(starting, signal.SIGKILL)
    assert log.read_text(errors="replace").count("Application startup complete") == 1  # it never served
    replaced = wait_for_workers(process, 2, but_not=frozenset({starting}))  # the server lives on: a new worker
    wait_for_log(log, "Application startup complete", times=2)
    assert process.poll() is None and starting not in replaced
    assert "stopped before it served" not in log.read_text(errors="replace")
    ask(url, key, 3)
