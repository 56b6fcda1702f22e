"""`McpClient`: every configured MCP server as a toolset in the app's `ToolRegistry`.

`start()` (in the app's lifespan) reads the configuration, leaves out servers that are turned off,
miss variables, or need Docker where Docker is not usable (one log line each, saying why), starts
the others and waits a bounded time for their first tool lists. Tools are registered as
`<server>__<tool>` while their server is up (or restarting), replaced when it announces a new
list, and removed when it is paused by its circuit breaker or stopped. `stop()` closes them all.

A server configured with `user_token` runs each user's calls with that user's own token
(`sessions.UserSessions`); its main session, with the operator's credentials, lists the tools and
serves users without a token only when the integration is in `shared`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp import types

from almanac.billing.pricing import BillingCategory
from almanac.mcp_client.breaker import RestartPolicy
from almanac.mcp_client.config import DisabledServer, McpConfigError, ServerConfig, load_config
from almanac.mcp_client.docker import docker_problem
from almanac.mcp_client.names import tool_name
from almanac.mcp_client.server import McpServer, State
from almanac.mcp_client.sessions import TokenSource, UserSessions, connect_hint
from almanac.mcp_client.tool import ToolCaller, mcp_tool
from almanac.tools.registry import ToolRegistrationError, ToolRegistry

log = logging.getLogger("almanac.mcp")
DockerProbe = Callable[[], Awaitable[str | None]]


@dataclass(frozen=True)
class ServerStatus:
    """One configured server as the startup table and `GET /api/tools` describe it."""

    name: str
    state: str  # a `State` value, or "off"
    tools: int = 0
    detail: str = ""


class McpClient:
    """The MCP servers of one application."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        config_path: Path | None,
        variables: Mapping[str, str],
        default_timeout_s: float,
        enabled: bool = True,
        startup_wait_s: float = 15.0,
        policy: RestartPolicy | None = None,
        hints: Mapping[str, str] | None = None,
        docker_probe: DockerProbe = docker_problem,
        tokens: TokenSource | None = None,
        shared: Collection[str] = (),
    ) -> None:
        self.registry = registry
        self.config_path = config_path
        self.enabled = enabled
        self.policy = policy or RestartPolicy()
        self.servers: dict[str, McpServer] = {}
        self.user_sessions: dict[str, UserSessions] = {}  # servers that use each user's own token
        self.disabled: list[DisabledServer] = []
        self.problem = ""  # why there are no MCP servers at all ("" if none is wrong)
        self._variables = dict(variables)
        self._default_timeout_s = default_timeout_s
        self._startup_wait_s = startup_wait_s
        self._hints = dict(hints or {})
        self._docker_probe = docker_probe
        self._tokens = tokens
        self._shared = frozenset(shared)
        self._names: dict[str, dict[str, str]] = {}  # server → {registry name: tool name}

    async def start(self) -> None:
        """Start every usable server and wait (at most `startup_wait_s`) for their tools."""
        if not self.enabled:
            self.problem = "off (MCP_ENABLED=false)"
            return
        if self.config_path is None:
            self.problem = "no configuration file (set MCP_CONFIG)"
            log.info("MCP servers: %s", self.problem)
            return
        try:
            config = load_config(self.config_path, variables=self._variables, default_timeout_s=self._default_timeout_s)
        except McpConfigError as exc:
            self.problem = f"configuration error: {exc}"
            log.error("MCP servers are off: %s", exc)
            return
        for note in config.notes:
            log.warning(note)
        self.disabled = [self._explained(off) for off in config.disabled]
        docker: str | bool | None = False  # not probed yet
        for server_config in config.servers:
            if server_config.uses_docker:
                if docker is False:
                    docker = await self._docker_probe()
                if docker:
                    self.disabled.append(DisabledServer(server_config.name, f"Docker is not usable: {docker}"))
                    continue
            self._add(server_config)
        for off in self.disabled:
            log.info("MCP server %s is off: %s", off.name, off.reason)
        await asyncio.gather(*(server.wait_attempted(self._startup_wait_s) for server in self.servers.values()))

    def _add(self, config: ServerConfig) -> None:
        server = McpServer(config, policy=self.policy, on_tools=self._sync)
        self.servers[config.name] = server
        if config.user_token is not None:
            sessions = UserSessions(
                server,
                config.user_token,
                tokens=self._tokens,
                shared=config.user_token.integration in self._shared,
                policy=self.policy,
            )
            self.user_sessions[config.name] = sessions
            sessions.start()
        server.start()

    async def stop(self) -> None:
        """Stop every server (each closes its own session, and every user's) and remove their tools."""
        stopping = [*(s.stop() for s in self.user_sessions.values()), *(s.stop() for s in self.servers.values())]
        await asyncio.gather(*stopping, return_exceptions=True)

    def _explained(self, off: DisabledServer) -> DisabledServer:
        hints = [self._hints[name] for name in off.missing if name in self._hints]
        if not hints:
            return off
        return DisabledServer(off.name, f"{off.reason} ({'; '.join(hints)})", off.missing)

    # --- the registry ------------------------------------------------------------------------

    def _sync(self, server: McpServer, tools: Sequence[types.Tool] | None) -> None:
        """Make the registry hold exactly `tools` for `server` (None: none of its tools)."""
        for name in self._names.pop(server.name, {}):
            self.registry.unregister(name)
        if not tools:
            return
        registered: dict[str, str] = {}
        taken = set(self.registry.names)
        caller: ToolCaller = self.user_sessions.get(server.name, server)
        for tool in tools:
            if not server.config.allows(tool.name):
                continue
            name = tool_name(server.name, tool.name, taken=taken)
            entry = mcp_tool(
                tool,
                name=name,
                server=server.name,
                billing=server.config.billing,
                caller=caller,
                timeout_s=server.config.timeout_s,
                credentials_hint=_credentials_hint(server.config),
            )
            try:
                self.registry.register(entry)
            except ToolRegistrationError as exc:
                log.warning("MCP server %s: tool %s left out: %s", server.name, tool.name, exc)
                continue
            taken.add(name)
            registered[name] = tool.name
        self._names[server.name] = registered

    def tool_names(self, server: str) -> dict[str, str]:
        """The registry names of a server's tools, mapped to the server's own names."""
        return dict(self._names.get(server, {}))

    # --- status ------------------------------------------------------------------------------

    def statuses(self) -> list[ServerStatus]:
        """Every configured server: running ones with their state, then the ones that are off."""
        running = [
            ServerStatus(
                name,
                server.state.value,
                len(self._names.get(name, {})),
                server.config.target if server.state is State.READY else server.unavailable_reason(),
            )
            for name, server in self.servers.items()
        ]
        return running + [ServerStatus(off.name, "off", 0, off.reason) for off in self.disabled]

    def integrations(self) -> frozenset[str]:
        """The integrations (e.g. `github`) whose users' own tokens some started server uses: what
        the account settings may offer to connect."""
        return frozenset(sessions.spec.integration for sessions in self.user_sessions.values())

    def summary(self) -> str:
        """One line for the startup table."""
        if self.problem:
            return self.problem
        parts = []
        for status in self.statuses():
            if status.state == State.READY.value:
                sessions = self.user_sessions.get(status.name)
                whose = f", {sessions.describe()}" if sessions is not None else ""
                parts.append(f"{status.name} ({status.tools} tools{whose})")
            elif status.state != "off":
                parts.append(f"{status.name} ({status.state})")
        return ", ".join(parts) or "none"


def _credentials_hint(config: ServerConfig) -> str | None:
    """What to do when the server refuses a call's token (None: it does not act with one)."""
    if config.user_token is not None:
        return connect_hint(config.user_token.integration) + " (a valid one, with access to what you asked for)."
    if config.billing is BillingCategory.GITHUB:
        return "The operator must check the token in this server's configuration."
    return None
