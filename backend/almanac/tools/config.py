"""Which built-in tools run in this deployment, and with what parameters.

Two sources: the environment settings (`CODE_EXECUTION_*`, `WORKSPACE_*`, `SQL_TOOL_*`,
`WEB_SEARCH_*`) and, optionally, the `TOOLS_CONFIG` YAML file in the seed's shape (also accepted
under a top-level `discussion:`):

    tools:
      enabled: true                 # false: none of these tools
      registry:
        - name: code_execution
          enabled: true
          parameters: {timeout: 15, memory_mb: 512, languages: [python, bash]}
        - name: web_search
          parameters: {api_key: "${WEB_SEARCH_API_KEY}", count: 5}
        - name: file_manipulation   # read_file, write_file and list_files (or name them one by one)
          enabled: false

A file's parameters override the settings; `${VAR}` and `${VAR:-default}` are filled from the
environment. An unknown tool, an unknown parameter or a wrong type is a `ConfigError` naming it.
`code_execution` and the file tools are on unless turned off; `sql_query` and `web_search` are on
when they have a database URL or an API key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from almanac.config import ConfigError, Settings
from almanac.tools.builtin.confined import WorkspaceLimits
from almanac.tools.sandbox.limits import Limits

MIB = 1024 * 1024
FILE_TOOLS = ("read_file", "write_file", "list_files")
FILE_GROUPS = ("file_manipulation", "workspace_files")
LANGUAGES = ("python", "javascript", "bash")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class CodeExecutionConfig:
    enabled: bool = True
    limits: Limits = field(default_factory=Limits)
    languages: tuple[str, ...] = LANGUAGES
    host_uid: int = 65534
    require_limits: bool = True  # refuse to run without a kernel-enforced disk limit and the filter
    cgroups: bool = True  # a memory and pids cgroup per run where the host allows
    cgroup: Path | None = None  # a delegated cgroup v2 folder for them (default: found)


@dataclass(frozen=True)
class FilesConfig:
    root: Path = Path("data/workspaces")
    enabled: frozenset[str] = frozenset(FILE_TOOLS)
    limits: WorkspaceLimits = field(default_factory=WorkspaceLimits)


@dataclass(frozen=True)
class SqlConfig:
    database_url: str | None = None
    enabled: bool = True
    max_rows: int = 200
    timeout_s: float = 10.0
    max_bytes: int = 4_000_000  # what one query may return (and, on SQLite, build), in bytes


@dataclass(frozen=True)
class WebSearchConfig:
    api_key: str | None = None
    enabled: bool = True
    url: str = "https://api.search.brave.com/res/v1/web/search"
    count: int = 5
    timeout_s: float = 15.0


@dataclass(frozen=True)
class ToolsConfig:
    code: CodeExecutionConfig = field(default_factory=CodeExecutionConfig)
    files: FilesConfig = field(default_factory=FilesConfig)
    sql: SqlConfig = field(default_factory=SqlConfig)
    web: WebSearchConfig = field(default_factory=WebSearchConfig)
    source: str = "settings"  # or the TOOLS_CONFIG file's path


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _CodeParameters(_Strict):
    timeout: float | None = Field(None, gt=0, le=600)
    memory_mb: int | None = Field(None, ge=64, le=65_536)
    max_processes: int | None = Field(None, ge=4, le=4096)
    max_file_mb: int | None = Field(None, ge=1, le=4096)
    max_output_bytes: int | None = Field(None, ge=1024, le=64 * MIB)
    disk_mb: int | None = Field(None, ge=1, le=65_536)
    languages: list[str] | None = None
    host_uid: int | None = Field(None, ge=1)


class _FileParameters(_Strict):
    max_file_mb: float | None = Field(None, gt=0)
    max_workspace_mb: float | None = Field(None, gt=0)
    max_files: int | None = Field(None, ge=1, le=1_000_000)


class _SqlParameters(_Strict):
    database_url: str | None = None
    max_rows: int | None = Field(None, ge=1, le=10_000)
    timeout: float | None = Field(None, gt=0, le=300)
    max_result_mb: float | None = Field(None, gt=0, le=256)


class _WebParameters(_Strict):
    api_key: str | None = None
    url: str | None = None
    count: int | None = Field(None, ge=1, le=20)
    timeout: float | None = Field(None, gt=0, le=120)


_PARAMETERS: dict[str, type[_Strict]] = {
    "code_execution": _CodeParameters,
    "sql_query": _SqlParameters,
    "web_search": _WebParameters,
    **dict.fromkeys((*FILE_TOOLS, *FILE_GROUPS), _FileParameters),
}


def from_settings(settings: Settings) -> ToolsConfig:
    """The configuration the environment settings alone give."""

    def secret(value: SecretStr | None) -> str | None:
        return (value.get_secret_value().strip() or None) if value is not None else None

    return ToolsConfig(
        code=CodeExecutionConfig(
            enabled=settings.code_execution_enabled,
            limits=Limits(timeout_s=settings.code_execution_timeout_s, memory_mb=settings.code_execution_memory_mb),
            host_uid=settings.code_execution_host_uid,
            require_limits=settings.code_execution_require_limits,
            cgroups=settings.code_execution_cgroups,
            cgroup=settings.code_execution_cgroup,
        ),
        files=FilesConfig(
            root=settings.data_dir / "workspaces",
            enabled=frozenset(FILE_TOOLS) if settings.workspace_enabled else frozenset(),
            limits=WorkspaceLimits(
                max_file_bytes=int(settings.workspace_max_file_mb * MIB),
                max_total_bytes=int(settings.workspace_max_mb * MIB),
            ),
        ),
        sql=SqlConfig(
            secret(settings.sql_tool_database_url),
            max_rows=settings.sql_tool_max_rows,
            timeout_s=settings.sql_tool_timeout_s,
            max_bytes=int(settings.sql_tool_max_result_mb * 1_000_000),
        ),
        web=WebSearchConfig(
            secret(settings.web_search_api_key), url=settings.web_search_url, count=settings.web_search_results
        ),
    )


def load_tools_config(settings: Settings, *, environ: Mapping[str, str]) -> ToolsConfig:
    """The settings, overridden by TOOLS_CONFIG when it is set; `ConfigError` names what is wrong."""
    config = from_settings(settings)
    if settings.tools_config is None:
        return _checked(config)
    path = settings.tools_config.expanduser()
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"TOOLS_CONFIG: cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"TOOLS_CONFIG: {path} is not valid YAML ({exc})") from None
    return _checked(apply_document(config, _fill(document, environ), source=str(path)))


def apply_document(config: ToolsConfig, document: Any, *, source: str) -> ToolsConfig:
    """`config` with a parsed TOOLS_CONFIG document applied (see the module docstring)."""
    if isinstance(document, dict) and "discussion" in document and "tools" not in document:
        document = document["discussion"]
    section = document.get("tools") if isinstance(document, dict) else None
    if not isinstance(section, dict):
        raise ConfigError(f"TOOLS_CONFIG: {source} needs a `tools:` mapping")
    if section.get("enabled", True) is False:
        return ToolsConfig(
            code=_replace(config.code, enabled=False),
            files=_replace(config.files, enabled=frozenset()),
            sql=_replace(config.sql, enabled=False),
            web=_replace(config.web, enabled=False),
            source=source,
        )
    registry = section.get("registry") or []
    if not isinstance(registry, list):
        raise ConfigError("TOOLS_CONFIG: `tools.registry` must be a list")
    for index, entry in enumerate(registry):
        config = _apply_entry(config, entry, where=f"tools.registry[{index}]")
    return _replace(config, source=source)


def _apply_entry(config: ToolsConfig, entry: Any, *, where: str) -> ToolsConfig:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise ConfigError(f"TOOLS_CONFIG: {where} needs a `name`")
    name = entry["name"]
    if name not in _PARAMETERS:
        raise ConfigError(f"TOOLS_CONFIG: {where}: unknown tool {name!r} (known: {', '.join(sorted(_PARAMETERS))})")
    enabled = entry.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"TOOLS_CONFIG: {where} ({name}): `enabled` must be true or false")
    try:
        parameters = _PARAMETERS[name].model_validate(entry.get("parameters") or {})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"TOOLS_CONFIG: {where} ({name}) parameters: {problems}") from None
    if isinstance(parameters, _CodeParameters):
        return _replace(config, code=_code(config.code, parameters, enabled=enabled))
    if isinstance(parameters, _SqlParameters):
        sql = _replace(config.sql, enabled=enabled, database_url=parameters.database_url or config.sql.database_url)
        sql = _replace(sql, max_rows=parameters.max_rows or sql.max_rows, timeout_s=parameters.timeout or sql.timeout_s)
        if parameters.max_result_mb:
            sql = _replace(sql, max_bytes=int(parameters.max_result_mb * 1_000_000))
        return _replace(config, sql=sql)
    if isinstance(parameters, _WebParameters):
        web = _replace(config.web, enabled=enabled, api_key=parameters.api_key or config.web.api_key)
        web = _replace(web, url=parameters.url or web.url, count=parameters.count or web.count)
        return _replace(config, web=_replace(web, timeout_s=parameters.timeout or web.timeout_s))
    assert isinstance(parameters, _FileParameters)
    return _replace(config, files=_files(config.files, parameters, names={name}, enabled=enabled))


def _code(code: CodeExecutionConfig, p: _CodeParameters, *, enabled: bool) -> CodeExecutionConfig:
    limits = code.limits
    limits = _replace(
        limits,
        timeout_s=p.timeout or limits.timeout_s,
        memory_mb=p.memory_mb or limits.memory_mb,
        processes=p.max_processes or limits.processes,
        file_size_mb=p.max_file_mb or limits.file_size_mb,
        output_bytes=p.max_output_bytes or limits.output_bytes,
        disk_mb=p.disk_mb or limits.disk_mb,
    )
    languages = tuple(p.languages) if p.languages is not None else code.languages
    unknown = [language for language in languages if language not in LANGUAGES]
    if unknown:
        raise ConfigError(f"TOOLS_CONFIG: code_execution languages: unknown {unknown} (known: {list(LANGUAGES)})")
    return CodeExecutionConfig(
        enabled, limits, languages, p.host_uid or code.host_uid, code.require_limits, code.cgroups, code.cgroup
    )


def _files(files: FilesConfig, p: _FileParameters, *, names: set[str], enabled: bool) -> FilesConfig:
    tools = set(FILE_TOOLS) if names & set(FILE_GROUPS) else names
    on = files.enabled | tools if enabled else files.enabled - tools
    limits = files.limits
    limits = WorkspaceLimits(
        max_file_bytes=int(p.max_file_mb * MIB) if p.max_file_mb else limits.max_file_bytes,
        max_total_bytes=int(p.max_workspace_mb * MIB) if p.max_workspace_mb else limits.max_total_bytes,
        max_files=p.max_files or limits.max_files,
    )
    return FilesConfig(files.root, frozenset(on), limits)


def _checked(config: ToolsConfig) -> ToolsConfig:
    url = config.sql.database_url
    if url and not url.startswith(("sqlite://", "sqlite+aiosqlite://", "postgresql://", "postgres://", "postgresql+")):
        raise ConfigError("SQL_TOOL_DATABASE_URL: must start with sqlite:/// or postgresql://")
    if not config.web.url.startswith(("http://", "https://")):
        raise ConfigError("WEB_SEARCH_URL: must start with http:// or https://")
    return config


def _fill(value: Any, environ: Mapping[str, str]) -> Any:
    """`${VAR}` / `${VAR:-default}` in every string of a parsed document, from `environ`."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: environ.get(m.group(1)) or (m.group(2) or ""), value)
    if isinstance(value, list):
        return [_fill(item, environ) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, environ) for key, item in value.items()}
    return value


def _replace(value: Any, **changes: Any) -> Any:
    return replace(value, **changes)
