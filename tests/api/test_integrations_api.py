"""A user's own GitHub token through the API: connected, shown masked (never in clear, never to
anyone else, never in the logs), replaced, refused with 422 naming the field when malformed,
removed with 204; off (409) on a production server without SECRET_KEY and on one without GitHub
tools; the shared-token flag."""

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.mcp_servers.harness import GITHUB_LIKE, write_config
from tests.support import api_client, make_user

from almanac.startup import describe

TOKEN = "ghp_" + "S3cr3tT0k3n" * 3 + "Qr7"
OTHER = "github_pat_" + "An0th3rT0k" * 8 + "z9"
KEY = {"secret_key": "k" * 40}


@pytest.fixture
async def build_github(tmp_path: Path, build: Any) -> AsyncIterator[Any]:
    """`build_github(url, **settings)`: like `build`, with GitHub tools that use each user's own
    token (a GitHub-like MCP server over stdio, started); stopped at teardown."""
    started: list[Any] = []
    github = {
        "command": "${PYTHON}",
        "args": [str(GITHUB_LIKE)],
        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PERSONAL_ACCESS_TOKEN}"},
        "user_token": {"integration": "github", "env": "GITHUB_PERSONAL_ACCESS_TOKEN"},
        "billing": "github",
    }
    config = write_config(tmp_path, {"github": github})

    async def factory(url: str, **settings: Any) -> Any:
        services, app_settings = build(
            url,
            mcp_enabled=True,
            mcp_config=config,
            github_personal_access_token="ghp_" + "0perat0r" * 5,
            **settings,
        )
        await services.mcp.start()
        started.append(services)
        return services, app_settings

    yield factory
    for services in started:
        await services.mcp.stop()


async def test_the_owner_connects_sees_masked_replaces_and_removes_their_token(
    database_url: str, build_github: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    services, settings = await build_github(database_url, **KEY)
    alice = await make_user(services)
    async with api_client(services, settings, alice.api_key) as http:
        empty = await http.get("/api/integrations/github")
        assert empty.status_code == 200
        assert empty.json() == {
            "connected": False,
            "masked": None,
            "updated_at": None,
            "shared_token_available": False,
            "available": True,
        }
        put = await http.put("/api/integrations/github", json={"token": TOKEN})
        assert put.status_code == 200, put.text
        body = put.json()
        assert (body["connected"], body["masked"], body["shared_token_available"]) == (
            True,
            f"ghp_…{TOKEN[-4:]}",
            False,
        )
        assert body["updated_at"] and TOKEN not in put.text and TOKEN[4:20] not in put.text
        shown = (await http.get("/api/integrations/github")).json()
        assert shown == body
        replaced = (await http.put("/api/integrations/github", json={"token": OTHER})).json()
        assert replaced["masked"] == f"github_pat_…{OTHER[-4:]}"
        assert await services.integrations.token(user_id=alice.user.id, integration="github") == OTHER
        deleted = await http.delete("/api/integrations/github")
        assert deleted.status_code == 204 and deleted.content == b""
        assert (await http.get("/api/integrations/github")).json()["connected"] is False
        assert (await http.delete("/api/integrations/github")).status_code == 204  # nothing left: still 204
    assert TOKEN not in caplog.text and OTHER not in caplog.text


async def test_only_the_owner_ever_sees_a_token(database_url: str, build_github: Any) -> None:
    services, settings = await build_github(database_url, **KEY)
    alice, bob = await make_user(services), await make_user(services)
    async with api_client(services, settings, alice.api_key) as http:
        await http.put("/api/integrations/github", json={"token": TOKEN})
    async with api_client(services, settings, bob.api_key) as http:
        assert (await http.get("/api/integrations/github")).json()["connected"] is False
        assert (await http.delete("/api/integrations/github")).status_code == 204  # removes bob's (none), not alice's
    assert await services.integrations.token(user_id=alice.user.id, integration="github") == TOKEN
    async with api_client(services, settings) as anonymous:
        for method in ("GET", "PUT", "DELETE"):
            refused = await anonymous.request(method, "/api/integrations/github", json={"token": TOKEN})
            assert refused.status_code == 401, method


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"token": "glpat-abcdefghijklmnopqrstuvwxyz012345"}, "letters, digits and underscores"),
        ({"token": "ghs_" + "x" * 36}, "must start with ghp_"),
        ({"token": "ghp_tooshort"}, "too short"),
        ({"token": "ghp_" + "x" * 290}, "too long"),
        ({"token": "   "}, "is empty"),
        ({"token": "x" * 301}, "at most 300 characters"),
        ({"token": ""}, "at least 1 character"),
        ({"token": "ghp_\u0000" + "x" * 36}, "NUL"),
        ({}, "Field required"),
    ],
)
async def test_a_malformed_token_is_a_422_naming_the_field(
    database_url: str, build_github: Any, body: dict[str, Any], message: str
) -> None:
    services, settings = await build_github(database_url, **KEY)
    alice = await make_user(services)
    async with api_client(services, settings, alice.api_key) as http:
        refused = await http.put("/api/integrations/github", json=body)
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert error["field"] == "token" and [f["field"] for f in error["fields"]] == ["token"]
        assert message in error["fields"][0]["message"]
        assert (await http.get("/api/integrations/github")).json()["connected"] is False


async def test_without_a_key_in_production_tokens_are_off(database_url: str, build_github: Any) -> None:
    services, settings = await build_github(database_url)  # LOCAL_USER=false and no SECRET_KEY
    alice = await make_user(services)
    async with api_client(services, settings, alice.api_key) as http:
        refused = await http.put("/api/integrations/github", json={"token": TOKEN})
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "integration_tokens_disabled"
        assert "SECRET_KEY" in refused.json()["error"]["message"]
        assert (await http.get("/api/integrations/github")).json()["connected"] is False
    (off,) = [line for line in describe(settings, services) if line.strip().startswith("off")]
    assert "per-user integration tokens (SECRET_KEY is not set (LOCAL_USER=false)" in off


async def test_without_github_tools_no_token_is_taken(database_url: str, build: Any) -> None:
    """A server whose GitHub MCP server is not configured says so, and refuses a token it would
    never use (409), instead of promising GitHub tools that do not exist."""
    services, settings = build(database_url, **KEY)  # MCP off: no GitHub tools
    alice = await make_user(services)
    async with api_client(services, settings, alice.api_key) as http:
        status = (await http.get("/api/integrations/github")).json()
        assert (status["available"], status["connected"]) == (False, False)
        refused = await http.put("/api/integrations/github", json={"token": TOKEN})
        assert (refused.status_code, refused.json()["error"]["code"]) == (409, "github_unavailable")
        assert "no GitHub tools" in refused.json()["error"]["message"]
        assert (await http.get("/api/integrations/github")).json()["connected"] is False
    assert await services.integrations.token(user_id=alice.user.id, integration="github") is None


async def test_the_shared_token_flag_needs_the_opt_in_and_a_token(database_url: str, build: Any) -> None:
    for overrides, shared in (
        ({"github_personal_access_token": "ghp_" + "o" * 36}, False),
        ({"github_shared_token": True}, False),
        ({"github_shared_token": True, "github_personal_access_token": "ghp_" + "o" * 36}, True),
    ):
        services, settings = build(database_url, **KEY, **overrides)
        alice = await make_user(services)
        async with api_client(services, settings, alice.api_key) as http:
            assert (await http.get("/api/integrations/github")).json()["shared_token_available"] is shared
