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

Bounded in bytes, not only in rows (`max_bytes`): on PostgreSQL every byte the server sends for a
statement is counted as it arrives, and past the budget the connection is cut (so a
`SELECT repeat('x', 900000000)` costs this process the budget, not 900 MB); `work_mem` bounds
each sort and hash. On SQLite no string or blob may grow past a quarter of the budget
(`SQLITE_LIMIT_LENGTH`: `randomblob(900000000)` is refused before it is allocated), a result has at
most `MAX_COLUMNS` columns, and the rows' values are counted as they are fetched.

Between users (PostgreSQL: every call connects as the same role): the session must not let one
call see or signal another's. Each call checks, with the superuser check, that its role's statement
text is not tracked (`track_activities` off for the role: `pg_stat_activity` shows no query text),
that it cannot call `pg_cancel_backend`/`pg_terminate_backend`, and that it may not read every
session's statistics (`pg_read_all_stats`); otherwise the tool is unavailable, with the SQL that
fixes it. A database that holds Almanac's own tables is refused on both engines.

Every call opens a fresh connection and closes it, so nothing one statement changes in the
session outlives it. Errors: `QueryRefused` (the database refused or stopped the statement: the
message says why) and `DatabaseUnavailable` (no connection, or a connection this tool must not use).
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
MAX_COLUMNS = 100  # SQLite: columns in one result (with the value limit, what one row can hold)
WORK_MEM = "4MB"  # PostgreSQL: each sort or hash of a statement, before it spills to disk
APP_TABLES = ("api_keys", "web_sessions", "history_items", "ledger_entries", "credit_accounts")
APP_DATABASE = (
    "SQL_TOOL_DATABASE_URL reaches Almanac's own database (its tables api_keys, history_items, "
    "ledger_entries… are there): the tool would let any user read every user's data. Give it a "
    "database of its own, holding only what users may read"
)
UNTRACKED = (
    "SQL_TOOL_DATABASE_URL's role may see or signal other sql_query calls (all calls share it): "
    "as a superuser, run ALTER ROLE {role} SET track_activities = off; and, in its database, REVOKE "
    "EXECUTE ON FUNCTION pg_cancel_backend(integer), pg_terminate_backend(integer, bigint) FROM PUBLIC; "
    "and take pg_read_all_stats / pg_monitor from the role (missing: {missing})"
)


