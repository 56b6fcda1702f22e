"""MCP server declarations (pure): the `mcpServers` JSON shape desktop MCP clients use, plus
Almanac's own per-server fields.

```json
{"mcpServers": {
  "git":    {"command": "${PYTHON}", "args": ["-m", "mcp_server_git", "--repository", "${GIT_REPOSITORY}"],
             "timeout_s": 20, "billing": "tool", "deny": ["git_commit"]},
  "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"},
             "enabled": false}
}}
```

- stdio: `command`, `args`, `env`, `cwd`; streamable HTTP: `url`, `headers` (`type`/`transport` may
  say `stdio`, `http` or `streamable-http`; `sse` is not supported).
- `timeout_s` (one call, end to end; default TOOL_TIMEOUT_S), `enabled` (or `disabled`), `billing`
  (`tool` = 2 credits a call, `github` = 3), `allow` / `deny` (tool names, `*` wildcards allowed),
  `description`.
- `user_token` (`UserTokenSpec`): each user's calls run with that user's own token for an
  integration (e.g. `github`), sent as a header on every request of the user's own session
  (streamable HTTP: `header`, default `Authorization`, with `prefix`, default `Bearer `) or given
  to a process of the user's own (stdio: `env`); at most `max_sessions` such sessions at once, each
  stopped after `idle_s` without calls. The server's own `headers` / `env` (the operator's token)
  then only list the tools, unless the integration is shared (see `sessions.py`).
- `${VAR}` (and `${VAR:-default}`) is filled from the given variables in `command`, `args`, `env`,
  `cwd`, `url` and `headers`. A server that needs a variable which is unset (or empty) is disabled,
  and the reason names the variables. An `env` entry that expands to an empty string is left out.

Errors: `McpConfigError` for a file that cannot be read or is not the expected JSON shape; a single
server's bad field only disables that server (`DisabledServer.reason` says which field).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from almanac.billing.pricing import BillingCategory

Transport = Literal["stdio", "http"]
_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}")
_KNOWN_FIELDS = frozenset(
    "command args env cwd url headers type transport timeout_s enabled disabled billing allow deny description "
    "user_token".split()
)
_TRANSPORTS: Mapping[str, Transport] = {"stdio": "stdio", "http": "http", "streamable-http": "http"}
_TRANSPORTS_ALIASES = {"streamablehttp": "streamable-http", "streamable_http": "streamable-http"}


class McpConfigError(ValueError):
    """The MCP configuration file cannot be used at all (unreadable, not JSON, wrong shape)."""


@dataclass(frozen=True)
class UserTokenSpec:
    """How a server takes a user's own token (see the module docstring)."""

    integration: str
    header: str = "Authorization"
    prefix: str = "Bearer "
    env: str = ""
    max_sessions: int = 10
    idle_s: float = 300.0

    def apply(self, config: ServerConfig, token: str) -> ServerConfig:
        """`config` as one user's session: their token replaces the operator's."""
        if config.transport == "http":
            headers = {k: v for k, v in config.headers.items() if k.lower() != self.header.lower()}
            return replace(config, headers={**headers, self.header: f"{self.prefix}{token}"})
        return replace(config, env={**config.env, self.env: token})


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server, with every `${VAR}` already filled in."""

    name: str
    transport: Transport
    timeout_s: float
    billing: BillingCategory = BillingCategory.TOOL
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    description: str = ""
    user_token: UserTokenSpec | None = None

    def allows(self, tool: str) -> bool:
        """Whether the allow/deny lists let this tool through (deny wins; no allow list = all)."""
        if any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.deny):
            return False
        return not self.allow or any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.allow)

    @property
    def uses_docker(self) -> bool:
        """Whether the server is started with the `docker` command."""
        return self.transport == "stdio" and Path(self.command).name in ("docker", "docker.exe")

    @property
    def repository(self) -> str | None:
        """The `--repository` / `-r` argument, if the command has one (e.g. `mcp-server-git`)."""
        for index, arg in enumerate(self.args):
            if arg.startswith("--repository="):
                return arg.split("=", 1)[1]
            if arg in ("--repository", "-r") and index + 1 < len(self.args):
                return self.args[index + 1]
        return None

    @property
    def target(self) -> str:
        """A short description of where the server runs, for logs (no secrets)."""
        if self.transport == "http":
            return self.url
        return " ".join([Path(self.command).name, *self.args[:6]])


@dataclass(frozen=True)
class DisabledServer:
    name: str
    reason: str
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class McpConfig:
    servers: tuple[ServerConfig, ...] = ()
    disabled: tuple[DisabledServer, ...] = ()
    notes: tuple[str, ...] = ()


def expand(text: str, variables: Mapping[str, str]) -> tuple[str, list[str]]:
    """`text` with `${VAR}` / `${VAR:-default}` filled in, and the names that were missing."""
    missing: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        name, default = match["name"], match["default"]
        value = variables.get(name, "")
        if value:
            return value
        if default is not None:
            return default
        missing.append(name)
        return ""

    return _VARIABLE.sub(substitute, text), missing


def load_config(path: Path, *, variables: Mapping[str, str], default_timeout_s: float) -> McpConfig:
    """Read and parse the file at `path` (see `parse_config`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise McpConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno})") from None
    return parse_config(document, variables=variables, default_timeout_s=default_timeout_s)


