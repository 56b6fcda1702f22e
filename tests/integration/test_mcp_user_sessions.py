"""Per-user tokens on a stdio server (the `docker run` GitHub entry of mcp/servers.json): one process
per user token, each with its own `GITHUB_PERSONAL_ACCESS_TOKEN`; at most `max_sessions` at once
(the least recently used idle one makes room, busy ones are never cut off), idle ones stopped,
all of them stopped with the client — against tests/mcp_servers/github_like.py over stdio."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import types
from tests.mcp_servers.github_like import fingerprint
from tests.mcp_servers.harness import GITHUB_LIKE, client_for, eventually, write_config

from almanac.mcp_client import McpClient
from almanac.mcp_client.errors import ServerUnavailable, TokenRequired
from almanac.tools.base import ToolContext
from almanac.tools.registry import ToolRegistry

OPERATOR = "ghp_" + "o" * 36
TOKENS = {"ann": "ghp_" + "a" * 36, "ben": "ghp_" + "b" * 36, "cat": "ghp_" + "c" * 36, "eve": "ghp_" + "e" * 36}


class Tokens:
    """A token source: users' own tokens from a dict."""

    enabled = True

    def __init__(self, tokens: dict[str, str]) -> None:
        self.tokens = dict(tokens)

    async def token(self, *, user_id: str, integration: str) -> str | None:
        assert integration == "github"
        return self.tokens.get(user_id)


@contextlib.asynccontextmanager
async def github_stdio(tmp_path: Path, *, max_sessions: int = 2, idle_s: float = 300) -> AsyncIterator[McpClient]:
    config = write_config(
        tmp_path,
        {
            "github": {
                "command": sys.executable,
                "args": [str(GITHUB_LIKE)],
                "env": {
                    "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PERSONAL_ACCESS_TOKEN}",
                    "GITHUB_LIKE_REFUSE_START": TOKENS["eve"],
                },
                "user_token": {
                    "integration": "github",
                    "env": "GITHUB_PERSONAL_ACCESS_TOKEN",
                    "max_sessions": max_sessions,
                    "idle_s": idle_s,
                },
                "billing": "github",
            }
        },
    )
    client = client_for(config, ToolRegistry(), variables={"GITHUB_PERSONAL_ACCESS_TOKEN": OPERATOR})
    client._tokens = Tokens(TOKENS)  # the vault's place (tested with the real vault over HTTP)
    await client.start()
    try:
        yield client
    finally:
        await client.stop()


async def whoami(client: McpClient, user: str) -> tuple[str, int]:
    """(the fingerprint of the token the call ran with, the pid of the process that ran it)"""
    tool = client.registry.get("github__whoami")
    assert tool is not None
    output = await tool.run({}, ToolContext(user, "c", 1, "q1", "q1-t1", "toolu_1"))
    return parse(output.content)


def parse(content: str) -> tuple[str, int]:
    token, pid = content.split()
    return token.removeprefix("token="), int(pid.removeprefix("pid="))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_each_user_gets_a_process_of_their_own_with_their_token(tmp_path: Path) -> None:
    async with github_stdio(tmp_path) as client:
        main = (await client.servers["github"].call("whoami", {})).content[0]
        assert isinstance(main, types.TextContent)
        operator, main_pid = parse(main.text)
        ann, ann_pid = await whoami(client, "ann")
        ben, ben_pid = await whoami(client, "ben")
        assert (operator, ann, ben) == (fingerprint(OPERATOR), fingerprint(TOKENS["ann"]), fingerprint(TOKENS["ben"]))
        assert len({ann_pid, ben_pid, main_pid}) == 3
        assert (await whoami(client, "ann"))[1] == ann_pid  # reused while it lives
        with pytest.raises(TokenRequired, match="not connected one"):
            await whoami(client, "dan")
    assert not alive(ann_pid) and not alive(ben_pid)  # stopped with the client


async def test_at_most_max_sessions_run_and_the_least_recently_used_idle_one_makes_room(tmp_path: Path) -> None:
    async with github_stdio(tmp_path, max_sessions=2) as client:
        _, ann_pid = await whoami(client, "ann")
        _, ben_pid = await whoami(client, "ben")
        await whoami(client, "ann")  # ben is now the least recently used
        _, cat_pid = await whoami(client, "cat")
        sessions = client.user_sessions["github"]
        assert sessions.open_sessions == 2
        await eventually(lambda: not alive(ben_pid), message="ben's process to stop")
        assert alive(ann_pid) and alive(cat_pid)


async def test_a_full_server_refuses_new_users_while_every_session_is_busy(tmp_path: Path) -> None:
    async with github_stdio(tmp_path, max_sessions=1) as client:
        tool = client.registry.get("github__wait")
        assert tool is not None
        busy = asyncio.create_task(tool.run({"seconds": 60}, ToolContext("ann", "c", 1, "q1", "q1-t1", "t")))
        sessions = client.user_sessions["github"]
        await eventually(lambda: sessions.open_sessions == 1 and sessions._sessions["ann"].in_flight == 1)
        with pytest.raises(ServerUnavailable, match="serving 1 users at once"):
            await whoami(client, "ben")
        busy.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await busy
        await eventually(lambda: sessions._sessions["ann"].in_flight == 0, message="the cancelled call to end")
        assert (await whoami(client, "ben"))[0] == fingerprint(TOKENS["ben"])


async def test_idle_sessions_are_stopped(tmp_path: Path) -> None:
    async with github_stdio(tmp_path, idle_s=0.5) as client:
        _, pid = await whoami(client, "ann")
        sessions = client.user_sessions["github"]
        await eventually(lambda: sessions.open_sessions == 0, message="the idle session to be stopped")
        await eventually(lambda: not alive(pid), message="its process to exit")
        again, new_pid = await whoami(client, "ann")  # the next call opens a new one
        assert again == fingerprint(TOKENS["ann"]) and new_pid != pid


async def test_a_session_that_cannot_start_is_reported_and_not_kept(tmp_path: Path) -> None:
    async with github_stdio(tmp_path) as client:
        with pytest.raises(ServerUnavailable, match=r"could not open a session .* with your token .*Bad credentials"):
            await whoami(client, "eve")
        assert client.user_sessions["github"].open_sessions == 0  # not left restarting in the background
        assert (await whoami(client, "ann"))[0] == fingerprint(TOKENS["ann"])
