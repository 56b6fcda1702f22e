"""`almanac serve` starts the MCP servers with the app and stops them with it: the startup table
names them (and says why the GitHub one is off), the tools are served, and nothing is left behind."""

import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
from tests.mcp_servers.harness import make_repository
from tests.support import clean_environment, wait_ready

from almanac.mcp_client.factory import CHECKOUT_CONFIG


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_starts_and_stops_the_mcp_servers(tmp_path: Path) -> None:
    repository = make_repository(tmp_path / "repo")
    port = free_port()
    environment = clean_environment()
    environment.update(
        MCP_ENABLED="true",
        GIT_REPOSITORY=str(repository),
        MCP_CONFIG=str(CHECKOUT_CONFIG),
        GITHUB_PERSONAL_ACCESS_TOKEN="ghp_not_a_real_token",
        DOCKER_HOST="unix:///nonexistent/docker.sock",  # Docker is never usable here, even where it runs
        DOCS_AUTO_INDEX="false",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "almanac.cli", "serve", "--port", str(port)],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_ready(process, f"http://127.0.0.1:{port}")
        children = psutil.Process(process.pid).children(recursive=True)
        assert any("mcp_server_git" in " ".join(child.cmdline()) for child in children)
        key = (tmp_path / "data" / "local-api-key").read_text().strip()
        tools = httpx.get(f"http://127.0.0.1:{port}/api/tools", headers={"Authorization": f"Bearer {key}"}).json()
        assert {"git__git_log", "git__git_show"} <= {tool["name"] for tool in tools["data"]}
    finally:
        process.send_signal(signal.SIGINT)
        log, _ = process.communicate(timeout=30)
    assert re.search(r"MCP servers +git \(7 tools\)", log)
    # A local run without SECRET_KEY generates the key for users' tokens into the data folder, privately.
    assert stat.S_IMODE((tmp_path / "data" / "secret-key").stat().st_mode) == 0o600
    assert re.search(r"user tokens +encrypted at rest \(key: data/secret-key \(generated\)\)", log)
    assert "MCP server github (Docker is not usable:" in log
    assert "ghp_not_a_real_token" not in log
    assert not [child for child in children if child.is_running() and child.status() != psutil.STATUS_ZOMBIE]
