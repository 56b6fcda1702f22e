"""Building the MCP client from settings: which file, which variables, the git repository default."""

import subprocess
import sys
from pathlib import Path

from pydantic import SecretStr

from almanac.config import Settings
from almanac.mcp_client.factory import (
    CHECKOUT_CONFIG,
    SHARED_GIT_HINT,
    build_mcp_client,
    config_path,
    find_work_tree,
    hints,
    mcp_variables,
    shared_integrations,
)
from almanac.tools.registry import ToolRegistry


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


def git_repo(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_the_git_work_tree_is_found_from_any_folder_inside(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    (repo / "a" / "b").mkdir(parents=True)
    assert find_work_tree(repo / "a" / "b") == repo.resolve()
    assert find_work_tree(tmp_path) is None


def test_variables_come_from_the_environment_and_settings(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    variables = mcp_variables(
        settings(github_personal_access_token=SecretStr("ghp_1"), github_toolsets="repos"),
        environ={"HOME": "/home/u", "GIT_REPOSITORY": "/ignored", "GITHUB_PERSONAL_ACCESS_TOKEN": "from-env"},
        cwd=repo,
    )
    assert variables["HOME"] == "/home/u" and variables["PYTHON"] == sys.executable
    assert variables["GIT_REPOSITORY"] == str(repo.resolve())  # settings (here: the cwd default) win
    assert (variables["GITHUB_PERSONAL_ACCESS_TOKEN"], variables["GITHUB_TOOLSETS"]) == ("ghp_1", "repos")


def test_git_repository_setting_and_a_non_repository_working_directory(tmp_path: Path) -> None:
    chosen = mcp_variables(settings(git_repository=tmp_path / "x"), environ={}, cwd=tmp_path)
    assert chosen["GIT_REPOSITORY"] == str((tmp_path / "x").resolve())
    assert "GIT_REPOSITORY" not in mcp_variables(settings(), environ={}, cwd=tmp_path)
    assert "GITHUB_PERSONAL_ACCESS_TOKEN" not in mcp_variables(settings(), environ={}, cwd=tmp_path)


def test_the_config_file_is_mcp_config_else_the_checkout_one(tmp_path: Path) -> None:
    assert config_path(tmp_path / "mine.json", cwd=tmp_path) == tmp_path / "mine.json"
    assert config_path(None, cwd=tmp_path) == CHECKOUT_CONFIG and CHECKOUT_CONFIG.is_file()


def test_the_client_follows_the_settings(tmp_path: Path) -> None:
    client = build_mcp_client(
        settings(mcp_enabled=False, mcp_startup_wait_s=2, tool_timeout_s=12),
        ToolRegistry(),
        environ={},
        cwd=tmp_path,
    )
    assert (client.enabled, client.config_path) == (False, CHECKOUT_CONFIG)


def test_with_local_user_off_the_host_repository_is_served_only_when_named(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    production = settings(local_user=False)
    assert "GIT_REPOSITORY" not in mcp_variables(production, environ={"GIT_REPOSITORY": str(repo)}, cwd=repo)
    assert hints(production)["GIT_REPOSITORY"] == SHARED_GIT_HINT
    named = mcp_variables(settings(local_user=False, git_repository=repo), environ={}, cwd=tmp_path)
    assert named["GIT_REPOSITORY"] == str(repo.resolve())
    assert "work tree" in hints(settings(local_user=True))["GIT_REPOSITORY"]


async def test_the_git_server_is_off_in_production_without_git_repository_and_says_why(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    client = build_mcp_client(settings(local_user=False), ToolRegistry(), environ={}, cwd=repo)
    await client.start()
    try:
        off = {status.name: status for status in client.statuses() if status.state == "off"}
        assert off["git"].detail == f"GIT_REPOSITORY is not set ({SHARED_GIT_HINT})"
        assert "git" not in client.servers
    finally:
        await client.stop()


def test_the_operator_token_is_shared_only_on_opt_in() -> None:
    assert shared_integrations(settings()) == frozenset()
    assert shared_integrations(settings(github_shared_token=True)) == {"github"}
