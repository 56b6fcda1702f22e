"""Helpers for tests that run real MCP servers: config files, a git repository, waiting."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx

from almanac.mcp_client import McpClient, RestartPolicy
from almanac.tools.registry import ToolRegistry

FLAKY = Path(__file__).resolve().parent / "flaky.py"
GITHUB_LIKE = Path(__file__).resolve().parent / "github_like.py"
SHIPPED_CONFIG = Path(__file__).resolve().parents[2] / "mcp" / "servers.json"
FAST = RestartPolicy(
    initial_backoff_s=0.2,
    max_backoff_s=1.0,
    failures_to_open=3,
    open_for_s=60,
    stable_after_s=60,
    jitter=0,
    start_timeout_s=20,
    ping_interval_s=30,
    ping_timeout_s=1.5,
    stop_timeout_s=8,
)


def flaky_server(**fields: Any) -> dict[str, Any]:
    """A `mcpServers` entry that runs tests/mcp_servers/flaky.py over stdio."""
    return {"command": sys.executable, "args": [str(FLAKY)], **fields}


def write_config(folder: Path, servers: Mapping[str, Any]) -> Path:
    path = folder / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def client_for(
    config: Path,
    registry: ToolRegistry | None = None,
    *,
    policy: RestartPolicy = FAST,
    variables: Mapping[str, str] | None = None,
    timeout_s: float = 30,
) -> McpClient:
    return McpClient(
        ToolRegistry() if registry is None else registry,
        config_path=config,
        variables={"PYTHON": sys.executable, **(variables or {})},
        default_timeout_s=timeout_s,
        startup_wait_s=20,
        policy=policy,
    )


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True)
    return done.stdout


def make_repository(path: Path) -> Path:
    """A git repository with three commits: README v1, README v2 + docs/guide.md, and a fix."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "dev@example.com")
    git(path, "config", "user.name", "Dev")
    (path / "README.md").write_text("# Demo\n\nversion one\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "Add the README")
    (path / "README.md").write_text("# Demo\n\nversion two\n")
    (path / "docs").mkdir()
    (path / "docs" / "guide.md").write_text("# Guide\n\nRun it.\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "Second version and a guide")
    (path / "docs" / "guide.md").write_text("# Guide\n\nRun it twice.\n")
    git(path, "commit", "-q", "-am", "Fix the guide")
    return path


async def eventually(check: Callable[[], bool], *, timeout_s: float = 15, message: str = "condition") -> None:
    """Wait until `check()` is true (polling)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        await asyncio.sleep(0.05)


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def http_server(script: Path, *, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """Run `script --http PORT` and yield its MCP URL once it answers (any HTTP status)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(script), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
