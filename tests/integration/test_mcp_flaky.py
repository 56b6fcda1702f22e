"""The MCP client against a real misbehaving server over stdio (tests/mcp_servers/flaky.py):
per-server timeouts honoured end to end, restarts with backoff, the circuit breaker, error
mapping, result formatting, tool-list refresh, stderr to the logs, and streamable HTTP."""

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from tests.mcp_servers.harness import FAST, FLAKY, client_for, eventually, flaky_server, write_config
from tests.mcp_servers.harness import http_server as harness_http_server

from almanac.llm.messages import ToolUseBlock
from almanac.mcp_client import McpClient
from almanac.mcp_client.errors import CallTimeout, ServerLost, ServerUnavailable
from almanac.mcp_client.server import State
from almanac.tools.base import ToolContext, ToolOutput
from almanac.tools.registry import ToolRegistry
from almanac.tools.runner import ToolStatus, run_call

CONTEXT = ToolContext("user", "conversation", 1, "q1", "q1-t1", "toolu_1")


@contextlib.asynccontextmanager
async def running(client: McpClient) -> AsyncIterator[McpClient]:
    await client.start()
    try:
        yield client
    finally:
        await client.stop()


async def run(registry: ToolRegistry, tool_name: str, **arguments: Any) -> ToolOutput:
    tool = registry.get(tool_name)
    assert tool is not None, f"{tool_name} is not registered: {registry.names}"
    return await tool.run(arguments, CONTEXT)


async def pid(registry: ToolRegistry) -> int:
    return int((await run(registry, "flaky__whoami")).content.split()[0].removeprefix("pid="))


SHARED = pytest.mark.asyncio(loop_scope="module")  # these tests share one server (none of them breaks it)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def flaky(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[McpClient, ToolRegistry]]:
    registry = ToolRegistry()
    config = write_config(
        tmp_path_factory.mktemp("flaky"),
        {"flaky": flaky_server(timeout_s=1.5, deny=["fr*"], env={"FLAKY_GREETING": "${GREETING}"})},
    )
    async with running(client_for(config, registry, variables={"GREETING": "hello from the config"})) as client:
        yield client, registry


@SHARED
async def test_tools_are_registered_as_server__tool_minus_the_denied_ones(
    flaky: tuple[McpClient, ToolRegistry],
) -> None:
    client, registry = flaky
    assert {"flaky__echo", "flaky__slow", "flaky__crash", "flaky__add_tool"} <= set(registry.names)
    assert "flaky__freeze" not in registry  # deny: ["fr*"]
    tool = registry.get("flaky__echo")
    assert tool is not None and (tool.source, tool.billing.value) == ("flaky", "tool")
    assert getattr(tool, "timeout_s", None) == 1.5  # the turn loop uses it instead of TOOL_TIMEOUT_S
    assert tool.input_schema["required"] == ["text"] and "Return the text" in tool.description
    assert (await run(registry, "flaky__echo", text="hello")).content == "hello"
    assert client.summary() == f"flaky ({len(registry)} tools)"


@SHARED
async def test_a_server_timeout_shorter_than_the_tool_timeout_is_honoured_end_to_end(
    flaky: tuple[McpClient, ToolRegistry],
) -> None:
    _, registry = flaky
    tool = registry.get("flaky__hang")
    assert tool is not None
    # The caller's own limit is an hour: only the server's timeout_s (1.5 s) can end this call (if
    # it did not, pytest-timeout would fail the test; no upper bound on time is asserted here).
    outcome = await run_call(tool, ToolUseBlock("toolu_1", "flaky__hang", {}), CONTEXT, timeout_s=3600)
    assert outcome.status is ToolStatus.TIMEOUT  # refunded like every timed-out tool call
    assert outcome.duration_ms >= 1_400  # it waited for the server's limit, not less
    with pytest.raises(CallTimeout, match=r"did not answer slow within 1\.5 s"):  # the server's limit, by name
        await run(registry, "flaky__slow", seconds=5)
    # A hung call does not mean a hung server: it still answers, without a restart.
    assert (await run(registry, "flaky__slow", seconds=0.1)).content == "done after 0.1 s"


