"""An MCP tool runs as its caller (the user's ID reaches the server's caller) and, for servers that
act with a token, turns the server's authorization errors into `CredentialsRejected` (not charged)."""

from collections.abc import Mapping
from typing import Any

import pytest
from mcp import types

from almanac.billing.pricing import BillingCategory
from almanac.llm.messages import ToolUseBlock
from almanac.mcp_client.errors import CredentialsRejected
from almanac.mcp_client.tool import mcp_tool
from almanac.tools.base import ToolContext
from almanac.tools.runner import ToolStatus, run_call

REFUSED = "failed to search: GET https://api.github.com/search/repositories: 401 Bad credentials []"


class Caller:
    """A server that answers every call with `text` (an error when `is_error`) and records the callers."""

    def __init__(self, text: str, *, is_error: bool = False) -> None:
        self.result = types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)
        self.users: list[str] = []

    async def call(self, tool: str, arguments: Mapping[str, Any], *, user_id: str = "") -> types.CallToolResult:
        self.users.append(user_id)
        return self.result


def tool(caller: Caller, *, hint: str | None) -> Any:
    spec = types.Tool(name="search_repositories", input_schema={"type": "object"})
    return mcp_tool(
        spec,
        name="github__search_repositories",
        server="github",
        billing=BillingCategory.GITHUB,
        caller=caller,
        timeout_s=5,
        credentials_hint=hint,
    )


def context(user: str) -> ToolContext:
    return ToolContext(user, "c", 1, "q1", "q1-t1", "toolu_1")


async def test_the_caller_is_the_user_of_the_context() -> None:
    caller = Caller("ok")
    await tool(caller, hint=None).run({}, context("alice"))
    await tool(caller, hint=None).run({}, context("bob"))
    assert caller.users == ["alice", "bob"]


async def test_an_authorization_error_is_unavailable_and_free() -> None:
    github = tool(Caller(REFUSED, is_error=True), hint="Connect a valid token.")
    with pytest.raises(CredentialsRejected, match=r"refused the token .*401 Bad credentials.*Connect a valid token"):
        await github.run({}, context("alice"))
    outcome = await run_call(github, ToolUseBlock("toolu_1", github.name, {}), context("alice"), timeout_s=5)
    assert outcome.status is ToolStatus.UNAVAILABLE and not outcome.chargeable


async def test_other_errors_and_servers_without_a_token_stay_ordinary_results() -> None:
    other = tool(Caller("no such repository", is_error=True), hint="Connect a valid token.")
    outcome = await run_call(other, ToolUseBlock("toolu_1", other.name, {}), context("alice"), timeout_s=5)
    assert outcome.status is ToolStatus.ERROR and outcome.chargeable  # the server did the work
    plain = tool(Caller(REFUSED, is_error=True), hint=None)
    assert (await plain.run({}, context("alice"))).is_error
