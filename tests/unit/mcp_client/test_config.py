"""MCP server declarations: the mcpServers shape, ${VAR} expansion, per-server fields, and why a
server is off."""

import json
from pathlib import Path
from typing import Any

import pytest

from almanac.billing.pricing import BillingCategory
from almanac.mcp_client.config import McpConfig, McpConfigError, expand, load_config, parse_config

REPO_SERVERS = Path(__file__).resolve().parents[3] / "mcp" / "servers.json"


def parse(servers: dict[str, Any], **variables: str) -> McpConfig:
    return parse_config({"mcpServers": servers}, variables=variables, default_timeout_s=30)


@pytest.mark.parametrize(
    ("text", "variables", "expected", "missing"),
    [
        ("plain", {}, "plain", []),
        ("${A}", {"A": "1"}, "1", []),
        ("Bearer ${TOKEN}", {}, "Bearer ", ["TOKEN"]),
        ("${EMPTY}", {"EMPTY": ""}, "", ["EMPTY"]),
        ("${A:-fallback}", {}, "fallback", []),
        ("${A:-fallback}", {"A": "set"}, "set", []),
        ("${A:-}", {}, "", []),
        ("${A}/${B}", {"B": "b"}, "/b", ["A"]),
        ("$A and ${not valid}", {"A": "x"}, "$A and ${not valid}", []),
    ],
)
def test_variables_are_filled_from_the_given_mapping(
    text: str, variables: dict[str, str], expected: str, missing: list[str]
) -> None:
    assert expand(text, variables) == (expected, missing)


def test_a_stdio_server_with_every_field() -> None:
    config = parse(
        {
            "tools": {
                "command": "${PY}",
                "args": ["-m", "server", "--repository", "${REPO}"],
                "env": {"TOKEN": "${TOKEN}", "UNSET_OK": "${NOPE:-}"},
                "cwd": "/srv",
                "timeout_s": 5,
                "billing": "github",
                "allow": ["git_*", "status"],
                "deny": ["git_commit"],
                "description": "d",
            }
        },
        PY="/usr/bin/python3",
        REPO="/src/repo",
        TOKEN="secret",
    )
    (server,) = config.servers
    assert (server.name, server.transport, server.command, server.cwd) == ("tools", "stdio", "/usr/bin/python3", "/srv")
    assert server.args == ("-m", "server", "--repository", "/src/repo")
    assert server.env == {"TOKEN": "secret"}  # an entry that expands to "" is left out
    assert (server.timeout_s, server.billing, server.description) == (5.0, BillingCategory.GITHUB, "d")
    assert server.repository == "/src/repo" and not server.uses_docker
    assert [server.allows(t) for t in ("git_log", "git_commit", "status", "other")] == [True, False, True, False]
    assert config.disabled == ()


def test_an_http_server_fills_its_headers() -> None:
    (server,) = parse(
        {"remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}},
        TOKEN="t0k",
    ).servers
    assert (server.transport, server.url, server.headers) == (
        "http",
        "https://mcp.example.com/mcp",
        {"Authorization": "Bearer t0k"},
    )
    assert server.target == "https://mcp.example.com/mcp"


def test_defaults_timeout_billing_and_lists() -> None:
    (server,) = parse({"s": {"command": "srv"}}).servers
    assert (server.timeout_s, server.billing, server.allow, server.deny) == (30.0, BillingCategory.TOOL, (), ())
    assert server.allows("anything")


def test_a_server_missing_variables_is_disabled_naming_them() -> None:
    config = parse(
        {
            "github": {"command": "docker", "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PERSONAL_ACCESS_TOKEN}"}},
            "remote": {"url": "${URL}", "headers": {"X-Key": "${KEY}"}},
            "ok": {"command": "srv"},
        }
    )
    assert [s.name for s in config.servers] == ["ok"]
    reasons = {off.name: (off.reason, off.missing) for off in config.disabled}
    assert reasons["github"] == ("GITHUB_PERSONAL_ACCESS_TOKEN is not set", ("GITHUB_PERSONAL_ACCESS_TOKEN",))
    assert reasons["remote"] == ("URL, KEY are not set", ("URL", "KEY"))


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"command": "srv", "enabled": False}, "turned off"),
        ({"command": "srv", "disabled": True}, "turned off"),
        ({"command": "srv", "enabled": "no"}, "enabled must be true or false"),
        ({"command": "srv", "timeout_s": 0}, "timeout_s must be a positive"),
        ({"command": "srv", "timeout_s": "5"}, "timeout_s must be a positive"),
        ({"command": "srv", "billing": "documentation"}, 'billing must be "tool" or "github"'),
        ({"command": "srv", "allow": "git_log"}, "allow must be a list"),
        ({"command": "srv", "args": "-v"}, "args must be a list"),
        ({"command": "srv", "env": ["A"]}, "env must be an object"),
        ({"url": "https://x", "type": "sse"}, "transport 'sse' is not supported"),
        ({"url": "ftp://x"}, "url must start with http"),
        ({"args": ["x"]}, "needs a command"),
        ("docker run", "not a JSON object"),
    ],
)
def test_a_bad_server_entry_disables_only_that_server(entry: Any, reason: str) -> None:
    config = parse({"bad": entry, "good": {"command": "srv"}})
    assert [s.name for s in config.servers] == ["good"]
    assert config.disabled[0].name == "bad" and reason in config.disabled[0].reason


