"""sql_query must never read the application's own database: the server refuses to start when
SQL_TOOL_DATABASE_URL names it — the same file however the path is written (relative, through a
symbolic link, a hard link), or the same PostgreSQL server and database (or role)."""

import os
from pathlib import Path
from typing import Any

import pytest

from almanac.config import ConfigError
from almanac.tools.builtin.sql_target import refusal


@pytest.fixture
def app_file(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "almanac.db"
    path.write_bytes(b"")
    return path


def test_the_same_sqlite_file_is_refused_however_it_is_named(app_file: Path, tmp_path: Path) -> None:
    app = "sqlite+aiosqlite:///data/almanac.db"  # relative to the working folder, as DATABASE_URL defaults
    (tmp_path / "link.db").symlink_to(app_file)
    os.link(app_file, tmp_path / "hard.db")
    (tmp_path / "folder-link").symlink_to(tmp_path / "data")
    for tool in (
        f"sqlite:///{app_file}",
        "sqlite:///data/almanac.db",
        "sqlite:///./data/../data/almanac.db",
        f"sqlite:///{tmp_path / 'link.db'}",
        f"sqlite:///{tmp_path / 'hard.db'}",
        f"sqlite:///{tmp_path / 'folder-link' / 'almanac.db'}?mode=ro",
    ):
        reason = refusal(tool, app, cwd=tmp_path)
        assert reason is not None and "application's own database file" in reason, tool


def test_another_sqlite_file_is_fine(app_file: Path, tmp_path: Path) -> None:
    (tmp_path / "shop.db").write_bytes(b"")
    assert refusal(f"sqlite:///{tmp_path / 'shop.db'}", "sqlite+aiosqlite:///data/almanac.db", cwd=tmp_path) is None
    assert refusal(f"sqlite:///{app_file}", "postgresql+asyncpg://app@db/almanac", cwd=tmp_path) is None


@pytest.mark.parametrize(
    ("tool", "app", "why"),
    [
        ("postgresql://reader@localhost/almanac", "postgresql+asyncpg://app@127.0.0.1:5432/almanac", "own database"),
        ("postgresql://reader@[::1]:5432/almanac", "postgresql+asyncpg://app@localhost/almanac", "own database"),
        ("postgres://reader@127.0.0.1/almanac", "postgresql+asyncpg://app@localhost/almanac", "own database"),
        ("postgresql://app@localhost/shop", "postgresql+asyncpg://app@localhost/almanac", "own role"),
        ("postgresql://almanac@localhost", "postgresql+asyncpg://almanac:pw@localhost/almanac", "own database"),
        (
            "postgresql://reader@localhost/almanac?host=/var/run/postgresql",
            "postgresql+asyncpg://app@/almanac",
            "own database",
        ),
    ],
)
def test_the_same_postgres_database_or_role_is_refused(tool: str, app: str, why: str, tmp_path: Path) -> None:
    reason = refusal(tool, app, cwd=tmp_path)
    assert reason is not None and why in reason


@pytest.mark.parametrize(
    ("tool", "app"),
    [
        ("postgresql://reader@localhost/shop", "postgresql+asyncpg://app@localhost/almanac"),
        ("postgresql://reader@localhost:5433/almanac", "postgresql+asyncpg://app@localhost:5432/almanac"),
        ("postgresql://reader@10.0.0.7/almanac", "postgresql+asyncpg://app@localhost/almanac"),
    ],
)
def test_another_database_role_or_server_is_fine(tool: str, app: str, tmp_path: Path) -> None:
    assert refusal(tool, app, cwd=tmp_path) is None


def test_the_server_does_not_start_with_its_own_database_as_the_tools(
    sqlite_url: str, build: Any, tmp_path: Path
) -> None:
    app_path = sqlite_url.split(":///", 1)[1]
    (tmp_path / "alias.db").symlink_to(app_path)
    with pytest.raises(ConfigError, match="application's own database file"):
        build(sqlite_url, data_dir=tmp_path, sql_tool_database_url=f"sqlite:///{tmp_path / 'alias.db'}")
