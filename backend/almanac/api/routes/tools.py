"""The tools a chat can use right now: built-in ones and those of running MCP servers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.responses import errors
from almanac.billing.pricing import tool_call_cost

router = APIRouter(prefix="/api", tags=["tools"])


class ToolPublic(BaseModel):
    name: str = Field(description="What the model calls it, e.g. `git__git_log` (`<server>__<tool>` for MCP tools).")
    description: str
    source: str = Field(description="`builtin`, or the name of the MCP server that serves it.")
    billing: str = Field(description="Price category: `documentation`, `github` or `tool`.")
    credits: int = Field(description="Credits per call (documentation: once per query, however often it runs).")
    input_schema: dict[str, Any] = Field(description="JSON Schema of the tool's input.")


class ToolsPublic(BaseModel):
    data: list[ToolPublic]
    count: int


@router.get("/tools", response_model=ToolsPublic, responses=errors(401))
async def list_tools(_: CurrentUser, services: ServicesDep) -> ToolsPublic:
    """Every tool available to the caller, with its source and price."""
    data = [
        ToolPublic(
            name=tool.name,
            description=tool.description,
            source=tool.source,
            billing=tool.billing.value,
            credits=tool_call_cost(tool.billing, documentation_charged=False),
            input_schema=dict(tool.input_schema),
        )
        for tool in services.registry
    ]
    return ToolsPublic(data=data, count=len(data))
