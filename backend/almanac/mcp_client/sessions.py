"""A server whose calls run with each user's own token (`user_token` in its configuration).

`UserSessions.call(tool, arguments, user_id=…)` looks up the caller's token for the server's
integration (a `TokenSource`: the token vault) and runs the call on that user's own session — an
`McpServer` whose configuration carries their token (an HTTP header on every request, or the
environment of a process of their own for stdio). Sessions are opened on a user's first call,
replaced when their token changes, stopped after `idle_s` without calls, and at most
`max_sessions` run at once (the least recently used idle one makes room; if all are busy the call
is refused, not queued). A session that cannot start is stopped at once, so a bad token does not
keep a process restarting.

Without a token of their own, a user's call runs on the server's main session (the operator's
token) only when the integration is shared (`GITHUB_SHARED_TOKEN=true`); otherwise it fails with
`TokenRequired`, saying how to connect one. Either way nothing was run, so nothing is charged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mcp import types

from almanac.mcp_client.breaker import RestartPolicy
from almanac.mcp_client.config import UserTokenSpec
from almanac.mcp_client.errors import ServerUnavailable, TokenRequired
from almanac.mcp_client.server import McpServer, State

log = logging.getLogger("almanac.mcp")
TITLES = {"github": "GitHub"}
USER_ROLE = " (one user's session)"


class TokenSource(Protocol):
    """Users' own tokens (the token vault)."""

    @property
    def enabled(self) -> bool:
        """Whether users can store tokens at all on this server."""
        ...

    async def token(self, *, user_id: str, integration: str) -> str | None:
        """The user's own token for `integration`, or None."""
        ...


def title(integration: str) -> str:
    """The integration's name for people (`github` → `GitHub`)."""
    return TITLES.get(integration, integration)


def connect_hint(integration: str) -> str:
    """How a user connects their own token, for messages the model relays."""
    return (
        f"Connect a {title(integration)} token of your own in the web UI (account menu → {title(integration)}) "
        f"or with PUT /api/integrations/{integration}"
    )


@dataclass(eq=False)  # compared by identity
class _Session:
    server: McpServer
    token: str
    last_used: float
    in_flight: int = 0
    retired: bool = False


def _ignore_tools(_server: McpServer, _tools: Sequence[types.Tool] | None) -> None:
    """A user's session never changes the registry: the main session's list is the one shown."""


class UserSessions:
    """Routes each user's calls to a session opened with their own token (module docstring)."""

    def __init__(
        self,
        main: McpServer,
        spec: UserTokenSpec,
        *,
        tokens: TokenSource | None,
        shared: bool,
        policy: RestartPolicy,
    ) -> None:
        self.main = main
        self.spec = spec
        self.shared = shared
        self._tokens = tokens
        self._policy = policy
        self._sessions: dict[str, _Session] = {}
        self._draining: list[_Session] = []  # retired while calls still ran on them
        self._lock = asyncio.Lock()
        self._stopping: set[asyncio.Task[None]] = set()
        self._reaper: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.main.name

    @property
    def open_sessions(self) -> int:
        """How many users' sessions are open now."""
        return len(self._sessions)

    def describe(self) -> str:
        """Whose token the calls run with, for the startup table."""
        if self._tokens is not None and self._tokens.enabled:
            return "each user's own token" + (", else the shared one" if self.shared else "")
        return "the shared token (per-user tokens are off)" if self.shared else "no token: per-user tokens are off"

    def start(self) -> None:
        """Start stopping idle sessions in the background."""
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap(), name=f"mcp-user-sessions:{self.name}")

    async def stop(self) -> None:
        """Stop every user's session, busy ones included (their calls fail as the server's stop)."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        sessions = [*self._sessions.values(), *self._draining]
        self._sessions.clear()
        self._draining.clear()
        for session in sessions:
            session.retired = True
        await asyncio.gather(*(session.server.stop() for session in sessions), *self._stopping, return_exceptions=True)

    async def call(self, tool: str, arguments: Mapping[str, Any], *, user_id: str = "") -> types.CallToolResult:
        """Run `tool` for `user_id` with their own token (or the shared one; module docstring)."""
        token = await self._tokens.token(user_id=user_id, integration=self.spec.integration) if self._tokens else None
        if token is None:
            if self.shared:
                return await self.main.call(tool, arguments)
            raise TokenRequired(self._no_token())
        session = await self._acquire(user_id, token)
        try:
            return await session.server.call(tool, arguments)
        finally:
            self._release(user_id, session)

    def _no_token(self) -> str:
        name = title(self.spec.integration)
        if self._tokens is not None and self._tokens.enabled:
            return (
                f"the {name} tools run with each user's own {name} token, and you have not connected one. "
                f"{connect_hint(self.spec.integration)}, then ask again. Nothing was charged."
            )
        return (
            f"the {name} tools need a {name} token, but this server cannot keep its users' own tokens "
            "(the operator has not set SECRET_KEY) and does not share its own. Nothing was charged."
        )

    # --- sessions ----------------------------------------------------------------------------

    async def _acquire(self, user_id: str, token: str) -> _Session:
        loop = asyncio.get_running_loop()
        async with self._lock:
            session = self._sessions.get(user_id)
            if session is not None and not hmac.compare_digest(session.token, token):
                self._retire(user_id)  # the user connected another token
                session = None
            if session is None:
                self._make_room()
                server = McpServer(
                    self.spec.apply(self.main.config, token),
                    policy=self._policy,
                    on_tools=_ignore_tools,
                    role=USER_ROLE,
                )
                session = _Session(server, token, loop.time())
                self._sessions[user_id] = session
                server.start()
            session.in_flight += 1
            session.last_used = loop.time()
        try:
            await session.server.wait_attempted(self._policy.start_timeout_s)
        except BaseException:  # cancelled while it starts: the call is not running on it
            self._release(user_id, session)
            raise
        if session.server.state is not State.READY:
            reason = session.server.last_error or "it did not start in time"
            self._release(user_id, session)
            if self._sessions.get(user_id) is session:
                self._retire(user_id)
            raise ServerUnavailable(
                f"could not open a session on the MCP server '{self.name}' with your token ({reason}). "
                "Nothing was charged."
            )
        return session

    def _release(self, user_id: str, session: _Session) -> None:
        session.in_flight -= 1
        session.last_used = asyncio.get_running_loop().time()
        if session.retired and session.in_flight == 0 and session in self._draining:
            self._draining.remove(session)
            self._stop_later(session)

    def _make_room(self) -> None:
        if len(self._sessions) < self.spec.max_sessions:
            return
        idle = [(s.last_used, user) for user, s in self._sessions.items() if s.in_flight == 0]
        if not idle:
            raise ServerUnavailable(
                f"the MCP server '{self.name}' is serving {len(self._sessions)} users at once, its limit; "
                "try again in a moment. Nothing was charged."
            )
        self._retire(min(idle)[1])

    def _retire(self, user_id: str) -> None:
        """Take the user's session out of use; it stops once its calls have ended."""
        session = self._sessions.pop(user_id, None)
        if session is None:
            return
        session.retired = True
        if session.in_flight == 0:
            self._stop_later(session)
        else:
            self._draining.append(session)

    def _stop_later(self, session: _Session) -> None:
        task = asyncio.create_task(session.server.stop())
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    async def _reap(self) -> None:
        interval = min(30.0, max(0.05, self.spec.idle_s / 4))
        while True:
            await asyncio.sleep(interval)
            now = asyncio.get_running_loop().time()
            for user_id, session in list(self._sessions.items()):
                if session.in_flight == 0 and now - session.last_used >= self.spec.idle_s:
                    self._retire(user_id)
