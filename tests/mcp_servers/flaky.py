"""A small MCP server for tests (stdio): tools that answer, are slow, hang, crash the process
mid-call, freeze the whole server, report `isError`, return large, structured or mixed content,
and change the tool list at runtime (sending `notifications/tools/list_changed`).

Run: `python tests/mcp_servers/flaky.py` (stdio) or `… --http PORT` (streamable HTTP at
`http://127.0.0.1:PORT/mcp`). Environment: `FLAKY_GREETING` is echoed by
`whoami`; `FLAKY_EXIT_AT_START=1` makes the process exit before serving (a server that cannot start).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel

server = MCPServer("flaky", version="1.0.0")


class Release(BaseModel):
    name: str
    version: str
    tags: list[str]


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def whoami() -> str:
    """The process id and the FLAKY_GREETING environment variable."""
    return f"pid={os.getpid()} greeting={os.environ.get('FLAKY_GREETING', '')}"


@server.tool()
async def slow(seconds: float) -> str:
    """Answer after `seconds`."""
    await asyncio.sleep(seconds)
    return f"done after {seconds:g} s"


@server.tool()
async def hang() -> str:
    """Never answer (the server itself stays responsive)."""
    await asyncio.Event().wait()
    return "unreachable"


@server.tool()
async def freeze(seconds: float = 3600) -> str:
    """Block the whole server (it stops answering anything, pings included)."""
    time.sleep(seconds)  # noqa: ASYNC251 (blocking the event loop is the point)
    return "thawed"


@server.tool()
def crash() -> str:
    """Kill the server process in the middle of the call."""
    print("flaky: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def fail(message: str) -> str:
    """Report a tool error (`isError`)."""
    raise ToolError(message)


@server.tool()
def big(size: int) -> str:
    """A text result of `size` characters."""
    line = "0123456789abcdefghijklmnopqrstuvwxyz\n"
    return (line * (size // len(line) + 1))[:size]


@server.tool()
def release() -> Release:
    """A structured result (structuredContent and a JSON text block)."""
    return Release(name="almanac", version="1.2.3", tags=["stable", "lts"])


@server.tool()
def structured_only() -> CallToolResult:
    """Only structuredContent, no text block."""
    return CallToolResult(content=[], structured_content={"answer": 42, "items": ["a", "b"]})


@server.tool()
def mixed() -> CallToolResult:
    """Every kind of content block."""
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 100).decode()
    return CallToolResult(
        content=[
            TextContent(text="Here is everything."),
            ImageContent(data=png, mime_type="image/png"),
            AudioContent(data=base64.b64encode(b"RIFF" + b"\0" * 50).decode(), mime_type="audio/wav"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///notes.md", text="# Notes\nremember")),
            EmbeddedResource(
                resource=BlobResourceContents(
                    uri="file:///blob.bin", blob=base64.b64encode(b"\1\2\3" * 10).decode(), mime_type="application/x"
                )
            ),
            ResourceLink(uri="https://example.com/big.log", name="big.log", description="a large log"),
        ]
    )


def _extra(text: str) -> str:
    return f"extra: {text}"


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Add a tool called `name` (it echoes with a prefix) and announce the change."""
    server.add_tool(_extra, name=name, description=f"Added at runtime as {name}.")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool()
async def remove_tool(name: str, ctx: Context) -> str:
    """Remove the tool called `name` and announce the change."""
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    return f"removed {name}"


@server.tool()
def search_repositories(query: str) -> str:
    """A stand-in for GitHub's repository search (same name and required input)."""
    return json.dumps({"total_count": 1, "items": [{"full_name": f"example/{query.replace(' ', '-')}", "stars": 7}]})


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of an HTTP request header (streamable HTTP only; empty over stdio)."""
    return (ctx.headers or {}).get(name.lower(), "")


@server.tool()
def shout(text: str) -> str:
    """Write `text` to stderr (which the client should log) and return it."""
    print(f"flaky stderr: {text}", file=sys.stderr, flush=True)
    return text


def main() -> None:
    if os.environ.get("FLAKY_EXIT_AT_START") == "1":
        print("flaky: refusing to start", file=sys.stderr, flush=True)
        sys.exit(1)
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()


if __name__ == "__main__":
    main()
