"""GitHub tools run with each user's own token, against a real MCP server that checks the
`Authorization` header of every request (tests/mcp_servers/github_like.py over streamable HTTP),
through the real API, chat service, token vault and ledger:

- two users, two tokens: each call carries its caller's token, concurrent calls too;
- a user without a token gets a clear error telling them to connect one, and pays nothing;
- the operator's token serves such users only with GITHUB_SHARED_TOKEN=true;
- a call the server answers with an authorization error (a revoked token) is not charged;
- a replaced token is used from the next call on, a removed one not at all;
- no token ever reaches the logs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.mcp_servers.github_like import fingerprint
from tests.mcp_servers.harness import GITHUB_LIKE, http_server, write_config
from tests.support import api_client, make_user

from almanac.auth.service import NewUser
from almanac.config import Settings
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.main import Services
from almanac.tools.base import ToolContext

OPERATOR = "ghp_" + "0perat0rT0k" * 3 + "OPR"
ALICE = "ghp_" + "AliceT0ken" * 3 + "a1ce11"
BOB = "github_pat_" + "B0bT0ken12" * 8 + "b0"
REVOKED = "ghp_" + "Rev0kedT0k" * 3 + "rev0k3"


@dataclass
class GitHubLike:
    url: str
    log: Path

    def tokens_seen(self) -> list[str]:
        return self.log.read_text().split() if self.log.exists() else []


@pytest.fixture
def github(tmp_path: Path) -> Iterator[GitHubLike]:
    log = tmp_path / "tokens.log"
    env = {"GITHUB_LIKE_REVOKED": REVOKED, "GITHUB_LIKE_LOG": str(log)}
    with http_server(GITHUB_LIKE, env=env) as url:
        yield GitHubLike(url, log)


@dataclass
class App:
    services: Services
    settings: Settings
    model: ScriptedModel

    def http(self, user: NewUser) -> httpx.AsyncClient:
        return api_client(self.services, self.settings, user.api_key)

    async def ask(self, user: NewUser, tool: str = "github__whoami", **arguments: Any) -> dict[str, Any]:
        """One chat query whose model calls `tool` once, then answers."""
        self.model.enqueue(calls(call(tool, arguments)), reply("done"))
        async with self.http(user) as http:
            answer = await http.post("/api/chat", json={"message": "who am I on GitHub?"})
            assert answer.status_code == 200, answer.text
            body: dict[str, Any] = answer.json()
            item = await http.get(f"/api/conversations/{body['conversation_id']}/items/q1-t1")
            body["tool_output"] = item.json()["content"]
        return body


@pytest.fixture
async def start_app(tmp_path: Path, sqlite_url: str, build: Any, github: GitHubLike) -> AsyncIterator[Any]:
    """`await start_app(**settings)`: the app with the GitHub-like server as `github`; stopped at teardown."""
    started: list[Services] = []

    async def start(**settings: Any) -> App:
        config = write_config(
            tmp_path,
            {
                "github": {
                    "url": github.url,
                    "headers": {"Authorization": "Bearer ${GITHUB_PERSONAL_ACCESS_TOKEN}"},
                    "user_token": {"integration": "github"},
                    "billing": "github",
                    "timeout_s": 20,
                }
            },
        )
        model = ScriptedModel()
        services, app_settings = build(
            sqlite_url,
            model=model,
            mcp_enabled=True,
            mcp_config=config,
            secret_key="s" * 40,
            github_personal_access_token=OPERATOR,
            **settings,
        )
        assert services.mcp is not None
        await services.mcp.start()
        started.append(services)
        assert "github__whoami" in services.registry
        return App(services, app_settings, model)

    yield start
    for services in started:
        assert services.mcp is not None
        await services.mcp.stop()


@pytest.fixture
async def app(start_app: Any) -> App:
    running: App = await start_app()
    return running


async def connect(app: App, user: NewUser, token: str) -> None:
    async with app.http(user) as http:
        response = await http.put("/api/integrations/github", json={"token": token})
        assert response.status_code == 200, response.text


async def test_each_users_calls_carry_their_own_token(
    app: App, github: GitHubLike, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    alice, bob = await make_user(app.services), await make_user(app.services)
    await connect(app, alice, ALICE)
    await connect(app, bob, BOB)

    for user, token in ((alice, ALICE), (bob, BOB), (alice, ALICE)):
        body = await app.ask(user)
        (result,) = body["tool_results"]
        assert (result["status"], result["credits"], body["credits_used"]) == ("ok", 3, 8)
        assert body["tool_output"].startswith(f"token={fingerprint(token)} ")

    # Concurrent calls of both users, straight through the registry: never crossed.
    tool = app.services.registry.get("github__whoami")
    assert tool is not None
    contexts = [
        ToolContext(user.user.id, "c", 1, "q1", f"q1-t{n}", f"toolu_{n}") for n, user in enumerate([alice, bob] * 5)
    ]
    outputs = await asyncio.gather(*(tool.run({}, context) for context in contexts))
    assert [output.content.split()[0] for output in outputs] == [
        f"token={fingerprint(ALICE)}",
        f"token={fingerprint(BOB)}",
    ] * 5

    seen = set(github.tokens_seen())
    assert {ALICE, BOB, OPERATOR} == seen  # the operator's token only listed the tools
    assert app.services.mcp is not None and app.services.mcp.user_sessions["github"].open_sessions == 2
    assert app.services.mcp.summary() == "github (4 tools, each user's own token)"
    for token in (ALICE, BOB, OPERATOR):
        assert token not in caplog.text


async def test_a_user_without_a_token_is_told_to_connect_one_and_pays_nothing(app: App, github: GitHubLike) -> None:
    carol = await make_user(app.services)
    body = await app.ask(carol)
    (result,) = body["tool_results"]
    assert (result["status"], result["is_error"], result["credits"]) == ("unavailable", True, 0)
    assert body["credits_used"] == 5 and body["credits_remaining"] == 45
    assert "you have not connected one" in body["tool_output"]
    assert "PUT /api/integrations/github" in body["tool_output"] and "Nothing was charged" in body["tool_output"]
    assert set(github.tokens_seen()) == {OPERATOR}  # the call never reached the server


async def test_the_operator_token_serves_users_without_one_only_when_shared(start_app: Any, github: GitHubLike) -> None:
    shared: App = await start_app(github_shared_token=True)
    carol, alice = await make_user(shared.services), await make_user(shared.services)
    await connect(shared, alice, ALICE)
    body = await shared.ask(carol)
    assert body["tool_results"][0]["status"] == "ok" and body["tool_results"][0]["credits"] == 3
    assert body["tool_output"].startswith(f"token={fingerprint(OPERATOR)} ")
    assert (await shared.ask(alice))["tool_output"].startswith(f"token={fingerprint(ALICE)} ")  # their own token first
    async with shared.http(carol) as http:
        assert (await http.get("/api/integrations/github")).json()["shared_token_available"] is True


async def test_an_authorization_error_from_the_server_is_not_charged(app: App) -> None:
    dave = await make_user(app.services)
    await connect(app, dave, REVOKED)
    body = await app.ask(dave, "github__search_repositories", query="vector databases")
    (result,) = body["tool_results"]
    assert (result["status"], result["credits"], body["credits_used"]) == ("unavailable", 0, 5)
    assert "refused the token this call ran with" in body["tool_output"]
    assert "401 Bad credentials" in body["tool_output"] and REVOKED not in body["tool_output"]


async def test_a_replaced_token_is_used_from_the_next_call_and_a_removed_one_not_at_all(app: App) -> None:
    erin = await make_user(app.services)
    await connect(app, erin, ALICE)
    first = await app.ask(erin)
    await connect(app, erin, BOB)
    second = await app.ask(erin)
    assert first["tool_output"].startswith(f"token={fingerprint(ALICE)} ")
    assert second["tool_output"].startswith(f"token={fingerprint(BOB)} ")
    async with app.http(erin) as http:
        assert (await http.delete("/api/integrations/github")).status_code == 204
    third = await app.ask(erin)
    assert third["tool_results"][0]["status"] == "unavailable" and third["tool_results"][0]["credits"] == 0
    assert "you have not connected one" in third["tool_output"]
