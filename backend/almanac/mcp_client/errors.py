"""What can go wrong with an MCP server, by audience.

For the model (all raised by `McpServer.call`, so they become tool results):
- `ServerUnavailable` (a `ToolUnavailable`): the server is starting, restarting or paused; nothing
  ran, nothing is charged.
- `ServerLost` (a `ToolUnavailable`): the server died or was stopped while the call ran; not charged.
- `TokenRequired` (a `ToolUnavailable`): the server runs each user's calls with their own token
  (`user_token`), this user has none and the operator's is not shared; not sent, not charged.
- `CredentialsRejected` (a `ToolUnavailable`): the server refused the token the call ran with
  (401/403, bad credentials); not charged.
- `CallRejected` (a `ToolError`): the call is not allowed, or the server refused the request.
- `CallTimeout` (a `TimeoutError`, so the turn loop records a timeout and refunds the call).

For the logs: `describe(exc)` says in one line why a server failed.
"""

from __future__ import annotations

from mcp import MCPError
from mcp.types import CONNECTION_CLOSED

from almanac.tools.base import ToolError, ToolUnavailable


class ServerUnavailable(ToolUnavailable):
    """The server is not running right now; the call was not sent."""


class ServerLost(ToolUnavailable):
    """The server died, hung or was stopped while the call was running."""


class TokenRequired(ToolUnavailable):
    """The user has no token of their own for this server's integration, and none is shared."""


class CredentialsRejected(ToolUnavailable):
    """The server reported an authorization error for the token the call ran with."""


class CallRejected(ToolError):
    """The call is not allowed here, or the server answered it with a protocol error."""


class CallTimeout(TimeoutError):
    """The call did not finish within the server's `timeout_s`."""


def describe(exc: BaseException, start_timeout_s: float | None = None) -> str:
    """A one-line description of why a server failed (`start_timeout_s`: it failed while starting)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:  # the SDK's task groups wrap errors
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return f"it did not start within {start_timeout_s:g} s" if start_timeout_s else "it did not answer in time"
    if isinstance(exc, FileNotFoundError):
        return f"cannot run {exc.filename or 'the command'}: not found"
    if isinstance(exc, OSError):
        return f"cannot start it: {exc.strerror or exc}"
    if isinstance(exc, MCPError):
        return "the connection closed (the server exited)" if exc.code == CONNECTION_CLOSED else exc.message
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
