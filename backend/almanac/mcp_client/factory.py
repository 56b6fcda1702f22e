"""Building the `McpClient` from `Settings` (called by the composition root, which passes the
process environment for `${VAR}` expansion)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from almanac.config import Settings
from almanac.mcp_client.client import McpClient
from almanac.tools.registry import ToolRegistry

CHECKOUT_CONFIG = Path(__file__).resolve().parents[3] / "mcp" / "servers.json"
HINTS = {
    "GIT_REPOSITORY": "the working directory is not inside a git work tree; set GIT_REPOSITORY",
    "GITHUB_PERSONAL_ACCESS_TOKEN": "set GITHUB_PERSONAL_ACCESS_TOKEN to use the GitHub tools",
}


def find_work_tree(start: Path) -> Path | None:
    """The root of the git work tree containing `start`, if any."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def config_path(configured: Path | None, *, cwd: Path) -> Path | None:
    """MCP_CONFIG, else `mcp/servers.json` of this checkout, else of the working directory."""
    if configured is not None:
        return configured
    for candidate in (CHECKOUT_CONFIG, cwd / "mcp" / "servers.json"):
        if candidate.is_file():
            return candidate
    return None


def mcp_variables(settings: Settings, *, environ: Mapping[str, str], cwd: Path) -> dict[str, str]:
    """What `${VAR}` may refer to: the environment, plus values that settings resolve (so a
    `.env` file works too): PYTHON, GIT_REPOSITORY, GITHUB_PERSONAL_ACCESS_TOKEN, GITHUB_TOOLSETS."""
    variables = dict(environ)
    variables["PYTHON"] = sys.executable
    repository = settings.git_repository.resolve() if settings.git_repository else find_work_tree(cwd)
    variables.pop("GIT_REPOSITORY", None)
    if repository is not None:
        variables["GIT_REPOSITORY"] = str(repository)
    token = settings.github_personal_access_token
    if token is not None and token.get_secret_value():
        variables["GITHUB_PERSONAL_ACCESS_TOKEN"] = token.get_secret_value()
    variables["GITHUB_TOOLSETS"] = settings.github_toolsets
    return variables


def build_mcp_client(settings: Settings, registry: ToolRegistry, *, environ: Mapping[str, str], cwd: Path) -> McpClient:
    """The app's MCP client (nothing starts until `start()`)."""
    return McpClient(
        registry,
        config_path=config_path(settings.mcp_config, cwd=cwd),
        variables=mcp_variables(settings, environ=environ, cwd=cwd),
        default_timeout_s=settings.tool_timeout_s,
        enabled=settings.mcp_enabled,
        startup_wait_s=settings.mcp_startup_wait_s,
        hints=HINTS,
    )
