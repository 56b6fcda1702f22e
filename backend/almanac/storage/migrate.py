"""Apply Alembic migrations programmatically (`almanac db upgrade`, and `almanac serve` at start)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config

from almanac.storage.db import prepare_sqlite_file

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(url: str) -> Config:
    """An Alembic configuration for `url`, with no alembic.ini needed."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["url"] = url
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at `url` up to `revision` (blocking; call outside an event loop)."""
    prepare_sqlite_file(url)
    command.upgrade(alembic_config(url), revision)


async def upgrade_async(url: str, revision: str = "head") -> None:
    """`upgrade` from inside an event loop (it runs in a worker thread)."""
    await asyncio.to_thread(upgrade, url, revision)
