"""Where `sql_query` must never read: the application's own database. Checked when the server
starts (a `ConfigError` saying why); `sql_engines` also refuses, at every call, any database that
holds Almanac's tables, whatever name or route reached it.

The same database is: for SQLite, the same file — compared after resolving relative paths and
symbolic links, and by device and inode, so a hard link or a path through another folder is the
same file; for PostgreSQL, the same server (host names resolved; `localhost`, loopback addresses
and a local socket are one server) and port, and the same database — or the same role, which on
that server can see and signal the application's own sessions.
"""

from __future__ import annotations

import getpass
import os
import socket
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from almanac.tools.builtin.sql_engines import sqlite_path

_LOCAL = "(this machine)"


def refusal(tool_url: str, app_url: str, *, cwd: Path) -> str | None:
    """Why SQL_TOOL_DATABASE_URL must not be used with the application's DATABASE_URL (None: it may)."""
    tool_file, app_file = sqlite_path(tool_url), sqlite_path(app_url)
    if tool_file is not None or app_file is not None:
        if tool_file is None or app_file is None or app_file in ("", ":memory:"):
            return None
        if _same_file(cwd / tool_file, cwd / app_file):
            return (
                f"SQL_TOOL_DATABASE_URL names the application's own database file ({app_file}): every user could "
                "read every user's messages, e-mail addresses and key hashes. Give sql_query a database of its own."
            )
        return None
    try:
        tool, app = make_url(tool_url), make_url(app_url)
    except ArgumentError:
        return None
    if not _server(tool.host, tool.query.get("host")) & _server(app.host, app.query.get("host")):
        return None
    if (tool.port or 5432) != (app.port or 5432):
        return None
    user = getpass.getuser()
    tool_user, app_user = tool.username or user, app.username or user
    if (tool.database or tool_user) == (app.database or app_user):
        return (
            f"SQL_TOOL_DATABASE_URL names the application's own database ({app.database or app_user} on the same "
            "server): every user could read every user's messages, e-mail addresses and key hashes. Give sql_query "
            "a database of its own (and a role of its own)."
        )
    if tool_user == app_user:
        return (
            f"SQL_TOOL_DATABASE_URL connects as the application's own role ({app_user}) on the same server: "
            "that role can read the application's database, and sees and can cancel its sessions. Give sql_query "
            "a role of its own, with SELECT rights on its own database only."
        )
    return None


def _same_file(first: Path, second: Path) -> bool:
    try:
        if first.exists() and second.exists():
            return os.path.samefile(first, second)
    except OSError:
        pass
    return os.path.realpath(first) == os.path.realpath(second)


def _server(host: str | None, socket_folder: object) -> frozenset[str]:
    """What a host names: its addresses (a local socket and loopback names count as this machine)."""
    name = (host or (socket_folder if isinstance(socket_folder, str) else "") or "").strip().lower()
    if not name or name.startswith("/") or name in ("localhost", socket.gethostname().lower()):
        return frozenset({_LOCAL})
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(name, None)}
    except OSError:
        return frozenset({name})
    if any(address.startswith("127.") or address == "::1" for address in addresses):
        return frozenset({_LOCAL})
    return frozenset(addresses)
