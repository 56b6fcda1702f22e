"""The database handle: one async engine and its session factory, for SQLite or PostgreSQL.

SQLite runs in WAL mode with a busy timeout, and every transaction starts with `BEGIN IMMEDIATE`
so that read-then-write transactions queue for the write lock instead of failing with
"database is locked". Within one process, SQLite transactions also take turns on an asyncio lock:
waiting there is cheap, whereas SQLite's own busy handler waits by sleeping (up to 100 ms a try),
which collapses throughput under concurrency. Sessions must therefore not be nested.

PostgreSQL runs at READ COMMITTED; the billing statements are single conditional UPDATEs that are
safe there.

The engine hides statement parameters from its errors (`hide_parameters`): they carry user
messages, titles and tool output, and an error's text ends up in logs. For the same reason the
loggers that would print statements' parameters or rows (aiosqlite at DEBUG, SQLAlchemy's engine
at INFO/DEBUG) are held at WARNING whatever LOG_LEVEL says, unless `echo` is asked for.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

Session = AsyncSession
"""The session type other layers may name in signatures (they never import SQLAlchemy)."""
_CONTENT_LOGGERS = ("aiosqlite", "sqlalchemy.engine")  # they log parameters / rows below WARNING


class Database:
    """Owns the engine; `session()` opens a unit of work that commits on success."""

    def __init__(self, url: str, *, echo: bool = False, pool_size: int = 20) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        options: dict[str, Any] = {"echo": echo, "hide_parameters": True}
        if not echo:
            for name in _CONTENT_LOGGERS:
                logging.getLogger(name).setLevel(max(logging.getLogger(name).level, logging.WARNING))
        if self.is_sqlite:
            prepare_sqlite_file(url)
            options["connect_args"] = {"timeout": 30}
        else:
            options.update(pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)
        self.engine: AsyncEngine = create_async_engine(url, **options)
        if self.is_sqlite:
            _configure_sqlite(self.engine)
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self._turns = asyncio.Lock() if self.is_sqlite else None

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session inside one transaction: committed when the block ends, rolled back on error."""
        if self._turns is None:
            async with self._sessions() as session, session.begin():
                yield session
            return
        async with self._turns, self._sessions() as session, session.begin():
            yield session

    async def ping(self) -> bool:
        """True when the database answers a trivial query."""
        try:
            async with self.engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
            return True
        except Exception:  # readiness probe: any failure means "not ready"
            return False

    @property
    def display_url(self) -> str:
        """The URL with any password hidden, safe to log."""
        return make_url(self.url).render_as_string(hide_password=True)

    async def dispose(self) -> None:
        """Close every pooled connection."""
        await self.engine.dispose()


def prepare_sqlite_file(url: str) -> None:
    """Create a SQLite database's folder (mode 0700) and empty file (mode 0600) if missing, so the
    data is readable by its owner only; SQLite gives its -wal and -shm files the file's mode."""
    database = make_url(url).database
    if not url.startswith("sqlite") or not database or database == ":memory:" or database.startswith("file:"):
        return
    path = Path(database)
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    if not path.exists():
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass


def _configure_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin (pysqlite recipe).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")
