"""A stand-in for GitHub's MCP server (`github-mcp-server`), to test per-user tokens.

Like the real server in HTTP mode (`http --port N`) it is stateless, refuses any request without
`Authorization: Bearer <token>` (401 with `WWW-Authenticate`, before MCP sees it), and acts with the
token each request carries; in stdio mode it acts with `GITHUB_PERSONAL_ACCESS_TOKEN` from its
environment, one token per process. A token listed in `GITHUB_LIKE_REVOKED` (comma-separated)
answers every tool the way GitHub's server reports a bad token: an error result ending in
`: 401 Bad credentials []`; over stdio, a token listed in `GITHUB_LIKE_REFUSE_START` makes the
process exit at once.

Tools: `whoami` (`token=<fingerprint of the token> pid=<pid>`; `fingerprint()` is the first 16 hex
digits of its SHA-256, so results never carry a token), `search_repositories(query)`, `get_me`,
`wait(seconds)` (answers after that long).
Every HTTP request's token is appended to the file named by `GITHUB_LIKE_LOG`, one per line
(the tests read which tokens reached the server).

Run: `python tests/mcp_servers/github_like.py` (stdio) or `… --http PORT`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("github-like", version="1.0.0")
Scope = dict[str, Any]


def fingerprint(token: str) -> str:
    """How results name a token without containing it."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def _token(ctx: Context) -> str:
    header = (ctx.headers or {}).get("authorization")
    if header is None:  # stdio: one process, one token
        return os.environ.get("GITHUB_PERSONAL_ACCESS_TOKEN", "")
    return header.removeprefix("Bearer ").removeprefix("bearer ")


def _act_as(ctx: Context, what: str) -> str:
    token = _token(ctx)
    revoked = {t for t in os.environ.get("GITHUB_LIKE_REVOKED", "").split(",") if t}
    if not token or token in revoked:
        raise ToolError(f"failed to {what}: GET https://api.github.com/{what}: 401 Bad credentials []")
    return token


@server.tool()
def whoami(ctx: Context) -> str:
    """The token this call ran with, and the server's process id."""
    return f"token={fingerprint(_act_as(ctx, 'user'))} pid={os.getpid()}"


@server.tool()
async def wait(seconds: float, ctx: Context) -> str:
    """Answer after `seconds`."""
    _act_as(ctx, "user")
    await asyncio.sleep(seconds)
    return f"waited {seconds:g} s"


@server.tool()
def get_me(ctx: Context) -> str:
    """The authenticated user (named after the token's fingerprint)."""
    token = _act_as(ctx, "user")
    return json.dumps({"login": f"user-{fingerprint(token)[:6]}"})


@server.tool()
def search_repositories(query: str, ctx: Context) -> str:
    """Search repositories (one made-up hit, named after the query and the caller)."""
    token = _act_as(ctx, "search/repositories")
    name = query.replace(" ", "-")
    return json.dumps({"total_count": 1, "items": [{"full_name": f"user-{fingerprint(token)[:6]}/{name}"}]})


class RequireBearer:
    """ASGI middleware: like GitHub's server, no Authorization header → 401; malformed → 400."""

    def __init__(self, app: Any, log_path: str | None) -> None:
        self.app = app
        self.log_path = log_path

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        authorization = headers.get("authorization")
        if authorization is None:
            await _respond(send, 401, b"Unauthorized", [(b"www-authenticate", b'Bearer resource_metadata="x"')])
            return
        if not authorization.lower().startswith("bearer ") or len(authorization) < 12:
            await _respond(send, 400, b"Authorization header is badly formatted", [])
            return
        if self.log_path:
            _record(self.log_path, authorization[7:])
        await self.app(scope, receive, send)


def _record(path: str, token: str) -> None:
    with open(path, "a", encoding="utf-8") as log:  # tiny and local: fine to block for it here
        log.write(token + "\n")


async def _respond(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    all_headers = [(b"content-type", b"text/plain"), *headers]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    refused = [t for t in os.environ.get("GITHUB_LIKE_REFUSE_START", "").split(",") if t]
    if os.environ.get("GITHUB_PERSONAL_ACCESS_TOKEN") in refused:  # stdio: a token it will not start with
        print("github-like: 401 Bad credentials", file=sys.stderr, flush=True)
        sys.exit(1)
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        import uvicorn

        app = RequireBearer(server.streamable_http_app(stateless_http=True), os.environ.get("GITHUB_LIKE_LOG"))
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()


if __name__ == "__main__":
    main()