async def test_a_frozen_server_is_restarted(tmp_path: Path) -> None:
    registry = ToolRegistry()
    config = write_config(tmp_path, {"flaky": flaky_server(timeout_s=1)})
    async with running(client_for(config, registry)) as client:
        first = await pid(registry)
        with pytest.raises(CallTimeout):
            await run(registry, "flaky__freeze")
        server = client.servers["flaky"]
        await eventually(lambda: server.state is not State.READY, message="the frozen server to be noticed")
        assert "stopped answering" in server.last_error
        await eventually(lambda: server.state is State.READY, message="the restart")
        assert await pid(registry) != first


async def test_a_crash_mid_call_restarts_with_backoff_then_the_breaker_opens(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="almanac.mcp")
    registry = ToolRegistry()
    config = write_config(tmp_path, {"flaky": flaky_server()})
    policy = replace(FAST, failures_to_open=3, initial_backoff_s=0.5)
    async with running(client_for(config, registry, policy=policy)) as client:
        server = client.servers["flaky"]
        first = await pid(registry)
        with pytest.raises(ServerLost, match="crashed while running crash"):
            await run(registry, "flaky__crash")
        # Fails at once (not queued until the restart, which would answer it), the tools stay listed.
        with pytest.raises(ServerUnavailable, match=r"failed .* and is restarting"):
            await run(registry, "flaky__echo", text="meanwhile")
        assert "flaky__echo" in registry
        await eventually(lambda: server.state is State.READY, message="the first restart")
        assert await pid(registry) != first
        assert "stderr: flaky: crashing on purpose" in caplog.text  # the server's stderr is in our logs
        assert "(stderr: flaky: crashing on purpose)" in server.last_error

        with pytest.raises(ServerLost):
            await run(registry, "flaky__crash")
        await eventually(lambda: server.state is State.READY, message="the second restart")
        with pytest.raises(ServerLost):
            await run(registry, "flaky__crash")
        await eventually(lambda: server.state is State.PAUSED, message="the breaker to open")
        restarts = [r.getMessage() for r in caplog.records if "restarting in" in r.getMessage()]
        assert [m.rsplit("restarting in ", 1)[1] for m in restarts] == ["0.5 s", "1.0 s"]
        assert not [name for name in registry.names if name.startswith("flaky__")]  # paused: tools removed
        with pytest.raises(ServerUnavailable, match="failed 3 times in a row"):
            await server.call("echo", {"text": "x"})
        assert [s.state for s in client.statuses()] == ["paused"]


async def test_a_server_that_cannot_start_is_paused_with_its_stderr_in_the_reason(tmp_path: Path) -> None:
    registry = ToolRegistry()
    config = write_config(
        tmp_path,
        {
            "broken": flaky_server(env={"FLAKY_EXIT_AT_START": "1"}),
            "missing": {"command": str(tmp_path / "no-such-server")},
        },
    )
    policy = replace(FAST, failures_to_open=2, initial_backoff_s=0.1)
    async with running(client_for(config, registry, policy=policy)) as client:
        broken, missing = client.servers["broken"], client.servers["missing"]
        await eventually(lambda: broken.state is State.PAUSED and missing.state is State.PAUSED)
        assert "refusing to start" in broken.last_error
        assert "no-such-server: not found" in missing.last_error
        assert registry.names == []
        assert "failed 2 times in a row" in client.statuses()[0].detail


@SHARED
async def test_is_error_results_and_protocol_errors_reach_the_model(flaky: tuple[McpClient, ToolRegistry]) -> None:
    client, registry = flaky
    output = await run(registry, "flaky__fail", message="no such repo")
    assert output.is_error and output.content == "Error executing tool fail: no such repo"
    tool = registry.get("flaky__fail")
    assert tool is not None
    outcome = await run_call(tool, ToolUseBlock("t", "flaky__fail", {"message": "x"}), CONTEXT, timeout_s=30)
    assert outcome.status is ToolStatus.ERROR and outcome.is_error
    unknown = await client.servers["flaky"].call("nope", {})  # MCPServer answers isError (git: a protocol error)
    assert unknown.is_error and "nope" in unknown.content[0].text  # type: ignore[union-attr]


