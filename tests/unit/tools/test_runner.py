"""A tool call's input is checked against its schema first; every failure becomes an outcome."""

import asyncio
from collections.abc import Mapping
from typing import Any

from almanac.billing.pricing import BillingCategory
from almanac.llm.messages import ToolUseBlock
from almanac.tools.base import ToolContext, ToolError, ToolOutput, ToolUnavailable
from almanac.tools.registry import ToolRegistry
from almanac.tools.runner import ToolStatus, check_call, run_call

CONTEXT = ToolContext("u", "c", 1, "q1", "q1-t1", "toolu_1")


class Behaving:
    name = "behaving"
    description = "Does what its input says."
    input_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {"mode": {"enum": ["ok", "error", "raise", "crash", "sleep", "down"]}, "n": {"type": "integer"}},
        "required": ["mode"],
        "additionalProperties": False,
    }
    output_schema = None
    billing = BillingCategory.TOOL
    source = "test"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        mode = arguments["mode"]
        if mode == "error":
            return ToolOutput("it went wrong", is_error=True)
        if mode == "raise":
            raise ToolError("no such repository")
        if mode == "down":
            raise ToolUnavailable("the server is restarting")
        if mode == "crash":
            raise KeyError("secret internals")
        if mode == "sleep":
            await asyncio.sleep(10)
        return ToolOutput(f"done for {context.item_id}", data={"n": arguments.get("n")})


REGISTRY = ToolRegistry([Behaving()])


def call(arguments: dict[str, Any], name: str = "behaving", parse_error: str | None = None) -> ToolUseBlock:
    return ToolUseBlock("toolu_1", name, arguments, parse_error)


def test_a_valid_call_passes_the_check() -> None:
    assert check_call(REGISTRY, call({"mode": "ok", "n": 3})) is None


def test_unknown_tools_are_refused_with_the_list_of_tools() -> None:
    outcome = check_call(REGISTRY, call({}, name="nope"))
    assert outcome is not None and outcome.status is ToolStatus.UNKNOWN_TOOL
    assert "Available tools: behaving" in outcome.content


def test_schema_violations_name_the_field_and_show_the_schema() -> None:
    outcome = check_call(REGISTRY, call({"mode": "fly", "n": "three", "extra": 1}))
    assert outcome is not None and outcome.status is ToolStatus.INVALID_INPUT and outcome.is_error
    assert "mode: 'fly' is not one of" in outcome.content
    assert "n: 'three' is not of type 'integer'" in outcome.content
    assert "Additional properties are not allowed" in outcome.content
    assert '"required":["mode"]' in outcome.content


def test_unparseable_arguments_ask_the_model_to_try_again() -> None:
    outcome = check_call(REGISTRY, call({}, parse_error="Expecting value"))
    assert outcome is not None and outcome.status is ToolStatus.INVALID_INPUT
    assert "not valid JSON" in outcome.content


async def test_outcomes_of_running_a_call() -> None:
    tool = Behaving()
    ok = await run_call(tool, call({"mode": "ok", "n": 2}), CONTEXT, timeout_s=5)
    assert (ok.status, ok.content, ok.data) == (ToolStatus.OK, "done for q1-t1", {"n": 2})
    error = await run_call(tool, call({"mode": "error"}), CONTEXT, timeout_s=5)
    assert (error.status, error.is_error) == (ToolStatus.ERROR, True)
    raised = await run_call(tool, call({"mode": "raise"}), CONTEXT, timeout_s=5)
    assert (raised.status, raised.content) == (ToolStatus.ERROR, "behaving failed: no such repository")
    down = await run_call(tool, call({"mode": "down"}), CONTEXT, timeout_s=5)
    assert (down.status, down.status.billable) == (ToolStatus.UNAVAILABLE, False)
    crashed = await run_call(tool, call({"mode": "crash"}), CONTEXT, timeout_s=5)
    assert crashed.status is ToolStatus.CRASHED and "secret internals" not in crashed.content


async def test_a_slow_call_times_out_into_an_error_result() -> None:
    outcome = await run_call(Behaving(), call({"mode": "sleep"}), CONTEXT, timeout_s=0.05)
    assert outcome.status is ToolStatus.TIMEOUT and "timed out after 0.05 s" in outcome.content


def test_only_calls_that_ran_to_completion_are_billable() -> None:
    assert {status for status in ToolStatus if status.billable} == {ToolStatus.OK, ToolStatus.ERROR}
