"""sql_query on SQLite: answers as a Markdown table within the row limit; every kind of write is
refused by the read-only connection and changes nothing; runaway queries are stopped. (PostgreSQL,
and the write attempt on both engines through the chat tool: tests/integration/test_tools_sql.py.)"""

import datetime
import decimal
import hashlib
import sqlite3
from pathlib import Path

import pytest

from almanac.tools.base import ToolContext, ToolUnavailable
from almanac.tools.builtin.sql import SqlQueryTool, cell, markdown_table, quotes_data
from almanac.tools.builtin.sql_engines import QueryResult, reader_for

CONTEXT = ToolContext("u1", "c1", 1, "q1", "q1-t1", "toolu_1")


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, note TEXT)")
        connection.executemany(
            "INSERT INTO items (name, price, note) VALUES (?, ?, ?)",
            [("tea", 3.5, "green | loose"), ("coffee", 4.0, "line one\nline two"), ("water", 0.0, None)],
        )
        connection.execute("CREATE TABLE numbers (n INTEGER)")
        connection.executemany("INSERT INTO numbers VALUES (?)", [(i,) for i in range(50)])
    connection.close()
    return path


def tool(path: Path, *, max_rows: int = 10, timeout_s: float = 5.0, max_bytes: int = 4_000_000) -> SqlQueryTool:
    return SqlQueryTool(reader_for(f"sqlite:///{path}"), max_rows=max_rows, timeout_s=timeout_s, max_bytes=max_bytes)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_query_answers_as_a_markdown_table(database: Path) -> None:
    result = await tool(database).run({"query": "SELECT name, price, note FROM items ORDER BY id"}, CONTEXT)
    assert not result.is_error and not result.free
    assert result.content == (
        "| name | price | note |\n|---|---|---|\n"
        "| tea | 3.5 | green \\| loose |\n| coffee | 4.0 | line one line two |\n| water | 0.0 | NULL |\n\n[3 rows]"
    )
    assert result.data == {"columns": ["name", "price", "note"], "rows": 3, "more": False}
    assert "SQLite" in tool(database).description and "sqlite_master" in tool(database).description


async def test_rows_past_the_limit_are_not_fetched_and_the_table_says_so(database: Path) -> None:
    result = await tool(database, max_rows=5).run({"query": "SELECT n FROM numbers ORDER BY n"}, CONTEXT)
    assert result.content.count("\n| ") == 5
    assert result.content.endswith("[5 rows shown; more rows exist (at most 5 are fetched): narrow the query]")
    assert result.data is not None and result.data["more"] is True


async def test_no_rows_costs_nothing(database: Path) -> None:
    result = await tool(database).run({"query": "SELECT * FROM items WHERE price > 100"}, CONTEXT)
    assert (result.content, result.free, result.is_error) == ("No rows. Columns: id, name, price, note.", True, False)


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO items (name, price) VALUES ('evil', 1)",
        "UPDATE items SET price = 0",
        "DELETE FROM items",
        "DROP TABLE items",
        "CREATE TABLE pwned (x)",
        "REPLACE INTO items (id, name) VALUES (1, 'evil')",
        "WITH x AS (SELECT 1) INSERT INTO numbers SELECT * FROM x",
        "VACUUM",
        "PRAGMA user_version = 7",
        "PRAGMA query_only = OFF",
        "PRAGMA journal_mode = WAL",
        "SELECT 1; DROP TABLE items",
    ],
)
async def test_every_write_is_refused_by_the_connection_and_changes_nothing(database: Path, statement: str) -> None:
    before = digest(database)
    result = await tool(database).run({"query": statement}, CONTEXT)
    assert result.is_error and result.free
    assert result.content.startswith("The database refused the query: ")
    assert digest(database) == before
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT count(*), sum(price) FROM items").fetchone() == (3, 7.5)
    connection.close()


async def test_attaching_another_file_is_refused_and_creates_nothing(database: Path, tmp_path: Path) -> None:
    result = await tool(database).run({"query": f"ATTACH DATABASE '{tmp_path / 'new.db'}' AS other"}, CONTEXT)
    assert result.is_error and "not authorized" in result.content
    assert not (tmp_path / "new.db").exists()


async def test_a_runaway_query_is_stopped_at_the_time_limit(database: Path) -> None:
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    result = await tool(database, timeout_s=0.3).run({"query": endless}, CONTEXT)
    assert result.is_error and "took longer than 0.3 s and was stopped" in result.content


async def test_a_missing_database_makes_the_tool_unavailable(tmp_path: Path) -> None:
    with pytest.raises(ToolUnavailable, match="cannot open"):
        await tool(tmp_path / "missing.db").run({"query": "SELECT 1"}, CONTEXT)
    assert not (tmp_path / "missing.db").exists()  # mode=ro never creates it