def parse_config(document: Any, *, variables: Mapping[str, str], default_timeout_s: float) -> McpConfig:
    """The servers a parsed `{"mcpServers": {...}}` document declares, with variables filled in;
    servers that are turned off, incomplete or misconfigured come back in `disabled` with why."""
    if not isinstance(document, Mapping) or not isinstance(document.get("mcpServers", {}), Mapping):
        raise McpConfigError('expected a JSON object with an "mcpServers" object')
    servers: list[ServerConfig] = []
    disabled: list[DisabledServer] = []
    notes: list[str] = []
    for name, entry in document.get("mcpServers", {}).items():
        if isinstance(entry, Mapping) and (unknown := sorted(set(entry) - _KNOWN_FIELDS)):
            notes.append(f"MCP server {name!r}: ignoring unknown field(s) {', '.join(unknown)}")
        try:
            server = _parse_server(str(name), entry, variables, default_timeout_s)
        except _Disabled as off:
            disabled.append(DisabledServer(str(name), off.reason, off.missing))
            continue
        servers.append(server)
    return McpConfig(tuple(servers), tuple(disabled), tuple(notes))


class _Disabled(Exception):
    def __init__(self, reason: str, missing: Sequence[str] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.missing = tuple(missing)


def _parse_server(name: str, entry: Any, variables: Mapping[str, str], default_timeout_s: float) -> ServerConfig:
    if not isinstance(entry, Mapping):
        raise _Disabled("its entry is not a JSON object")
    if entry.get("enabled", True) is False or entry.get("disabled", False) is True:
        raise _Disabled("turned off in the configuration (enabled: false)")
    for flag in ("enabled", "disabled"):
        if flag in entry and not isinstance(entry[flag], bool):
            raise _Disabled(f"{flag} must be true or false")
    transport = _transport(entry)
    missing: list[str] = []

    def fill(value: Any, what: str) -> str:
        if not isinstance(value, str):
            raise _Disabled(f"{what} must be a string")
        text, absent = expand(value, variables)
        missing.extend(n for n in absent if n not in missing)
        return text

    def fill_map(key: str) -> dict[str, str]:
        raw = entry.get(key, {})
        if not isinstance(raw, Mapping):
            raise _Disabled(f"{key} must be an object of strings")
        return {str(k): fill(v, f"{key}.{k}") for k, v in raw.items()}

    args = entry.get("args", [])
    if not isinstance(args, list):
        raise _Disabled("args must be a list of strings")
    command = fill(entry.get("command", ""), "command")
    filled_args = tuple(fill(arg, "args") for arg in args)
    env = {key: value for key, value in fill_map("env").items() if value}
    cwd = fill(entry["cwd"], "cwd") if entry.get("cwd") else None
    url = fill(entry.get("url", ""), "url")
    headers = fill_map("headers")
    if missing:
        names = ", ".join(missing)
        raise _Disabled(f"{names} {'is' if len(missing) == 1 else 'are'} not set", missing)
    if transport == "stdio" and not command:
        raise _Disabled("needs a command (stdio) or a url (streamable HTTP)")
    if transport == "http" and not url.startswith(("http://", "https://")):
        raise _Disabled("url must start with http:// or https://")
    return ServerConfig(
        name=name,
        transport=transport,
        timeout_s=_timeout(entry, default_timeout_s),
        billing=_billing(entry),
        command=command,
        args=filled_args,
        env=env,
        cwd=cwd,
        url=url,
        headers=headers,
        allow=_patterns(entry, "allow"),
        deny=_patterns(entry, "deny"),
        description=str(entry.get("description", "")),
        user_token=_user_token(entry, transport),
    )


def _transport(entry: Mapping[str, Any]) -> Transport:
    declared = entry.get("type", entry.get("transport"))
    if declared is None:
        return "http" if "url" in entry and "command" not in entry else "stdio"
    key = str(declared).lower()
    key = _TRANSPORTS_ALIASES.get(key, key)
    if key not in _TRANSPORTS:
        raise _Disabled(f"transport {declared!r} is not supported (use stdio or streamable HTTP)")
    return _TRANSPORTS[key]


def _timeout(entry: Mapping[str, Any], default: float) -> float:
    value = entry.get("timeout_s", default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _Disabled("timeout_s must be a positive number of seconds")
    return float(value)


def _billing(entry: Mapping[str, Any]) -> BillingCategory:
    value = entry.get("billing", "tool")
    if value not in (BillingCategory.TOOL.value, BillingCategory.GITHUB.value):
        raise _Disabled('billing must be "tool" or "github"')
    return BillingCategory(value)


def _patterns(entry: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Disabled(f"{key} must be a list of tool names")
    return tuple(value)


_USER_TOKEN_FIELDS = frozenset({"integration", "header", "prefix", "env", "max_sessions", "idle_s"})
_HEADER_NAME = re.compile(r"^[A-Za-z0-9-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _user_token(entry: Mapping[str, Any], transport: Transport) -> UserTokenSpec | None:
    raw = entry.get("user_token")
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = {"integration": raw}
    if not isinstance(raw, Mapping) or set(raw) - _USER_TOKEN_FIELDS:
        raise _Disabled(f"user_token must be an object of {', '.join(sorted(_USER_TOKEN_FIELDS))}")
    integration, header, prefix = raw.get("integration"), raw.get("header", "Authorization"), raw.get("prefix")
    env, max_sessions, idle_s = raw.get("env", ""), raw.get("max_sessions", 10), raw.get("idle_s", 300)
    if not isinstance(integration, str) or not integration:
        raise _Disabled("user_token.integration must name an integration, e.g. github")
    if not isinstance(header, str) or not _HEADER_NAME.match(header):
        raise _Disabled("user_token.header must be an HTTP header name")
    if prefix is not None and not isinstance(prefix, str):
        raise _Disabled("user_token.prefix must be a string")
    if transport == "stdio" and not (isinstance(env, str) and _ENV_NAME.match(env)):
        raise _Disabled("user_token.env must name the environment variable a stdio server reads the token from")
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise _Disabled("user_token.max_sessions must be a positive whole number")
    if isinstance(idle_s, bool) or not isinstance(idle_s, int | float) or idle_s <= 0:
        raise _Disabled("user_token.idle_s must be a positive number of seconds")
    return UserTokenSpec(
        integration=integration,
        header=header,
        prefix="Bearer " if prefix is None else prefix,
        env=env if transport == "stdio" else "",
        max_sessions=max_sessions,
        idle_s=float(idle_s),
    )