@pytest.mark.parametrize(
    ("entry", "transport"),
    [
        ({"command": "srv"}, "stdio"),
        ({"url": "http://h/mcp"}, "http"),
        ({"url": "http://h/mcp", "type": "streamable-http"}, "http"),
        ({"url": "http://h/mcp", "transport": "streamableHttp"}, "http"),
        ({"command": "srv", "type": "stdio"}, "stdio"),
    ],
)
def test_the_transport_follows_the_fields_or_the_declared_type(entry: dict[str, Any], transport: str) -> None:
    assert parse({"s": entry}).servers[0].transport == transport


def test_unknown_fields_are_ignored_with_a_note() -> None:
    config = parse({"s": {"command": "srv", "autoApprove": [], "alwaysAllow": []}})
    assert len(config.servers) == 1
    assert config.notes == ("MCP server 's': ignoring unknown field(s) alwaysAllow, autoApprove",)


@pytest.mark.parametrize("document", [[], {"mcpServers": []}, "text"])
def test_a_document_of_the_wrong_shape_is_a_config_error(document: Any) -> None:
    with pytest.raises(McpConfigError, match="mcpServers"):
        parse_config(document, variables={}, default_timeout_s=30)


def test_an_empty_document_declares_no_servers() -> None:
    assert parse_config({}, variables={}, default_timeout_s=30) == McpConfig()


def test_unreadable_or_malformed_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match="cannot read"):
        load_config(tmp_path / "missing.json", variables={}, default_timeout_s=30)
    broken = tmp_path / "servers.json"
    broken.write_text('{"mcpServers": {')
    with pytest.raises(McpConfigError, match="not valid JSON"):
        load_config(broken, variables={}, default_timeout_s=30)


def test_the_shipped_servers_json_declares_git_and_github() -> None:
    document = json.loads(REPO_SERVERS.read_text())
    everything = {
        "PYTHON": "/venv/bin/python",
        "GIT_REPOSITORY": "/src/repo",
        "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x",
    }
    config = parse_config(document, variables=everything, default_timeout_s=30)
    git, github = config.servers
    assert (git.name, git.command, git.repository, git.billing) == ("git", "/venv/bin/python", "/src/repo", "tool")
    assert git.args[:2] == ("-m", "mcp_server_git")
    assert git.allows("git_log") and git.allows("git_show") and not git.allows("git_commit")
    assert github.uses_docker and github.billing is BillingCategory.GITHUB
    assert {"-i", "--rm", "GITHUB_READ_ONLY=1", "ghcr.io/github/github-mcp-server"} <= set(github.args)
    assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x", "GITHUB_TOOLSETS": "default"}

    bare = parse_config(document, variables={"PYTHON": "python"}, default_timeout_s=30)
    assert bare.servers == ()
    assert {off.name: off.missing for off in bare.disabled} == {
        "git": ("GIT_REPOSITORY",),
        "github": ("GITHUB_PERSONAL_ACCESS_TOKEN",),
    }