class QueryRefused(Exception):
    """The database refused or stopped the statement. The message says why (with the database's
    detail, which may quote values); `hint` is the database's suggestion (names from its catalogue,
    e.g. the column the query may have meant), kept apart."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class DatabaseUnavailable(Exception):
    """The database could not be reached or opened, or must not be used."""


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    more: bool  # there were more rows than were fetched


class Reader(Protocol):
    engine: str

    async def query(self, sql: str, *, max_rows: int, timeout_s: float, max_bytes: int) -> QueryResult: ...


def reader_for(url: str) -> Reader:
    """The reader for a `sqlite:///…` or `postgresql://…` URL."""
    path = sqlite_path(url)
    if path is not None:
        return SqliteReader(path)
    dsn = url.replace("postgresql+asyncpg://", "postgresql://", 1).replace("postgres://", "postgresql://", 1)
    return PostgresReader(dsn)


def sqlite_path(url: str) -> str | None:
    """The file a `sqlite:///…` URL names (relative paths as written), or None for other URLs."""
    for prefix in ("sqlite+aiosqlite://", "sqlite://"):
        if url.startswith(prefix):
            path = url[len(prefix) :].split("?", 1)[0]
            return path[1:] if path.startswith("/") else path
    return None


def too_large(max_bytes: int) -> QueryRefused:
    return QueryRefused(
        f"the result is larger than {max_bytes:,} bytes, the limit of one query: select fewer rows or columns, "
        "or shorter values (e.g. substr(column, 1, 200), or length(column) instead of the column)"
    )


def _size(value: Any) -> int:
    if isinstance(value, bytes | str):
        return len(value)
    return 16


class SqliteReader:
    engine = "SQLite"

    def __init__(self, path: str) -> None:
        self.path = path

    async def query(self, sql: str, *, max_rows: int, timeout_s: float, max_bytes: int) -> QueryResult:
        return await asyncio.to_thread(self._query, sql, max_rows, timeout_s, max_bytes)

    def _query(self, sql: str, max_rows: int, timeout_s: float, max_bytes: int) -> QueryResult:
        uri = f"file:{quote(self.path)}?mode=ro"
        try:
            connection = sqlite3.connect(uri, uri=True, timeout=min(timeout_s, 5.0), check_same_thread=False)
        except sqlite3.Error as exc:
            raise DatabaseUnavailable(f"cannot open {self.path} read-only: {exc}") from None
        try:
            value_limit = max(1, max_bytes // 4)
            connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, value_limit)
            connection.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)
            connection.execute("PRAGMA query_only = ON")
            connection.execute(f"PRAGMA cache_size = -{max(1024, max_bytes // 1024)}")  # KiB of page cache
            if _holds_app_tables(connection):
                raise DatabaseUnavailable(APP_DATABASE)
            connection.set_authorizer(_authorize)
            deadline = time.monotonic() + timeout_s
            connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 1_000)
            try:
                cursor = connection.execute(sql)
                columns = tuple(column[0] for column in cursor.description or ())
                rows: list[tuple[Any, ...]] = []
                size = 0
                while len(rows) <= max_rows:
                    row = cursor.fetchone()
                    if row is None:
                        break
                    size += sum(_size(value) for value in row)
                    if size > max_bytes:
                        raise too_large(max_bytes)
                    rows.append(row)
            except sqlite3.OperationalError as exc:
                if str(exc) == "interrupted":
                    raise QueryRefused(f"the query took longer than {timeout_s:g} s and was stopped") from None
                raise QueryRefused(str(exc)) from None
            except (sqlite3.DataError, sqlite3.InternalError) as exc:
                if "too big" in str(exc):
                    raise QueryRefused(
                        f"{exc}: one value may hold at most {value_limit:,} bytes here (select less of it, or "
                        "length(column))"
                    ) from None
                raise QueryRefused(str(exc)) from None
            except (sqlite3.Error, sqlite3.Warning) as exc:
                raise QueryRefused(str(exc)) from None
            return QueryResult(columns, rows[:max_rows], len(rows) > max_rows)
        finally:
            connection.close()


def _holds_app_tables(connection: sqlite3.Connection) -> bool:
    marks = ", ".join("?" for _ in APP_TABLES)
    found = connection.execute(
        f"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ({marks})", APP_TABLES
    ).fetchone()[0]
    return int(found) >= 3


def _authorize(action: int, argument1: str | None, argument2: str | None, *_: object) -> int:
    """No other databases, no pragma changes; everything else is left to the read-only connection."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and argument2 is not None:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class _Meter:
    """Stands between a connection's transport and its protocol and counts what arrives; past the
    budget it drops the rest and cuts the connection (so no more is buffered or decoded). Every
    other callback passes through unchanged."""

    def __init__(self, inner: Any, transport: Any) -> None:
        self.inner = inner
        self.transport = transport
        self.budget: int | None = None  # None: not counting (connecting, our own checks)
        self.received = 0
        self.exceeded = False

    def data_received(self, data: bytes) -> None:
        if self.exceeded:
            return
        if self.budget is not None:
            self.received += len(data)
            if self.received > self.budget:
                self.exceeded = True
                self.transport.abort()
                return
        self.inner.data_received(data)

    def connection_made(self, transport: Any) -> None:
        self.inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.inner.connection_lost(exc)

    def eof_received(self) -> Any:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


