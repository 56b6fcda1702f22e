"""Building the `McpClient` from `Settings` (called by the composition root, which passes the
process environment for `${VAR}` expansion and the token vault).

The host's repository is served by the git tools only when it is meant to be: `GIT_REPOSITORY`,
or, on a local run (`LOCAL_USER=true`), the work tree around the working directory. With
`LOCAL_USER=false` and no `GIT_REPOSITORY`, the git server is off and the startup table says why.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from almanac.config import Settings
from almanac.mcp_client.client import McpClient
from almanac.mcp_client.sessions import TokenSource
from almanac.tools.registry import ToolRegistry

CHECKOUT_CONFIG = Path(__file__).resolve().parents[3] / "mcp" / "servers.json"
HINTS = {
    "GIT_REPOSITORY": "the working directory is not inside a git work tree; set GIT_REPOSITORY",
    "GITHUB_PERSONAL_ACCESS_TOKEN": "set GITHUB_PERSONAL_ACCESS_TOKEN to list the GitHub tools; users' calls "
    "run with their own tokens unless GITHUB_SHARED_TOKEN=true",
}
SHARED_GIT_HINT = "with LOCAL_USER=false the host's repository is served to users only when GIT_REPOSITORY names it"


def hints(settings: Settings) -> dict[str, str]:
    """Why a server is off, by the variable it misses (for the startup table)."""
    return {**HINTS, "GIT_REPOSITORY": HINTS["GIT_REPOSITORY"] if settings.local_user else SHARED_GIT_HINT}


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
    repository = git_repository(settings, cwd=cwd)
    variables.pop("GIT_REPOSITORY", None)
    if repository is not None:
        variables["GIT_REPOSITORY"] = str(repository)
    token = settings.github_personal_access_token
    if token is not None and token.get_secret_value():
        variables["GITHUB_PERSONAL_ACCESS_TOKEN"] = token.get_secret_value()
    variables["GITHUB_TOOLSETS"] = settings.github_toolsets
    return variables


def git_repository(settings: Settings, *, cwd: Path) -> Path | None:
    """The repository the git tools serve (see the module docstring), or None: they are off."""
    if settings.git_repository is not None:
        return settings.git_repository.resolve()
    return find_work_tree(cwd) if settings.local_user else None


def shared_integrations(settings: Settings) -> frozenset[str]:
    """Integrations whose operator token serves users who have none of their own (opt-in)."""
    return frozenset({"github"}) if settings.github_shared_token else frozenset()


def build_mcp_client(
    settings: Settings,
    registry: ToolRegistry,
    *,
    environ: Mapping[str, str],
    cwd: Path,
    tokens: TokenSource | None = None,
) -> McpClient:
    """The app's MCP client (nothing starts until `start()`); `tokens` holds users' own tokens."""
    return McpClient(
        registry,
        config_path=config_path(settings.mcp_config, cwd=cwd),
        variables=mcp_variables(settings, environ=environ, cwd=cwd),
        default_timeout_s=settings.tool_timeout_s,
        enabled=settings.mcp_enabled,
        startup_wait_s=settings.mcp_startup_wait_s,
        hints=hints(settings),
        tokens=tokens,
        shared=shared_integrations(settings),
    )
