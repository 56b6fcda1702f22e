"""Read-only connections for `sql_query`, one per engine. Read-only is the connection's property,
never a judgement of the SQL text:

- SQLite: the file is opened with `mode=ro` (the library refuses every write), `PRAGMA query_only`
  is set, and an authorizer refuses ATTACH/DETACH and changing pragmas; a progress handler
  interrupts a statement past its time limit. One statement per call (the driver refuses more).
- PostgreSQL (asyncpg): the session starts with `default_transaction_read_only=on` and a
  `statement_timeout`, the statement runs inside `BEGIN READ ONLY` as a single prepared statement
  (so no second statement can follow), and the transaction is rolled back. A superuser role is
  refused outright: a read-only transaction cannot write to the database, but a superuser can still
  read the server's files (`pg_read_file`) or run programs (`COPY … TO PROGRAM`). Use a role with
  SELECT rights only.

Every call opens a fresh connection and closes it, so nothing one statement changes in the
session outlives it. Errors: `QueryRefused` (the database refused or stopped the statement: the
message says why) and `DatabaseUnavailable` (no connection).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

import asyncpg

CONNECT_TIMEOUT_S = 10.0


class QueryRefused(Exception):
    """The database refused or stopped the statement."""


class DatabaseUnavailable(Exception):
    """The database could not be reached or opened."""


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    more: bool  # there were more rows than were fetched


class Reader(Protocol):
    engine: str

    async def query(self, sql: str, *, max_rows: int, timeout_s: float) -> QueryResult: ...


def reader_for(url: str) -> Reader:
    """The reader for a `sqlite:///…` or `postgresql://…` URL."""
    for prefix in ("sqlite+aiosqlite://", "sqlite://"):
        if url.startswith(prefix):
            path = url[len(prefix) :].split("?", 1)[0]
            return SqliteReader(path[1:] if path.startswith("/") else path)
    dsn = url.replace("postgresql+asyncpg://", "postgresql://", 1).replace("postgres://", "postgresql://", 1)
    return PostgresReader(dsn)


class SqliteReader:
    engine = "SQLite"

    def __init__(self, path: str) -> None:
        self.path = path

    async def query(self, sql: str, *, max_rows: int, timeout_s: float) -> QueryResult:
        return await asyncio.to_thread(self._query, sql, max_rows, timeout_s)

    def _query(self, sql: str, max_rows: int, timeout_s: float) -> QueryResult:
        uri = f"file:{quote(self.path)}?mode=ro"
        try:
            connection = sqlite3.connect(uri, uri=True, timeout=min(timeout_s, 5.0), check_same_thread=False)
        except sqlite3.Error as exc:
            raise DatabaseUnavailable(f"cannot open {self.path} read-only: {exc}") from None
        try:
            connection.execute("PRAGMA query_only = ON")
            connection.set_authorizer(_authorize)
            deadline = time.monotonic() + timeout_s
            connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 1_000)
            try:
                cursor = connection.execute(sql)
                columns = tuple(column[0] for column in cursor.description or ())
                rows = cursor.fetchmany(max_rows + 1)
            except sqlite3.OperationalError as exc:
                if str(exc) == "interrupted":
                    raise QueryRefused(f"the query took longer than {timeout_s:g} s and was stopped") from None
                raise QueryRefused(str(exc)) from None
            except (sqlite3.Error, sqlite3.Warning) as exc:
                raise QueryRefused(str(exc)) from None
            return QueryResult(columns, rows[:max_rows], len(rows) > max_rows)
        finally:
            connection.close()


def _authorize(action: int, argument1: str | None, argument2: str | None, *_: object) -> int:
    """No other databases, no pragma changes; everything else is left to the read-only connection."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and argument2 is not None:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class PostgresReader:
    engine = "PostgreSQL"

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn

    async def query(self, sql: str, *, max_rows: int, timeout_s: float) -> QueryResult:
        settings = {
            "default_transaction_read_only": "on",
            "statement_timeout": str(max(1, int(timeout_s * 1000))),
            "lock_timeout": str(max(1, int(timeout_s * 1000))),
            "idle_in_transaction_session_timeout": str(max(1000, int(timeout_s * 2000))),
            "application_name": "almanac sql_query",
        }
        try:
            connection = await asyncpg.connect(self._dsn, timeout=CONNECT_TIMEOUT_S, server_settings=settings)
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise DatabaseUnavailable(f"cannot connect to the database ({type(exc).__name__})") from None
        try:
            if await connection.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"):
                raise DatabaseUnavailable(
                    "SQL_TOOL_DATABASE_URL connects as a superuser, which can read the server's files and run "
                    "programs even in a read-only transaction: connect as a role with SELECT rights only"
                )
            transaction = connection.transaction(readonly=True)
            await transaction.start()
            try:
                statement = await connection.prepare(sql)
                columns = tuple(attribute.name for attribute in statement.get_attributes())
                if not columns:  # nothing to fetch (a SET, a refused write): run it for its answer
                    await statement.fetch()
                    return QueryResult((), [], False)
                cursor = await statement.cursor()
                rows = await cursor.fetch(max_rows + 1)
            finally:
                if not connection.is_closed() and connection.is_in_transaction():
                    await connection.execute("ROLLBACK")  # whatever the statement did, none of it stays
            return QueryResult(columns, [tuple(row) for row in rows[:max_rows]], len(rows) > max_rows)
        except asyncpg.QueryCanceledError:
            raise QueryRefused(f"the query took longer than {timeout_s:g} s and was stopped") from None
        except asyncpg.PostgresError as exc:
            raise QueryRefused(f"{exc} (SQLSTATE {exc.sqlstate})") from None
        except asyncpg.InterfaceError as exc:
            raise QueryRefused(str(exc)) from None
        finally:
            await connection.close(timeout=5)
