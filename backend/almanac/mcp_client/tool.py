"""An MCP server's tool as an Almanac `Tool`: registered as `<server>__<tool>`, run on the server."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mcp import types

from almanac.billing.pricing import BillingCategory
from almanac.mcp_client.results import to_output
from almanac.tools.base import ToolContext, ToolOutput

MAX_DESCRIPTION = 2_000


class ToolCaller(Protocol):
    async def call(self, tool: str, arguments: Mapping[str, Any]) -> types.CallToolResult: ...


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

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        """Call the tool on its server and turn the answer into text for the model."""
        return to_output(await self.caller.call(self.remote_name, arguments))


def mcp_tool(
    tool: types.Tool, *, name: str, server: str, billing: BillingCategory, caller: ToolCaller, timeout_s: float
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
    )
