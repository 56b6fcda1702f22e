"""One MCP server kept running: a long-lived task owns its session, restarts it, and runs calls.

The supervisor task enters and leaves each session itself (the SDK's task-group rule); callers
never touch the session: `McpServer.call` queues the call and the supervisor runs it in a child
task of the session, under the server's `timeout_s` (an outer `anyio.fail_after` plus the
request's read timeout). A server that crashes, closes the connection, or stops answering pings
is torn down and started again after a backoff (`breaker.Breaker`); the tool list is published on
every start and refreshed when the server announces a change.

Errors a call can raise are in `errors.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import anyio
from anyio.abc import TaskGroup
from mcp import ClientSession, MCPError, types
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from almanac.mcp_client.breaker import Breaker, RestartPolicy
from almanac.mcp_client.config import ServerConfig
from almanac.mcp_client.errors import CallRejected, CallTimeout, ServerLost, ServerUnavailable, describe
from almanac.mcp_client.stderr import StderrPipe
from almanac.mcp_client.transport import list_all_tools, open_session

GRACE_S = 0.25  # the caller waits this much past the deadline for the supervisor's own verdict


class State(StrEnum):
    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    PAUSED = "paused"  # the circuit breaker is open
    STOPPED = "stopped"


@dataclass
class _Call:
    tool: str
    arguments: dict[str, Any]
    deadline: float  # event-loop time
    future: asyncio.Future[types.CallToolResult]


class _Refresh:
    pass


_REFRESH = _Refresh()
ToolsListener = Callable[["McpServer", Sequence[types.Tool] | None], None]


class McpServer:
    """A configured server and the task that keeps it running. `start()`, then `call()`, `stop()`."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        policy: RestartPolicy,
        on_tools: ToolsListener,
        breaker: Breaker | None = None,
        role: str = "",
    ) -> None:
        self.config = config
        self.role = role  # e.g. " (one user's session)", in log lines
        self.policy = policy
        self.state = State.STOPPED
        self.starts = 0
        self._breaker = breaker or Breaker(policy)
        self._on_tools = on_tools
        self._log = logging.getLogger(f"almanac.mcp.{config.name}")
        self._send, self._receive = anyio.create_memory_object_stream[_Call | _Refresh](math.inf)
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._wake = asyncio.Event()
        self._attempted = asyncio.Event()
        self._scope: anyio.CancelScope | None = None
        self._lost: str | None = None
        self._last_error = ""

    @property
    def name(self) -> str:
        return self.config.name

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the supervisor task (returns at once)."""
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self._supervise(), name=f"mcp-server:{self.name}")

    async def wait_attempted(self, timeout_s: float) -> None:
        """Wait until the first start attempt has succeeded or failed (at most `timeout_s`)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._attempted.wait()

    async def stop(self) -> None:
        """Stop the server (its session is closed by the supervisor task) and wait for it."""
        self._stopping = True
        self._wake.set()
        if self._scope is not None:
            self._scope.cancel()
        task, self._task = self._task, None
        if task is None:
            return
        _, pending = await asyncio.wait([task], timeout=self.policy.stop_timeout_s)
        if pending:  # the session did not close in time: cut it
            self._log.warning("MCP server %s did not stop in time; cancelling it", self.name)
            task.cancel()
            await asyncio.wait([task], timeout=5)

    # --- calls -------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: Mapping[str, Any], *, user_id: str = "") -> types.CallToolResult:
        """Run `tool` on the server within `timeout_s` (see the module docstring for errors). The
        session is the same for every user (`user_id` is not used; see `sessions.py` for servers
        that run each user's calls with their own token)."""
        if not self.config.allows(tool):
            raise CallRejected(f"{tool} is not allowed on the MCP server '{self.name}' (its allow/deny lists)")
        if self.state is not State.READY:
            raise ServerUnavailable(self.unavailable_reason())
        loop = asyncio.get_running_loop()
        timeout_s = self.config.timeout_s
        call = _Call(tool, dict(arguments), loop.time() + timeout_s, loop.create_future())
        self._send.send_nowait(call)
        try:
            async with asyncio.timeout_at(call.deadline + GRACE_S):
                return await call.future
        except TimeoutError as exc:
            if isinstance(exc, CallTimeout):
                raise
            raise self._timeout(tool) from None

    def unavailable_reason(self) -> str:
        """Why calls fail right now, in words for the model."""
        wait = self._breaker.wait_s()
        last = self._last_error or "unknown error"
        if self.state is State.STARTING:
            return f"the MCP server '{self.name}' is still starting; try again in a moment"
        if self.state is State.RESTARTING:
            when = f" (next attempt in {wait:.0f} s)" if wait >= 1 else ""
            return f"the MCP server '{self.name}' failed ({last}) and is restarting{when}"
        if self.state is State.PAUSED:
            return (
                f"the MCP server '{self.name}' failed {self._breaker.failures} times in a row (last: {last}); "
                f"it is paused for {wait:.0f} s"
            )
        return f"the MCP server '{self.name}' is not running"

    @property
    def failures(self) -> int:
        return self._breaker.failures

    @property
    def last_error(self) -> str:
        """Why the server last failed ('' if it never did)."""
        return self._last_error

    def _timeout(self, tool: str) -> CallTimeout:
        return CallTimeout(f"the MCP server '{self.name}' did not answer {tool} within {self.config.timeout_s:g} s")

    # --- the supervisor ----------------------------------------------------------------------

    async def _supervise(self) -> None:
        try:
            while not self._stopping:
                wait = self._breaker.wait_s()
                if wait > 0:
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(wait):
                            await self._wake.wait()
                    continue
                await self._run_session()
        finally:
            self._set_state(State.STOPPED)
            self._publish(None)
            self._fail_queued(ServerUnavailable(f"the MCP server '{self.name}' has stopped"))
            self._attempted.set()

    async def _run_session(self) -> None:
        """One session: start, publish tools, serve calls until it fails or we stop."""
        self._set_state(State.STARTING if self.starts == 0 else State.RESTARTING)
        self.starts += 1
        self._lost = None
        loop = asyncio.get_running_loop()
        ready_at: float | None = None
        pipe = StderrPipe(self._log) if self.config.transport == "stdio" else None
        pump = asyncio.create_task(pipe.pump()) if pipe else None
        error = "the session ended"
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._stopping:
                    scope.cancel()
                async with open_session(
                    self.config,
                    read_timeout_s=max(self.config.timeout_s, self.policy.start_timeout_s),
                    errlog=pipe.writer if pipe else None,
                    on_spawned=pipe.close_writer if pipe else lambda: None,
                    on_tools_changed=self._request_refresh,
                ) as session:
                    with anyio.fail_after(self.policy.start_timeout_s):
                        await session.initialize()
                        tools = await list_all_tools(session)
                    ready_at = loop.time()
                    self._ready(tools)
                    await self._serve(session, pump)
                    error = self._lost or error
        except Exception as exc:  # boundary: any failure of the server becomes a restart
            error = describe(exc, self.policy.start_timeout_s if ready_at is None else None)
        finally:
            self._scope = None
            if not self._stopping:  # from now on calls fail fast instead of queueing
                self._last_error = error
                self._set_state(State.RESTARTING)
            self._fail_queued(ServerLost(f"the MCP server '{self.name}' stopped: {error}"))
            if pipe is not None and pump is not None:
                await pipe.drain(pump)
        if not self._stopping:
            if pipe is not None and pipe.last_line() and pipe.last_line() not in error:
                error += f" (stderr: {pipe.last_line()})"
            self._failed(error, uptime_s=None if ready_at is None else loop.time() - ready_at)

    def _ready(self, tools: Sequence[types.Tool]) -> None:
        self._publish(tools)
        self._set_state(State.READY)
        self._attempted.set()
        self._log.info("MCP server %s%s is ready; it offers %d tools", self.name, self.role, len(tools))

    def _failed(self, error: str, *, uptime_s: float | None) -> None:
        self._last_error = error
        delay = self._breaker.record_failure(error, uptime_s=uptime_s)
        self._attempted.set()
        if self._breaker.is_open:
            self._set_state(State.PAUSED)
            self._publish(None)
            self._log.error(
                "MCP server %s%s failed %d times in a row (%s); pausing it for %.0f s",
                self.name,
                self.role,
                self._breaker.failures,
                error,
                delay,
            )
        else:
            self._set_state(State.RESTARTING)
            self._log.warning("MCP server %s%s failed (%s); restarting in %.1f s", self.name, self.role, error, delay)

    async def _serve(self, session: ClientSession, pump: asyncio.Task[None] | None) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(self._keep_alive, session, group)
            if pump is not None:
                group.start_soon(self._watch_exit, session, group, pump)
            async for item in self._receive:
                if isinstance(item, _Refresh):
                    group.start_soon(self._refresh, session)
                elif not item.future.done():
                    group.start_soon(self._run_call, session, group, item)

    async def _run_call(self, session: ClientSession, group: TaskGroup, call: _Call) -> None:
        loop = asyncio.get_running_loop()
        try:
            with anyio.CancelScope() as scope:
                call.future.add_done_callback(lambda done: scope.cancel() if done.cancelled() else None)
                remaining = call.deadline - loop.time()
                if remaining <= 0:
                    raise TimeoutError
                with anyio.fail_after(remaining):
                    result = await session.call_tool(call.tool, call.arguments, read_timeout_seconds=remaining)
                _settle(call.future, result)
            if scope.cancelled_caught and loop.time() >= call.deadline - GRACE_S:
                raise TimeoutError  # the caller's own deadline (the turn loop's) ran out first
        except TimeoutError:
            _settle(call.future, self._timeout(call.tool))
            self._log.warning("call to %s timed out after %g s", call.tool, self.config.timeout_s)
            group.start_soon(self._check_alive, session, group)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self._lose("the connection closed (the server exited or crashed)", group)
                _settle(call.future, ServerLost(f"the MCP server '{self.name}' crashed while running {call.tool}"))
            elif exc.code == REQUEST_TIMEOUT:
                _settle(call.future, self._timeout(call.tool))
                group.start_soon(self._check_alive, session, group)
            else:
                _settle(call.future, CallRejected(f"the MCP server '{self.name}' refused {call.tool}: {exc.message}"))
        except Exception as exc:  # boundary: a transport or protocol failure must reach the caller
            self._log.exception("call to %s failed", call.tool)
            _settle(call.future, ServerLost(f"the call to {call.tool} failed: {describe(exc)}"))
        finally:
            why = f" ({self._lost})" if self._lost else ""
            _settle(call.future, ServerLost(f"the MCP server '{self.name}' stopped while running {call.tool}{why}"))

    async def _keep_alive(self, session: ClientSession, group: TaskGroup) -> None:
        while True:
            await anyio.sleep(self.policy.ping_interval_s)
            await self._check_alive(session, group)

    async def _watch_exit(self, session: ClientSession, group: TaskGroup, pump: asyncio.Task[None]) -> None:
        """The process closed its stderr: it has most likely exited, so check at once."""
        await asyncio.wait([pump])
        await self._check_alive(session, group)

    async def _check_alive(self, session: ClientSession, group: TaskGroup) -> None:
        try:
            with anyio.fail_after(self.policy.ping_timeout_s):
                await session.send_ping()
        except Exception as exc:  # boundary: any failure to answer a ping means the server is gone
            self._lose(f"it stopped answering ({describe(exc)})", group)

    def _lose(self, reason: str, group: TaskGroup) -> None:
        """End the session: it failed. New calls fail fast at once; the supervisor restarts it."""
        if self._lost is None:
            self._lost = reason
            if not self._stopping:
                self._last_error = reason
                self._set_state(State.RESTARTING)
        group.cancel_scope.cancel()

    async def _refresh(self, session: ClientSession) -> None:
        try:
            with anyio.fail_after(self.config.timeout_s):
                tools = await list_all_tools(session)
        except Exception as exc:  # boundary: a failed refresh keeps the old list
            self._log.warning("MCP server %s: refreshing the tool list failed: %s", self.name, describe(exc))
            return
        self._publish(tools)
        self._log.info("MCP server %s changed its tools: now %d", self.name, len(tools))

    def _request_refresh(self) -> None:
        self._send.send_nowait(_REFRESH)

    # --- helpers -----------------------------------------------------------------------------

    def _publish(self, tools: Sequence[types.Tool] | None) -> None:
        self._on_tools(self, tools)

    def _set_state(self, state: State) -> None:
        self.state = state

    def _fail_queued(self, error: Exception) -> None:
        while True:
            try:
                item = self._receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                return
            if isinstance(item, _Call):
                _settle(item.future, error)


def _settle(future: asyncio.Future[types.CallToolResult], outcome: types.CallToolResult | BaseException) -> None:
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
