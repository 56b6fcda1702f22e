"""One-line reasons for a server's failure, whatever the SDK wrapped them in."""

import pytest
from mcp import MCPError
from mcp.types import CONNECTION_CLOSED

from almanac.mcp_client.errors import describe


@pytest.mark.parametrize(
    ("error", "start_timeout_s", "reason"),
    [
        (
            ExceptionGroup("g", [ExceptionGroup("h", [MCPError(CONNECTION_CLOSED, "Connection closed")])]),
            None,
            "the connection closed (the server exited)",
        ),
        (MCPError(-32602, "Unknown tool: x"), None, "Unknown tool: x"),
        (TimeoutError(), 60.0, "it did not start within 60 s"),
        (TimeoutError(), None, "it did not answer in time"),
        (FileNotFoundError(2, "No such file or directory", "/opt/server"), None, "cannot run /opt/server: not found"),
        (PermissionError(13, "Permission denied"), None, "cannot start it: Permission denied"),
        (RuntimeError("boom"), None, "RuntimeError: boom"),
        (RuntimeError(), None, "RuntimeError"),
    ],
)
def test_failures_are_described_in_one_line(error: BaseException, start_timeout_s: float | None, reason: str) -> None:
    assert describe(error, start_timeout_s) == reason
