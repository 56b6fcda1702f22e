"""What a tool is: a name, a description, a JSON-Schema for its input, a price category, and an
async `run` that receives its arguments and a `ToolContext`.

A tool reports an expected failure by raising `ToolError` (the model sees the message and can
react); any other exception is caught by the runner and reported as a crash.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from almanac.billing.pricing import BillingCategory

# Both Anthropic and OpenAI accept tool names matching this.
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class ToolError(Exception):
    """An expected tool failure; its message is shown to the model as an error result."""


class ToolUnavailable(ToolError):
    """The tool could not run at all (e.g. its server is down or died mid-call): an error result
    the model sees, and the call is not charged."""


@dataclass(frozen=True)
class ToolContext:
    """Who is calling and where the result will be stored."""

    user_id: str
    conversation_id: str
    query_number: int
    query_id: str
    item_id: str
    tool_use_id: str
    # Tell the user what a long-running call is doing (shown as a `tool_progress` event); never
    # raises. None when nobody listens.
    progress: Callable[[str], None] | None = field(default=None, compare=False)

    def report(self, message: str) -> None:
        """Send a progress message, if anyone listens."""
        if self.progress is not None:
            self.progress(message)


@dataclass(frozen=True)
class ToolOutput:
    """A tool's result: text for the model, optional structured data, and whether it is an error."""

    content: str
    is_error: bool = False
    data: Mapping[str, Any] | None = None
    # The call costs nothing although it ran: it found nothing (no passages, no such ID) or could
    # not start its real work (a clarifying question back to the model). It is refunded.
    free: bool = False


@runtime_checkable
class Tool(Protocol):
    """A tool. It may also define `timeout_s: float | None`: its own time limit, replacing
    TOOL_TIMEOUT_S (tools that wait on slow upstreams, or MCP servers with their own limits)."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None
    billing: BillingCategory
    source: str

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        """Do the work; raise `ToolError` for failures the model should see."""
        ...
