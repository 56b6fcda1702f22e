"""The client's bookkeeping without running servers: which servers are left out and why, and how
a server's tool list is mirrored into the registry."""

import json
from pathlib import Path
from typing import Any

from mcp import types

from almanac.mcp_client import McpClient
from almanac.mcp_client.breaker import RestartPolicy
from almanac.mcp_client.config import parse_config
from almanac.mcp_client.server import McpServer
from almanac.tools.registry import ToolRegistry


def client(tmp_path: Path, servers: dict[str, Any], *, docker: str | None = None, **options: Any) -> McpClient:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))

    async def probe() -> str | None:
        return docker

    return McpClient(
        ToolRegistry(), config_path=path, variables={}, default_timeout_s=30, docker_probe=probe, **options
    )


def tool(name: str, **schema: Any) -> types.Tool:
    return types.Tool(name=name, description=f"{name} tool", input_schema={"type": "object", **schema})


def server(name: str, **entry: Any) -> McpServer:
    document = {"mcpServers": {name: {"command": "x", **entry}}}
    (config,) = parse_config(document, variables={}, default_timeout_s=9).servers
    return McpServer(config, policy=RestartPolicy(), on_tools=lambda *_: None)


async def test_servers_left_out_are_listed_with_their_reasons(tmp_path: Path) -> None:
    mcp = client(
        tmp_path,
        {
            "github": {"command": "docker", "args": ["run"]},
            "needs_key": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${KEY}"}},
            "off": {"command": "x", "enabled": False},
        },
        docker="Cannot connect to the Docker daemon",
        hints={"KEY": "set KEY to use it"},
    )
    await mcp.start()
    assert mcp.servers == {}
    assert [(s.name, s.state, s.detail) for s in mcp.statuses()] == [
        ("needs_key", "off", "KEY is not set (set KEY to use it)"),
        ("off", "off", "turned off in the configuration (enabled: false)"),
        ("github", "off", "Docker is not usable: Cannot connect to the Docker daemon"),
    ]
    assert mcp.summary() == "none"


async def test_disabled_or_broken_configuration_means_no_servers(tmp_path: Path) -> None:
    off = client(tmp_path, {"s": {"command": "x"}}, enabled=False)
    await off.start()
    assert (off.servers, off.summary()) == ({}, "off (MCP_ENABLED=false)")
    (tmp_path / "servers.json").write_text("{not json")
    broken = McpClient(ToolRegistry(), config_path=tmp_path / "servers.json", variables={}, default_timeout_s=30)
    await broken.start()
    assert broken.servers == {} and broken.summary().startswith("configuration error:")
    missing = McpClient(ToolRegistry(), config_path=None, variables={}, default_timeout_s=30)
    await missing.start()
    assert missing.summary() == "no configuration file (set MCP_CONFIG)"


def test_a_tool_list_is_mirrored_into_the_registry(tmp_path: Path) -> None:
    mcp = McpClient(ToolRegistry(), config_path=None, variables={}, default_timeout_s=30)
    git = server("git", deny=["git_commit"], billing="github")
    mcp._sync(git, [tool("git_log"), tool("git_commit"), tool("bad", type="array")])
    assert mcp.registry.names == ["git__git_log"]  # denied and invalid tools are left out
    entry = mcp.registry.get("git__git_log")
    assert entry is not None and (entry.source, entry.billing.value, getattr(entry, "timeout_s", None)) == (
        "git",
        "github",
        9.0,
    )
    mcp._sync(git, [tool("git_show"), tool("git_log")])
    assert mcp.registry.names == ["git__git_show", "git__git_log"]
    assert mcp.tool_names("git") == {"git__git_show": "git_show", "git__git_log": "git_log"}
    mcp._sync(git, None)
    assert mcp.registry.names == [] and mcp.tool_names("git") == {}


def test_names_taken_by_other_tools_get_a_hashed_name(tmp_path: Path) -> None:
    mcp = McpClient(ToolRegistry(), config_path=None, variables={}, default_timeout_s=30)
    mcp._sync(server("a.b"), [tool("x")])
    mcp._sync(server("a_b"), [tool("x")])
    first, second = mcp.registry.names
    assert first == "a_b__x" and second.startswith("a_b__x_") and len(second) == len("a_b__x_") + 8