def test_table_cells_are_one_line_bounded_and_typed() -> None:
    assert cell(None) == "NULL"
    assert cell(b"\x00\x01" * 10) == "<20 bytes: 00010001000100010001000100010001…>"
    assert cell(datetime.date(2026, 1, 2)) == "2026-01-02"
    assert cell(decimal.Decimal("1E+2")) == "100"
    assert cell("x" * 300) == "x" * 200 + "…"
    table = markdown_table(QueryResult(("a",), [(str(i) * 50,) for i in range(10)], False), max_rows=10, max_chars=200)
    assert table.endswith("more rows not shown (at most 10 are fetched): narrow the query]")
    assert len(table) < 400


async def test_a_huge_value_is_refused_before_it_is_built(database: Path) -> None:
    """`randomblob(900000000)` once made the server allocate 900 MB per call; now no string or blob
    may grow past a quarter of the query's byte budget, checked before allocation."""
    for statement in (
        "SELECT randomblob(900000000)",
        "SELECT zeroblob(900000000)",
        "SELECT length(randomblob(900000000))",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3000) "
        "SELECT group_concat(hex(randomblob(1000))) FROM r",
    ):
        result = await tool(database).run({"query": statement}, CONTEXT)
        assert result.is_error and result.free, statement
        assert "string or blob too big" in result.content and "at most 1,000,000 bytes" in result.content


async def test_a_result_larger_than_the_budget_is_refused_however_it_is_spread(database: Path) -> None:
    many_rows = (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 50) SELECT randomblob(900000) FROM r"
    )
    wide = "SELECT " + ", ".join(["randomblob(900000)"] * 6)
    for statement in (many_rows, wide):
        result = await tool(database, max_rows=100).run({"query": statement}, CONTEXT)
        assert result.is_error and result.free
        assert "the result is larger than 4,000,000 bytes" in result.content
    too_wide = "SELECT " + ", ".join(f"{n} AS c{n}" for n in range(101))
    result = await tool(database).run({"query": too_wide}, CONTEXT)
    assert result.is_error and "too many columns" in result.content
    within = await tool(database, max_rows=100).run(
        {"query": many_rows.replace("randomblob(900000)", "randomblob(1000)")}, CONTEXT
    )
    assert not within.is_error and within.data is not None and within.data["rows"] == 50


async def test_an_error_quoting_data_is_charged_like_a_result_and_others_stay_free(database: Path) -> None:
    """Reading the database through error messages (a JSON path built from the data) is not free."""
    leak = await tool(database).run(
        {"query": "SELECT json_extract('{}', (SELECT group_concat(name) FROM items))"}, CONTEXT
    )
    assert leak.is_error and not leak.free
    assert "tea,coffee,water" in leak.content and "charged like a result" in leak.content
    for mistake in ("SELECT * FROM nosuch", "SELECT nosuch FROM items", "SELEC 1", "SELECT json_extract('{}', 'no')"):
        result = await tool(database).run({"query": mistake}, CONTEXT)
        assert result.is_error and result.free, (mistake, result.content)


@pytest.mark.parametrize(
    ("message", "query", "quoted"),
    [
        (
            'invalid input syntax for type integer: "ann@example.com,bob@example.com"',
            "SELECT CAST((SELECT string_agg(email, ',') FROM users) AS int)",
            True,
        ),
        ('relation "users" does not exist', "SELECT * FROM Users", False),
        ('column "x" does not exist', 'SELECT "x" FROM t', False),
        (
            "JSON path error near 'tea,coffee'",
            "SELECT json_extract('{}', (SELECT group_concat(name) FROM items))",
            True,
        ),
        ('syntax error at or near "SELEC"', "SELEC 1", False),
        ('invalid input syntax for type integer: "abc"', "SELECT 'abc'::int", False),
        ("permission denied for function pg_cancel_backend", "SELECT pg_cancel_backend(1)", False),
    ],
)
def test_what_counts_as_quoting_data(message: str, query: str, quoted: bool) -> None:
    assert quotes_data(message, query) is quoted


async def test_a_database_holding_almanacs_own_tables_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "copy-of-the-app.db"
    with sqlite3.connect(path) as connection:
        for table in ("users", "api_keys", "web_sessions", "history_items", "ledger_entries"):
            connection.execute(f"CREATE TABLE {table} (id INTEGER)")
    connection.close()
    with pytest.raises(ToolUnavailable, match="Almanac's own database"):
        await tool(path).run({"query": "SELECT * FROM api_keys"}, CONTEXT)