class _MeteredConnection(asyncpg.Connection):
    """An asyncpg connection whose incoming bytes pass a `_Meter`."""

    def __init__(self, protocol: Any, transport: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(protocol, transport, *args, **kwargs)
        self.meter = _Meter(protocol, transport)
        transport.set_protocol(self.meter)


_CHECKS = """
SELECT r.rolsuper,
       current_setting('track_activities') = 'off' AS untracked,
       EXISTS (SELECT 1 FROM pg_catalog.pg_proc p
               WHERE p.pronamespace = 'pg_catalog'::regnamespace
                 AND p.proname IN ('pg_cancel_backend', 'pg_terminate_backend')
                 AND has_function_privilege(p.oid, 'EXECUTE')) AS can_signal,
       pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') AS reads_all_stats,
       (SELECT count(*) FROM pg_catalog.pg_class c
         WHERE c.relkind IN ('r', 'p') AND c.relname = ANY($1::text[])) AS app_tables
FROM pg_catalog.pg_roles r WHERE r.rolname = current_user
"""


class PostgresReader:
    engine = "PostgreSQL"

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn

    async def query(self, sql: str, *, max_rows: int, timeout_s: float, max_bytes: int) -> QueryResult:
        settings = {
            "default_transaction_read_only": "on",
            "statement_timeout": str(max(1, int(timeout_s * 1000))),
            "lock_timeout": str(max(1, int(timeout_s * 1000))),
            "idle_in_transaction_session_timeout": str(max(1000, int(timeout_s * 2000))),
            "work_mem": WORK_MEM,
            "application_name": "almanac sql_query",
        }
        try:
            connection = await asyncpg.connect(
                self._dsn, timeout=CONNECT_TIMEOUT_S, server_settings=settings, connection_class=_MeteredConnection
            )
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise DatabaseUnavailable(f"cannot connect to the database ({type(exc).__name__})") from None
        meter: _Meter = connection.meter
        try:
            await _check_session(connection)
            meter.budget = max_bytes
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
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            if meter.exceeded:  # the meter cut the connection: whatever asyncpg made of that
                raise too_large(max_bytes) from None
            if isinstance(exc, asyncpg.QueryCanceledError):
                raise QueryRefused(f"the query took longer than {timeout_s:g} s and was stopped") from None
            if isinstance(exc, asyncpg.PostgresError):
                detail = f"\nDETAIL: {exc.detail}" if getattr(exc, "detail", None) else ""
                text = f"{exc.args[0] if exc.args else exc}{detail} (SQLSTATE {exc.sqlstate})"
                raise QueryRefused(text, hint=getattr(exc, "hint", None) or None) from None
            raise QueryRefused(str(exc)) from None
        finally:
            if not connection.is_closed():
                await connection.close(timeout=5)


async def _check_session(connection: asyncpg.Connection) -> None:
    """Refuse a role that could read the server's files, see or signal other calls, or a database
    that is Almanac's own (see the module docstring)."""
    row = await connection.fetchrow(_CHECKS, list(APP_TABLES))
    if row is None:
        raise DatabaseUnavailable("SQL_TOOL_DATABASE_URL: the role's catalogue entry is not readable")
    if row["rolsuper"]:
        raise DatabaseUnavailable(
            "SQL_TOOL_DATABASE_URL connects as a superuser, which can read the server's files and run "
            "programs even in a read-only transaction: connect as a role with SELECT rights only"
        )
    if int(row["app_tables"]) >= 3:
        raise DatabaseUnavailable(APP_DATABASE)
    missing = [
        name
        for name, bad in (
            ("track_activities = off", not row["untracked"]),
            ("no EXECUTE on pg_cancel_backend / pg_terminate_backend", row["can_signal"]),
            ("no pg_read_all_stats", row["reads_all_stats"]),
        )
        if bad
    ]
    if missing:
        role = await connection.fetchval("SELECT quote_ident(current_user)")
        raise DatabaseUnavailable(UNTRACKED.format(role=role, missing="; ".join(missing)))
