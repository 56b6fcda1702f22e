"""The built-in tools this deployment offers beyond the core two: `code_execution`, the workspace
file tools, `sql_query` and `web_search`, built from `ToolsConfig` with the reasons for any that are
off. `start()` checks the code sandbox once; if it cannot be set up, `code_execution` is withdrawn
with a log line saying why (it never runs code unsandboxed)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from almanac.config import ConfigError, Settings, redact_url
from almanac.tools.base import Tool
from almanac.tools.builtin.code_execution import CodeExecutionTool
from almanac.tools.builtin.files import ListFilesTool, ReadFileTool, WriteFileTool
from almanac.tools.builtin.sql import SqlQueryTool
from almanac.tools.builtin.sql_engines import reader_for
from almanac.tools.builtin.sql_target import refusal as sql_refusal
from almanac.tools.builtin.web_search import BraveSearch, WebSearchTool
from almanac.tools.builtin.workspace import Workspaces
from almanac.tools.config import ToolsConfig, load_tools_config
from almanac.tools.registry import ToolRegistry
from almanac.tools.sandbox import Sandbox, SandboxConfig

log = logging.getLogger("almanac.tools")


class BuiltinTools:
    """The optional built-in tools, what is off and why, and the sandbox they share."""

    def __init__(self, config: ToolsConfig, *, protected: tuple[Path, ...] = ()) -> None:
        self.config = config
        self.tools: list[Tool] = []
        self._off: list[str] = []
        self.sandbox: Sandbox | None = None
        files = config.files
        self.workspaces = Workspaces(files.root, files.limits) if files.enabled else None
        self._add_code(protected)
        if self.workspaces is not None:
            spaces = self.workspaces
            made: list[Tool] = [ReadFileTool(spaces), WriteFileTool(spaces), ListFilesTool(spaces)]
            self.tools += [tool for tool in made if tool.name in files.enabled]
        else:
            self._off.append(f"workspace files ({self._why('WORKSPACE_ENABLED=false')})")
        sql = config.sql
        if sql.database_url and sql.enabled:
            reader = reader_for(sql.database_url)
            self.tools.append(
                SqlQueryTool(reader, max_rows=sql.max_rows, timeout_s=sql.timeout_s, max_bytes=sql.max_bytes)
            )
        else:
            self._off.append(f"sql_query ({'SQL_TOOL_DATABASE_URL not set' if not sql.database_url else self._why()})")
        web = config.web
        if web.api_key and web.enabled:
            provider = BraveSearch(web.api_key, url=web.url, timeout_s=web.timeout_s)
            self.tools.append(WebSearchTool(provider, count=web.count))
        else:
            self._off.append(f"web_search ({'WEB_SEARCH_API_KEY not set' if not web.api_key else self._why()})")

    def _why(self, setting: str = "") -> str:
        return f"turned off in {self.config.source}" if self.config.source != "settings" or not setting else setting

    def _add_code(self, protected: tuple[Path, ...]) -> None:
        code = self.config.code
        if not code.enabled:
            self._off.append(f"code_execution ({self._why('CODE_EXECUTION_ENABLED=false')})")
            return
        self.sandbox = Sandbox(
            SandboxConfig(
                code.limits,
                code.host_uid,
                protected=protected,
                require_limits=code.require_limits,
                cgroups=code.cgroups,
                cgroup=code.cgroup,
            )
        )
        if not self.sandbox.installed:
            self._off.append("code_execution (bubblewrap is not installed: apt-get install bubblewrap)")
            self.sandbox = None
            return
        self.tools.append(CodeExecutionTool(self.sandbox, languages=code.languages, workspaces=self.workspaces))

    async def start(self, registry: ToolRegistry) -> None:
        """Check the sandbox; withdraw `code_execution` (with a log line) if it cannot run here."""
        if self.sandbox is None or "code_execution" not in registry:
            return
        problem = await self.sandbox.check()
        if problem is not None:
            registry.unregister("code_execution")
            self._off.append(f"code_execution (the sandbox cannot be set up: {problem})")
            log.warning("code_execution is off: the sandbox cannot be set up here: %s", problem)

    def close(self) -> None:
        """Remove the sandbox's run folders."""
        if self.sandbox is not None:
            self.sandbox.close()

    def off(self) -> list[str]:
        """The tools that are off, each with why."""
        return list(self._off)

    def describe_sandbox(self) -> str:
        """One line for the startup table."""
        if self.sandbox is None or self.sandbox.problem is not None:
            return "off"
        limits = self.sandbox.limits
        languages = [f"{name} ({path})" for name, path in sorted(self.sandbox.interpreters.items())]
        uid = self.sandbox.host_user
        user = f", as host uid {uid}" if uid is not None else ""
        return (
            f"bubblewrap: {', '.join(languages) or 'no interpreters'}; {limits.timeout_s:g} s, "
            f"{limits.memory_mb} MiB, {limits.processes} processes{user}"
        )

    def describe_protections(self) -> list[str]:
        """What bounds a sandboxed run on this host (empty when the sandbox is off)."""
        if self.sandbox is None or self.sandbox.problem is not None or self.sandbox.installed is False:
            return []
        return self.sandbox.protections()

    def describe_sql(self) -> str | None:
        """The SQL tool's database, its password masked (None when off)."""
        url = self.config.sql.database_url
        return redact_url(url) if url and self.config.sql.enabled else None


def build_builtin_tools(settings: Settings, *, environ: Mapping[str, str], cwd: Path) -> BuiltinTools:
    """The optional built-in tools for these settings (and TOOLS_CONFIG); reads no more than that file.
    `ConfigError` if `sql_query` would read the application's own database."""
    config = load_tools_config(settings, environ=environ)
    if config.sql.database_url and config.sql.enabled:
        refused = sql_refusal(config.sql.database_url, settings.resolved_database_url, cwd=cwd)
        if refused is not None:
            raise ConfigError(refused)
    protected = [settings.data_dir, cwd]
    database = settings.resolved_database_url
    if database.startswith("sqlite"):
        protected.append(Path(database.split(":///", 1)[-1]).parent)
    return BuiltinTools(config, protected=tuple(protected))
