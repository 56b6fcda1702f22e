"""`sql_query`: one read-only SQL statement against the configured database, answered as a
Markdown table. Read-only is enforced by the connection, and what one statement may return is
bounded in bytes (see `sql_engines.py`). A statement the database refuses (a write, a syntax error,
the time limit, a result too large) is an error the model reads; it and a query that returns no rows
cost nothing — except a refusal whose message quotes data from the database (a failed CAST echoes
the value), which is charged like the result it is. An unreachable database makes the call
unavailable.
"""

from __future__ import annotations

import datetime
import decimal
import re
from collections.abc import Mapping, Sequence
from typing import Any

from almanac.billing.pricing import BillingCategory
from almanac.tools.base import ToolContext, ToolOutput, ToolUnavailable
from almanac.tools.builtin.sql_engines import DatabaseUnavailable, QueryRefused, QueryResult, Reader

MAX_CELL_CHARS = 200
MAX_TABLE_CHARS = 60_000
_TABLES = {
    "SQLite": "SELECT name, sql FROM sqlite_master WHERE type = 'table'",
    "PostgreSQL": "SELECT table_schema, table_name FROM information_schema.tables "
    "WHERE table_schema NOT IN ('pg_catalog', 'information_schema')",
}


class SqlQueryTool:
    name = "sql_query"
    billing = BillingCategory.TOOL
    source = "builtin"
    output_schema: Mapping[str, Any] | None = None

    def __init__(self, reader: Reader, *, max_rows: int, timeout_s: float, max_bytes: int = 4_000_000) -> None:
        self._reader = reader
        self._max_rows = max_rows
        self._max_bytes = max_bytes
        self._query_timeout_s = timeout_s
        self.timeout_s = timeout_s + 15.0  # connecting comes on top of the statement's own limit
        self.description = (
            f"Run one read-only SQL query on the configured {reader.engine} database and get the rows back as a "
            f"table (at most {max_rows} rows, {timeout_s:g} s). Writes are refused by the database. "
            f"To see the tables: {_TABLES.get(reader.engine, '')}."
        )
        self.input_schema: Mapping[str, Any] = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 20_000, "description": "One SQL statement."}
            },
            "required": ["query"],
            "additionalProperties": False,
        }

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        query = str(arguments["query"])
        try:
            result = await self._reader.query(
                query, max_rows=self._max_rows, timeout_s=self._query_timeout_s, max_bytes=self._max_bytes
            )
        except DatabaseUnavailable as exc:
            raise ToolUnavailable(str(exc)) from None
        except QueryRefused as exc:
            # A refusal costs nothing — unless its message quotes what the database holds (a failed
            # CAST echoes the value it could not convert): data read that way is charged like a result.
            quoted = quotes_data(str(exc), query)
            note = " (the message quotes data, so the call is charged like a result)" if quoted else ""
            hint = f"\nHINT: {exc.hint}" if exc.hint else ""
            return ToolOutput(f"The database refused the query{note}: {exc}{hint}", is_error=True, free=not quoted)
        if not result.columns:
            return ToolOutput("The statement returned no rows.", free=True)
        if not result.rows:
            return ToolOutput(f"No rows. Columns: {', '.join(result.columns)}.", free=True)
        return ToolOutput(
            markdown_table(result, max_rows=self._max_rows),
            data={"columns": list(result.columns), "rows": len(result.rows), "more": result.more},
        )


_QUOTED = re.compile(r'"((?:[^"]|"")*)"|\'((?:[^\']|\'\')*)\'')


def quotes_data(message: str, query: str) -> bool:
    """Whether an error message quotes text the query itself does not contain — a value from the
    database (`invalid input syntax for type integer: "ann@example.com,bob@…"`), as opposed to a
    name or literal the query wrote (`relation "users" does not exist`). Compared without case
    (the database folds unquoted names) and ignoring the quotes' own escaping."""
    written = query.casefold()
    for match in _QUOTED.finditer(message):
        quoted = (match.group(1) if match.group(1) is not None else match.group(2) or "").casefold()
        if quoted and quoted not in written and quoted.replace('""', '"').replace("''", "'") not in written:
            return True
    return False


def markdown_table(result: QueryResult, *, max_rows: int, max_chars: int = MAX_TABLE_CHARS) -> str:
    """The rows as a Markdown table, each cell on one line and cut to a bound, with a note when rows
    were left out (past `max_rows`, or past `max_chars` of table)."""
    lines = [_row(result.columns), "|" + "---|" * len(result.columns)]
    size = sum(len(line) + 1 for line in lines)
    shown = 0
    for row in result.rows:
        line = _row([cell(value) for value in row])
        if size + len(line) > max_chars:
            break
        lines.append(line)
        size += len(line) + 1
        shown += 1
    if shown < len(result.rows) or result.more:
        more = "more rows exist" if result.more else f"{len(result.rows) - shown} more rows not shown"
        lines.append(f"\n[{shown} rows shown; {more} (at most {max_rows} are fetched): narrow the query]")
    else:
        lines.append(f"\n[{shown} row{'s' if shown != 1 else ''}]")
    return "\n".join(lines)


def cell(value: Any) -> str:
    """One value as table text: NULL, bytes as a hex preview, dates in ISO form, the rest as text."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        return f"<{len(data)} bytes: {data[:16].hex()}{'…' if len(data) > 16 else ''}>"
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    text = str(value)
    return text if len(text) <= MAX_CELL_CHARS else text[:MAX_CELL_CHARS] + "…"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_escape(text) for text in cells) + " |"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
