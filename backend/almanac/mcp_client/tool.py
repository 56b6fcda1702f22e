"""An MCP server's tool as an Almanac `Tool`: registered as `<server>__<tool>`, run on the server."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mcp import types

from almanac.billing.pricing import BillingCategory
from almanac.mcp_client.errors import CredentialsRejected
from almanac.mcp_client.results import authorization_problem, to_output
from almanac.tools.base import ToolContext, ToolOutput

MAX_DESCRIPTION = 2_000


class ToolCaller(Protocol):
    """Runs a call on the server for a user (an `McpServer`, or `UserSessions` for servers that use
    each user's own token)."""

    async def call(self, tool: str, arguments: Mapping[str, Any], *, user_id: str = "") -> types.CallToolResult: ...


@dataclass
class McpTool:
    """One remote tool. `run` raises the server's `ToolError`s / `CallTimeout` (see `server.py`)."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None
    billing: BillingCategory
    source: str
    remote_name: str
    caller: ToolCaller
    timeout_s: float | None = None  # the server's timeout_s: the turn loop uses it instead of TOOL_TIMEOUT_S
    # Set for servers that act with a token (GitHub's): an authorization error from the server is
    # then `CredentialsRejected` (not charged), and this says what to do about it.
    credentials_hint: str | None = None

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        """Call the tool on its server, as the calling user, and turn the answer into text for the model."""
        result = await self.caller.call(self.remote_name, arguments, user_id=context.user_id)
        if self.credentials_hint is not None and (problem := authorization_problem(result)):
            raise CredentialsRejected(
                f"the {self.source} server refused the token this call ran with ({problem}). "
                f"{self.credentials_hint} Nothing was charged."
            )
        return to_output(result)


def mcp_tool(
    tool: types.Tool,
    *,
    name: str,
    server: str,
    billing: BillingCategory,
    caller: ToolCaller,
    timeout_s: float,
    credentials_hint: str | None = None,
) -> McpTool:
    """The registry entry for `tool` as served by `server`."""
    description = (tool.description or tool.title or f"The {tool.name} tool of the {server} MCP server.").strip()
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return McpTool(
        name=name,
        description=description,
        input_schema=schema,
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        billing=billing,
        source=server,
        remote_name=tool.name,
        caller=caller,
        timeout_s=timeout_s,
        credentials_hint=credentials_hint,
    )