@SHARED
async def test_large_structured_and_mixed_results_are_formatted(flaky: tuple[McpClient, ToolRegistry]) -> None:
    _, registry = flaky
    big = await run(registry, "flaky__big", size=300_000)
    assert len(big.content) == 300_000  # kept whole: the chat layer stores and summarises it
    release = await run(registry, "flaky__release")
    assert '"version": "1.2.3"' in release.content and release.data == {
        "name": "almanac",
        "version": "1.2.3",
        "tags": ["stable", "lts"],
    }
    structured = await run(registry, "flaky__structured_only")
    assert structured.content == '{\n  "answer": 42,\n  "items": [\n    "a",\n    "b"\n  ]\n}'
    mixed = (await run(registry, "flaky__mixed")).content.split("\n\n")
    assert mixed[0] == "Here is everything."
    assert mixed[1].startswith("[image: image/png, 108 bytes")
    assert mixed[2].startswith("[audio: audio/wav")
    assert mixed[3] == "[resource file:///notes.md]\n# Notes\nremember"
    assert mixed[4] == "[binary resource file:///blob.bin: application/x, 30 bytes, not shown]"
    assert mixed[-1] == "[resource link: big.log <https://example.com/big.log>] a large log"


@SHARED
async def test_the_tool_list_is_refreshed_when_the_server_says_it_changed(
    flaky: tuple[McpClient, ToolRegistry],
) -> None:
    _, registry = flaky
    await run(registry, "flaky__add_tool", name="late_tool")
    await eventually(lambda: "flaky__late_tool" in registry, message="the new tool")
    assert (await run(registry, "flaky__late_tool", text="hi")).content == "extra: hi"
    await run(registry, "flaky__remove_tool", name="late_tool")
    await eventually(lambda: "flaky__late_tool" not in registry, message="the tool to go")
    assert "flaky__echo" in registry


@SHARED
async def test_variables_reach_the_server_and_its_stderr_goes_to_the_log(
    flaky: tuple[McpClient, ToolRegistry], caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.INFO, logger="almanac.mcp")
    _, registry = flaky
    assert (await run(registry, "flaky__whoami")).content.endswith("greeting=hello from the config")
    await run(registry, "flaky__shout", text="to the logs")
    await eventually(lambda: "flaky stderr: to the logs" in caplog.text, message="the stderr line")
    assert "to the logs" not in capfd.readouterr().err


async def test_stop_ends_the_process_and_removes_its_tools(tmp_path: Path) -> None:
    registry = ToolRegistry()
    async with running(client_for(write_config(tmp_path, {"flaky": flaky_server()}), registry)):
        process = await pid(registry)
    assert registry.names == []
    with pytest.raises(ProcessLookupError):
        os.kill(process, 0)


@pytest.fixture
def flaky_http() -> Iterator[str]:
    with harness_http_server(FLAKY) as url:
        yield url


async def test_a_streamable_http_server_gets_its_headers(tmp_path: Path, flaky_http: str) -> None:
    http_server = flaky_http
    registry = ToolRegistry()
    config = write_config(
        tmp_path, {"remote": {"url": http_server, "headers": {"Authorization": "Bearer ${TOKEN}"}, "timeout_s": 5}}
    )
    async with running(client_for(config, registry, variables={"TOKEN": "s3cret"})) as client:
        assert client.servers["remote"].config.target == http_server
        assert (await run(registry, "remote__header", name="Authorization")).content == "Bearer s3cret"
        assert (await run(registry, "remote__echo", text="over http")).content == "over http"
        await asyncio.sleep(0)
