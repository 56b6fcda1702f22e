"""Who gets the host's repository through the git tools, and which tools: with LOCAL_USER=false
it is served only when GIT_REPOSITORY names it (else the git server is off and the startup table
says why); and the shipped allow list is exactly the installed mcp-server-git's read-only tools,
so a write tool (or one added by a later version) is never exposed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from tests.mcp_servers.harness import SHIPPED_CONFIG, make_repository

from almanac.mcp_client.factory import SHARED_GIT_HINT
from almanac.startup import describe


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    return make_repository(tmp_path / "repo")


async def test_the_allow_list_is_exactly_the_servers_read_only_tools(repository: Path) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_server_git", "--repository", str(repository)]
    )
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    read_only = {tool.name for tool in tools if tool.annotations and tool.annotations.read_only_hint}
    writes = {tool.name for tool in tools} - read_only
    assert {"git_commit", "git_add", "git_reset", "git_checkout", "git_create_branch"} <= writes
    for name in ("servers.json", "servers.compose.json"):
        allowed = json.loads((SHIPPED_CONFIG.parent / name).read_text())["mcpServers"]["git"]["allow"]
        assert sorted(allowed) == sorted(read_only), name


async def test_with_local_user_off_the_git_tools_are_off_unless_git_repository_names_it(
    repository: Path, sqlite_url: str, build: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repository)  # the server runs inside a repository: not a reason to serve it
    monkeypatch.delenv("GIT_REPOSITORY", raising=False)
    services, settings = build(sqlite_url, local_user=False, mcp_enabled=True, mcp_config=SHIPPED_CONFIG)
    assert services.mcp is not None
    await services.mcp.start()
    try:
        assert not [name for name in services.registry.names if name.startswith("git__")]
        (off,) = [line for line in describe(settings, services) if line.strip().startswith("off")]
        assert f"MCP server git (GIT_REPOSITORY is not set ({SHARED_GIT_HINT}))" in off
    finally:
        await services.mcp.stop()

    named, _ = build(
        sqlite_url, local_user=False, mcp_enabled=True, mcp_config=SHIPPED_CONFIG, git_repository=repository
    )
    assert named.mcp is not None
    await named.mcp.start()
    try:
        assert {"git__git_log", "git__git_show"} <= set(named.registry.names)
        assert "git__git_commit" not in named.registry
    finally:
        await named.mcp.stop()
