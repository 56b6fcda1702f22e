"""The SQLite file and its folder are created readable by their owner only."""

import stat
from pathlib import Path

from almanac.storage.db import prepare_sqlite_file


def test_a_new_sqlite_database_is_private(tmp_path: Path) -> None:
    path = tmp_path / "data" / "almanac.db"
    prepare_sqlite_file(f"sqlite+aiosqlite:///{path}")
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_memory_and_other_urls_are_left_alone(tmp_path: Path) -> None:
    prepare_sqlite_file("sqlite+aiosqlite:///:memory:")
    prepare_sqlite_file("postgresql+asyncpg://u@h/db")
    assert list(tmp_path.iterdir()) == []
