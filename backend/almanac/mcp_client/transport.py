"""Opening an MCP client session to one configured server: a subprocess over stdio, or a URL over
streamable HTTP. The only place that knows the SDK's transport APIs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TextIO

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client

from almanac import __version__
from almanac.mcp_client.config import ServerConfig

CLIENT_INFO = types.Implementation(name="almanac", version=__version__)
HTTP_CONNECT_TIMEOUT_S = 30.0
HTTP_STREAM_READ_TIMEOUT_S = 300.0


@asynccontextmanager
async def open_session(
    config: ServerConfig,
    *,
    read_timeout_s: float,
    errlog: TextIO | None,
    on_spawned: Callable[[], None],
    on_tools_changed: Callable[[], None],
) -> AsyncIterator[ClientSession]:
    """An entered (not yet initialised) session. Enter and exit it in the same task.

    `read_timeout_s` bounds every request on the session; `errlog` receives a stdio server's
    stderr; `on_spawned` runs once the process exists; `on_tools_changed` runs when the server
    sends `notifications/tools/list_changed`.
    """

    async def handle(message: types.ServerNotification | Exception) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            on_tools_changed()

    if config.transport == "stdio":
        parameters = StdioServerParameters(
            command=config.command, args=list(config.args), env=dict(config.env) or None, cwd=config.cwd
        )
        async with stdio_client(parameters, errlog=errlog) if errlog else stdio_client(parameters) as (read, write):
            on_spawned()
            async with ClientSession(
                read, write, read_timeout_seconds=read_timeout_s, message_handler=handle, client_info=CLIENT_INFO
            ) as session:
                yield session
        return
    timeout = httpx2.Timeout(HTTP_CONNECT_TIMEOUT_S, read=max(HTTP_STREAM_READ_TIMEOUT_S, read_timeout_s))
    async with (
        httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout) as http,
        streamable_http_client(config.url, http_client=http) as (read, write),
    ):
        on_spawned()
        async with ClientSession(
            read, write, read_timeout_seconds=read_timeout_s, message_handler=handle, client_info=CLIENT_INFO
        ) as session:
            yield session


async def list_all_tools(session: ClientSession) -> list[types.Tool]:
    """Every tool the server offers (following pagination cursors)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools
