"""sql_query against both engines: a write sent through the chat (a scripted model calls the tool)
is refused by the read-only connection with a clear error, costs nothing and changes nothing —
even for a PostgreSQL role that holds every privilege on the table, so the read-only transaction is
what stops it. A superuser connection is refused outright; a slow statement is cancelled. Between
users (one role for all calls): no call sees another's statement or can cancel it, and a role that
would allow either is refused; a result past the byte budget is cut off on the wire; an error that
quotes data is charged; Almanac's own database is refused however it is reached."""

import asyncio
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


# The documented recipe's part that keeps sql_query calls (one role for all) from seeing or
# signalling each other (docs/security.md).
SHARED_ROLE_SAFETY = (
    "ALTER ROLE {role} SET track_activities = off; "
    "REVOKE EXECUTE ON FUNCTION pg_cancel_backend(integer), pg_terminate_backend(integer, bigint) FROM PUBLIC"
)


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
    return "postgres", request.getfixturevalue("empty_postgres_url")


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
        await admin.execute(SHARED_ROLE_SAFETY.format(role=role))

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


async def test_calls_cannot_see_or_cancel_each_other(target: Target) -> None:
    """User A's statement runs; user B's call looks for it in pg_stat_activity (statement text with
    its literals) and tries to cancel it. B sees no text and may not signal; A's answer arrives."""
    if target.engine != "postgres":
        pytest.skip("SQLite has no sessions to see")
    tool = SqlQueryTool(reader_for(target.url), max_rows=50, timeout_s=20)
    role = make_url(target.url).username
    admin = await asyncpg.connect(
        make_url(target.url).set(username="postgres", drivername="postgresql").render_as_string(hide_password=False)
    )
    try:
        first = asyncio.ensure_future(tool.run({"query": "SELECT pg_sleep(3), 'secret of user A' AS s"}, CONTEXT))
        for _ in range(200):  # until A's session exists (a bounded wait, not a timing assertion)
            if await admin.fetchval("SELECT count(*) FROM pg_stat_activity WHERE usename = $1", role):
                break
            await asyncio.sleep(0.02)
        seen = await tool.run(
            {"query": "SELECT pid, state, query FROM pg_stat_activity WHERE usename = current_user"}, CONTEXT
        )
        assert not seen.is_error and "secret of user A" not in seen.content
        signalled = await tool.run(
            {
                "query": "SELECT pg_cancel_backend(pid), pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE usename = current_user AND pid <> pg_backend_pid()"
            },
            CONTEXT,
        )
        assert signalled.is_error and "permission denied" in signalled.content
        answered = await first
    finally:
        await admin.close()
    assert not answered.is_error and "secret of user A" in answered.content


async def test_a_shared_role_that_could_see_or_signal_other_calls_is_refused(empty_postgres_url: str) -> None:
    admin_url = make_url(empty_postgres_url).set(drivername="postgresql")
    role = f"almanac_sql_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(admin_url.render_as_string(hide_password=False))
    try:
        await admin.execute(f"CREATE ROLE {role} LOGIN")
        tool = SqlQueryTool(
            reader_for(admin_url.set(username=role).render_as_string(hide_password=False)), max_rows=5, timeout_s=5
        )
        with pytest.raises(ToolUnavailable) as refused:
            await tool.run({"query": "SELECT 1"}, CONTEXT)
        message = str(refused.value)
        assert f"ALTER ROLE {role} SET track_activities = off" in message and "REVOKE EXECUTE ON FUNCTION" in message
        await admin.execute(SHARED_ROLE_SAFETY.format(role=role))
        assert not (await tool.run({"query": "SELECT 1 AS one"}, CONTEXT)).is_error
        await admin.execute(f"GRANT pg_read_all_stats TO {role}")
        with pytest.raises(ToolUnavailable, match="pg_read_all_stats"):
            await tool.run({"query": "SELECT 1"}, CONTEXT)
    finally:
        await admin.execute(f"DROP OWNED BY {role}")
        await admin.execute(f"DROP ROLE IF EXISTS {role}")
        await admin.close()


async def test_a_result_past_the_byte_budget_is_refused_whatever_its_shape(target: Target) -> None:
    tool = SqlQueryTool(reader_for(target.url), max_rows=200, timeout_s=20, max_bytes=1_000_000)
    big = {
        "postgres": ["SELECT repeat('x', 20000000)", "SELECT repeat('x', 100000) FROM generate_series(1, 50)"],
        "sqlite": [
            "SELECT randomblob(20000000)",
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 50) "
            "SELECT randomblob(100000) FROM r",
        ],
    }[target.engine]
    for statement in big:
        result = await tool.run({"query": statement}, CONTEXT)
        assert result.is_error and result.free, statement
        assert "larger than 1,000,000 bytes" in result.content or "at most 250,000 bytes" in result.content
    fine = await tool.run({"query": "SELECT name FROM shop_items ORDER BY id"}, CONTEXT)
    assert not fine.is_error and "coffee" in fine.content


async def test_an_error_that_quotes_data_is_charged_through_the_chat(
    target: Target, sqlite_url: str, build: Any, tmp_path: Path
) -> None:
    leak = {
        "postgres": "SELECT CAST((SELECT string_agg(name, ',') FROM shop_items) AS int)",
        "sqlite": "SELECT json_extract('{}', (SELECT group_concat(name) FROM shop_items))",
    }[target.engine]
    model = ScriptedModel(
        [
            calls(call("sql_query", {"query": leak}), call("sql_query", {"query": "SELECT nope FROM shop_items"})),
            reply("ok"),
        ]
    )
    services, settings = build(sqlite_url, model=model, data_dir=tmp_path, sql_tool_database_url=target.url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        body = (await http.post("/api/chat", json={"message": "names?"})).json()
    quoted, mistake = sorted(body["tool_results"], key=lambda result: result["item_id"])  # they run in parallel
    assert (quoted["status"], quoted["credits"]) == ("error", 2)
    assert (mistake["status"], mistake["credits"]) == ("error", 0), str(body["tool_results"])
    assert body["credits_used"] == 7


async def test_almanacs_own_database_is_refused_even_for_a_reader_role(postgres_url: str) -> None:
    """The migrated application database, reached by a safe non-superuser role with SELECT rights."""
    admin_url = make_url(postgres_url).set(drivername="postgresql")
    role = f"almanac_sql_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(admin_url.render_as_string(hide_password=False))
    try:
        await admin.execute(f"CREATE ROLE {role} LOGIN")
        await admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
        await admin.execute(SHARED_ROLE_SAFETY.format(role=role))
        tool = SqlQueryTool(
            reader_for(admin_url.set(username=role).render_as_string(hide_password=False)), max_rows=5, timeout_s=5
        )
        with pytest.raises(ToolUnavailable, match="Almanac's own database"):
            await tool.run({"query": "SELECT email FROM users"}, CONTEXT)
    finally:
        await admin.execute(f"DROP OWNED BY {role}")
        await admin.execute(f"DROP ROLE IF EXISTS {role}")
        await admin.close()
