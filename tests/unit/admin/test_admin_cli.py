"""`almanac users create --admin` and `almanac users promote`: roles from the command line, in the
audit log as the command line's doing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from almanac.cli import main
from almanac.storage import audit
from almanac.storage.db import Database
from almanac.storage.users import get_user_by_email


@pytest.fixture
def cli_env(sqlite_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    monkeypatch.setenv("DATABASE_URL", sqlite_url.replace("+aiosqlite", ""))
    monkeypatch.setenv("LOG_LEVEL", "WARNING")
    return sqlite_url


def _state(url: str, email: str) -> tuple[str | None, list[str]]:
    async def read() -> tuple[str | None, list[str]]:
        database = Database(url)
        try:
            async with database.session() as session:
                user = await get_user_by_email(session, email=email)
                entries, _ = await audit.entries(session)
        finally:
            await database.dispose()
        return (user.role if user else None), [f"{e.actor_email} {e.action} {e.target_email}" for e in entries]

    return asyncio.run(read())


def test_create_an_admin_and_promote_a_user(cli_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["users", "create", "--email", "root@example.com", "--admin"]) == 0
    assert "admin" in capsys.readouterr().out
    assert main(["users", "create", "--email", "dev@example.com"]) == 0
    assert _state(cli_env, "dev@example.com")[0] == "user"
    assert main(["users", "promote", "--email", "dev@example.com"]) == 0
    assert "is now an administrator" in capsys.readouterr().out
    role, log = _state(cli_env, "dev@example.com")
    assert role == "admin"
    assert log == [
        "(command line) set_role dev@example.com",
        "(command line) create_admin root@example.com",
    ]


def test_the_last_admin_cannot_be_demoted(cli_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["users", "create", "--email", "only@example.com", "--admin"]) == 0
    assert main(["users", "promote", "--email", "only@example.com", "--demote"]) == 1
    assert "last administrator" in capsys.readouterr().err
    assert _state(cli_env, "only@example.com")[0] == "admin"
    assert main(["users", "promote", "--email", "nobody@example.com"]) == 1
