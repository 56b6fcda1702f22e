"""Running one tool call: input validated against the schema first, a timeout, and every failure
turned into an outcome the model can read (never an exception escaping to the caller)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from jsonschema import Draft202012Validator

from almanac.llm.messages import ToolUseBlock
from almanac.tools.base import Tool, ToolContext, ToolError, ToolUnavailable
from almanac.tools.registry import ToolRegistry

log = logging.getLogger(__name__)


class ToolStatus(StrEnum):
    OK = "ok"
    ERROR = "error"  # the tool ran and reported a failure
    INVALID_INPUT = "invalid_input"
    UNKNOWN_TOOL = "unknown_tool"
    NOT_RUN = "not_run"  # e.g. the balance could not cover it
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"  # the tool could not run (its server is down)
    CRASHED = "crashed"
    CANCELLED = "cancelled"
    OVER_LIMIT = "over_limit"  # not run: the question reached its credit limit (MAX_QUERY_CREDITS)

    @property
    def billable(self) -> bool:
        """A call is charged only if the tool ran to completion (successfully or not)."""
        return self in (ToolStatus.OK, ToolStatus.ERROR)


@dataclass(frozen=True)
class ToolOutcome:
    content: str
    status: ToolStatus
    duration_ms: int = 0
    data: Mapping[str, Any] | None = None
    free: bool = False  # the tool ran but its result costs nothing (see `ToolOutput.free`)

    @property
    def is_error(self) -> bool:
        return self.status is not ToolStatus.OK

    @property
    def chargeable(self) -> bool:
        """Whether the call keeps its price: it ran to completion and its result is not free."""
        return self.status.billable and not self.free


def check_call(registry: ToolRegistry, call: ToolUseBlock) -> ToolOutcome | None:
    """Why this call cannot run (unknown tool, unparseable or schema-invalid input), or None."""
    tool = registry.get(call.name)
    if tool is None:
        available = ", ".join(registry.names) or "none"
        return ToolOutcome(f"Unknown tool {call.name!r}. Available tools: {available}.", ToolStatus.UNKNOWN_TOOL)
    if call.parse_error:
        return ToolOutcome(
            f"The arguments for {call.name} were not valid JSON ({call.parse_error}). "
            "Call the tool again with a JSON object matching its input schema.",
            ToolStatus.INVALID_INPUT,
        )
    problems = _schema_problems(tool, call.input)
    if problems:
        return ToolOutcome(
            f"Invalid input for {call.name}: {'; '.join(problems)}. "
            f"Expected input schema: {json.dumps(tool.input_schema, separators=(',', ':'))}",
            ToolStatus.INVALID_INPUT,
        )
    return None


def _schema_problems(tool: Tool, arguments: Mapping[str, Any]) -> list[str]:
    validator = Draft202012Validator(tool.input_schema)
    problems = []
    for error in sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))[:5]:
        where = "/".join(str(part) for part in error.absolute_path) or "(input)"
        problems.append(f"{where}: {error.message}")
    return problems


async def run_call(tool: Tool, call: ToolUseBlock, context: ToolContext, *, timeout_s: float) -> ToolOutcome:
    """Run a checked call under its own timeout. Cancellation propagates to the caller."""
    started = time.perf_counter()

    def elapsed() -> int:
        return int((time.perf_counter() - started) * 1000)

    try:
        async with asyncio.timeout(timeout_s):
            output = await tool.run(dict(call.input), context)
    except TimeoutError:
        return ToolOutcome(
            f"{call.name} timed out after {timeout_s:g} s and was stopped.", ToolStatus.TIMEOUT, elapsed()
        )
    except ToolUnavailable as exc:
        return ToolOutcome(f"{call.name} is unavailable: {exc}", ToolStatus.UNAVAILABLE, elapsed())
    except ToolError as exc:
        return ToolOutcome(f"{call.name} failed: {exc}", ToolStatus.ERROR, elapsed())
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # boundary: a tool bug must become a result, not a crashed chat
        log.exception("tool %s crashed", call.name)
        return ToolOutcome(f"{call.name} failed unexpectedly ({type(exc).__name__}).", ToolStatus.CRASHED, elapsed())
    status = ToolStatus.ERROR if output.is_error else ToolStatus.OK
    return ToolOutcome(output.content, status, elapsed(), output.data, output.free)