GIT_READ_TOOLS = ["git_status", "git_diff_unstaged", "git_diff_staged", "git_diff", "git_log", "git_show", "git_branch"]


@pytest.mark.parametrize("name", ["servers.json", "servers.compose.json"])
def test_the_shipped_git_server_allows_only_read_tools(name: str) -> None:
    document = json.loads((REPO_SERVERS.parent / name).read_text())
    entry = document["mcpServers"]["git"]
    assert entry["allow"] == GIT_READ_TOOLS and "deny" not in entry  # an allow list: new tools stay out
    variables = {"PYTHON": "python", "GIT_REPOSITORY": "/src/repo"}
    (git,) = [s for s in parse_config(document, variables=variables, default_timeout_s=30).servers if s.name == "git"]
    for write_tool in ("git_commit", "git_add", "git_reset", "git_checkout", "git_create_branch", "git_push", "git_x"):
        assert not git.allows(write_tool), write_tool


def test_the_shipped_github_servers_take_each_users_token() -> None:
    variables = {"PYTHON": "python", "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_operator"}
    stdio = parse_config(json.loads(REPO_SERVERS.read_text()), variables=variables, default_timeout_s=30)
    compose = json.loads((REPO_SERVERS.parent / "servers.compose.json").read_text())
    http = parse_config(compose, variables=variables, default_timeout_s=30)
    (docker,) = stdio.servers
    (remote,) = http.servers
    assert docker.user_token is not None and remote.user_token is not None
    assert (docker.user_token.integration, docker.user_token.env) == ("github", "GITHUB_PERSONAL_ACCESS_TOKEN")
    mine = docker.user_token.apply(docker, "ghp_mine")
    assert mine.env["GITHUB_PERSONAL_ACCESS_TOKEN"] == "ghp_mine" and mine.args == docker.args
    assert remote.headers["Authorization"] == "Bearer ghp_operator"
    theirs = remote.user_token.apply(remote, "ghp_theirs")
    assert theirs.headers == {**remote.headers, "Authorization": "Bearer ghp_theirs"}
    assert remote.headers["Authorization"] == "Bearer ghp_operator"  # the server's own config is unchanged


def test_user_token_fields_are_parsed_with_defaults() -> None:
    document = {
        "mcpServers": {
            "short": {"url": "https://x/mcp", "user_token": "github"},
            "custom": {
                "url": "https://x/mcp",
                "headers": {"authorization": "token op"},
                "user_token": {"integration": "github", "header": "Authorization", "prefix": "token ", "idle_s": 5},
            },
            "stdio": {"command": "srv", "user_token": {"integration": "github", "env": "TOKEN", "max_sessions": 2}},
        }
    }
    short, custom, stdio = parse_config(document, variables={}, default_timeout_s=30).servers
    assert short.user_token is not None and (short.user_token.header, short.user_token.prefix) == (
        "Authorization",
        "Bearer ",
    )
    assert (short.user_token.max_sessions, short.user_token.idle_s) == (10, 300.0)
    assert custom.user_token is not None
    assert custom.user_token.apply(custom, "abc").headers == {"Authorization": "token abc"}  # replaced, any case
    assert stdio.user_token is not None and (stdio.user_token.env, stdio.user_token.max_sessions) == ("TOKEN", 2)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"command": "srv", "user_token": "github"}, "user_token.env must name"),
        ({"url": "https://x", "user_token": {"integration": ""}}, "user_token.integration"),
        ({"url": "https://x", "user_token": {"integration": "github", "header": "Bad Header"}}, "HTTP header"),
        ({"url": "https://x", "user_token": {"integration": "github", "max_sessions": 0}}, "max_sessions"),
        ({"url": "https://x", "user_token": {"integration": "github", "idle_s": -1}}, "idle_s"),
        ({"url": "https://x", "user_token": {"integration": "github", "surprise": 1}}, "user_token must be"),
        ({"url": "https://x", "user_token": ["github"]}, "user_token must be"),
    ],
)
def test_a_bad_user_token_disables_the_server(entry: dict[str, Any], reason: str) -> None:
    (off,) = parse_config({"mcpServers": {"s": entry}}, variables={}, default_timeout_s=30).disabled
    assert reason in off.reason
