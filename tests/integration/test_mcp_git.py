"""The embedded default: the reference git MCP server (`mcp-server-git`, stdio) from the shipped
mcp/servers.json, over a temporary repository."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.mcp_servers.harness import SHIPPED_CONFIG, client_for, git, make_repository

from almanac.mcp_client import McpClient
from almanac.mcp_client.errors import CallRejected
from almanac.tools.base import ToolContext
from almanac.tools.registry import ToolRegistry

CONTEXT = ToolContext("user", "conversation", 1, "q1", "q1-t1", "toolu_1")
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repository(tmp_path_factory.mktemp("git") / "repo")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def git_tools(repository: Path) -> AsyncIterator[tuple[McpClient, ToolRegistry]]:
    registry = ToolRegistry()
    client = client_for(SHIPPED_CONFIG, registry, variables={"GIT_REPOSITORY": str(repository)})
    await client.start()
    try:
        yield client, registry
    finally:
        await client.stop()


async def call(registry: ToolRegistry, name: str, arguments: dict[str, object]) -> tuple[str, bool]:
    tool = registry.get(name)
    assert tool is not None, registry.names
    output = await tool.run(arguments, CONTEXT)
    return output.content, output.is_error


async def test_the_read_only_git_tools_are_registered_and_github_is_off(
    git_tools: tuple[McpClient, ToolRegistry],
) -> None:
    client, registry = git_tools
    assert sorted(registry.names) == [
        "git__git_branch",
        "git__git_diff",
        "git__git_diff_staged",
        "git__git_diff_unstaged",
        "git__git_log",
        "git__git_show",
        "git__git_status",
    ]  # only the read tools are allowed in mcp/servers.json
    assert client.summary() == "git (7 tools)"
    (github,) = [status for status in client.statuses() if status.name == "github"]
    assert (github.state, github.detail) == ("off", "GITHUB_PERSONAL_ACCESS_TOKEN is not set")


async def test_log_show_status_and_diff(git_tools: tuple[McpClient, ToolRegistry], repository: Path) -> None:
    _, registry = git_tools
    repo = str(repository)
    log, _ = await call(registry, "git__git_log", {"repo_path": repo, "max_count": 2})
    assert "Fix the guide" in log and "Second version and a guide" in log and "Add the README" not in log
    first, _ = await call(registry, "git__git_show", {"repo_path": repo, "revision": "HEAD~2:README.md"})
    assert "version one" in first
    status, _ = await call(registry, "git__git_status", {"repo_path": repo})
    assert "working tree clean" in status
    diff, _ = await call(registry, "git__git_diff", {"repo_path": repo, "target": "HEAD~1"})
    assert "-Run it." in diff and "+Run it twice." in diff
    head = git(repository, "rev-parse", "HEAD").strip()
    shown, _ = await call(registry, "git__git_show", {"repo_path": repo, "revision": head})
    assert head in shown and "Fix the guide" in shown


async def test_errors_reach_the_model(git_tools: tuple[McpClient, ToolRegistry], tmp_path: Path) -> None:
    client, registry = git_tools
    outside, is_error = await call(registry, "git__git_status", {"repo_path": str(tmp_path)})
    assert is_error and "outside the allowed repository" in outside
    with pytest.raises(CallRejected, match="git_init is not allowed"):  # not on the allow list: never sent
        await client.servers["git"].call("git_init", {"repo_path": "x"})
    with pytest.raises(CallRejected, match="git_commit is not allowed"):
        await client.servers["git"].call("git_commit", {"repo_path": "x", "message": "m"})  # not in the allow list
