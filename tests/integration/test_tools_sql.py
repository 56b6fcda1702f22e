"""sql_query against both engines: a write sent through the chat (a scripted model calls the tool)
is refused by the read-only connection with a clear error, costs nothing and changes nothing —
even for a PostgreSQL role that holds every privilege on the table, so the read-only transaction is
what stops it. A superuser connection is refused outright; a slow statement is cancelled."""

import hashlib
import sqlite3
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy.engine import make_url
from tests.support import api_client, make_user

from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.tools.base import ToolContext, ToolUnavailable
from almanac.tools.builtin.sql import SqlQueryTool
from almanac.tools.builtin.sql_engines import reader_for

CONTEXT = ToolContext("u1", "c1", 1, "q1", "q1-t1", "toolu_1")
ROWS = [("tea", 3.5), ("coffee", 4.0)]


@dataclass
class Target:
    engine: str
    url: str  # what SQL_TOOL_DATABASE_URL would hold
    snapshot: Callable[[], Awaitable[Any]]  # everything a write could change


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request: pytest.FixtureRequest) -> tuple[str, str | None]:
    """The engine, and for PostgreSQL a fresh database (made outside the event loop)."""
    if request.param == "sqlite":
        return "sqlite", None
    return "postgres", request.getfixturevalue("postgres_url")


@pytest.fixture
async def target(engine: tuple[str, str | None], tmp_path: Path) -> AsyncIterator[Target]:
    name, postgres_url = engine
    if postgres_url is None:
        path = tmp_path / "shop.db"
        connection = sqlite3.connect(path)
        connection.execute("CREATE TABLE shop_items (id INTEGER PRIMARY KEY, name TEXT, price REAL)")
        connection.executemany("INSERT INTO shop_items (name, price) VALUES (?, ?)", ROWS)
        connection.commit()
        connection.close()

        async def sqlite_snapshot() -> Any:
            return hashlib.sha256(path.read_bytes()).hexdigest()

        yield Target(name, f"sqlite:///{path}", sqlite_snapshot)
        return
    admin_url = make_url(postgres_url).set(drivername="postgresql")
    role = f"almanac_sql_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(admin_url.render_as_string(hide_password=False))
    try:
        await admin.execute("CREATE TABLE shop_items (id serial PRIMARY KEY, name text, price numeric)")
        await admin.executemany("INSERT INTO shop_items (name, price) VALUES ($1, $2)", ROWS)
        await admin.execute(f"CREATE ROLE {role} LOGIN")
        # Every privilege on the table: only the read-only transaction stands between it and a write.
        await admin.execute(f"GRANT ALL ON SCHEMA public TO {role}")
        await admin.execute(f"GRANT ALL ON shop_items, shop_items_id_seq TO {role}")

        async def pg_snapshot() -> Any:
            rows = await admin.fetch("SELECT id, name, price FROM shop_items ORDER BY id")
            tables = await admin.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
            sequence = await admin.fetchval("SELECT last_value FROM shop_items_id_seq")
            return [tuple(r) for r in rows], [t[0] for t in tables], sequence

        yield Target(name, admin_url.set(username=role).render_as_string(hide_password=False), pg_snapshot)
    finally:
        await admin.execute(f"DROP OWNED BY {role}")
        await admin.execute(f"DROP ROLE IF EXISTS {role}")
        await admin.close()


WRITES = [
    "INSERT INTO shop_items (name, price) VALUES ('evil', 1)",
    "UPDATE shop_items SET price = 0",
    "DELETE FROM shop_items",
    "DROP TABLE shop_items",
    "CREATE TABLE pwned (x integer)",
    "SELECT 1; DROP TABLE shop_items",
]
POSTGRES_WRITES = [
    "CREATE TEMP TABLE scratch (x integer)",
    "SELECT nextval('shop_items_id_seq')",
    "TRUNCATE shop_items",
    "DO $$ BEGIN DELETE FROM shop_items; END $$",
    "WITH gone AS (DELETE FROM shop_items RETURNING *) SELECT count(*) FROM gone",
]


async def test_a_write_through_the_chat_is_refused_free_of_charge_and_changes_nothing(
    target: Target, sqlite_url: str, build: Any, tmp_path: Path
) -> None:
    before = await target.snapshot()
    model = ScriptedModel(
        [calls(call("sql_query", {"query": "UPDATE shop_items SET price = 0"})), reply("it was refused")]
    )
    services, settings = build(sqlite_url, model=model, data_dir=tmp_path, sql_tool_database_url=target.url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        body = (await http.post("/api/chat", json={"message": "zero all prices"})).json()
        [result] = body["tool_results"]
        assert (result["name"], result["status"], result["is_error"], result["credits"]) == (
            "sql_query",
            "error",
            True,
            0,
        )
        assert body["credits_used"] == 5
        stored = (await http.get(f"/api/conversations/{body['conversation_id']}/items/q1-t1")).json()
    assert stored["content"].startswith("The database refused the query: ")
    assert "read-only" in stored["content"] or "readonly" in stored["content"]
    assert await target.snapshot() == before


async def test_every_kind_of_write_is_refused_and_changes_nothing(target: Target) -> None:
    tool = SqlQueryTool(reader_for(target.url), max_rows=50, timeout_s=5)
    before = await target.snapshot()
    for statement in WRITES + (POSTGRES_WRITES if target.engine == "postgres" else []):
        result = await tool.run({"query": statement}, CONTEXT)
        assert result.is_error and result.free, (statement, result.content)
        assert result.content.startswith("The database refused the query: "), statement
    assert await target.snapshot() == before
    rows = await tool.run({"query": "SELECT name, price FROM shop_items ORDER BY id"}, CONTEXT)
    assert rows.content.startswith("| name | price |\n|---|---|\n| tea | 3.5 |\n| coffee | 4")


async def test_a_select_answers_through_the_chat_and_costs_two(
    target: Target, sqlite_url: str, build: Any, tmp_path: Path
) -> None:
    model = ScriptedModel([calls(call("sql_query", {"query": "SELECT name FROM shop_items ORDER BY id"})), reply("ok")])
    services, settings = build(sqlite_url, model=model, data_dir=tmp_path, sql_tool_database_url=target.url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        body = (await http.post("/api/chat", json={"message": "list the items"})).json()
    assert body["tool_results"][0]["status"] == "ok" and body["credits_used"] == 7


async def test_a_superuser_connection_is_refused(postgres_url: str) -> None:
    tool = SqlQueryTool(reader_for(postgres_url), max_rows=5, timeout_s=5)
    with pytest.raises(ToolUnavailable, match="superuser"):
        await tool.run({"query": "SELECT pg_read_file('/etc/hostname')"}, CONTEXT)


async def test_a_slow_postgres_statement_is_cancelled_at_the_time_limit(target: Target) -> None:
    if target.engine != "postgres":
        pytest.skip("SQLite's runaway query: tests/unit/tools/builtin/test_sql.py")
    tool = SqlQueryTool(reader_for(target.url), max_rows=5, timeout_s=0.3)
    result = await tool.run({"query": "SELECT pg_sleep(30)"}, CONTEXT)
    assert result.is_error and "took longer than 0.3 s and was stopped" in result.content
