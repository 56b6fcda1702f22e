"""Tool configuration: the environment's settings, overridden per deployment by the TOOLS_CONFIG
YAML file in the seed's shape; mistakes stop startup with a message naming them."""

from pathlib import Path
from typing import Any

import pytest

from almanac.config import ConfigError, Settings
from almanac.tools.assembly import BuiltinTools
from almanac.tools.config import load_tools_config


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def with_file(tmp_path: Path, text: str, **values: Any) -> Settings:
    path = tmp_path / "tools.yaml"
    path.write_text(text)
    return settings(tools_config=path, **values)


def test_by_default_code_and_files_are_on_and_sql_and_web_need_configuring(tmp_path: Path) -> None:
    config = load_tools_config(settings(data_dir=tmp_path), environ={})
    assert config.code.enabled and config.code.limits.timeout_s == 10 and config.code.limits.memory_mb == 512
    assert config.files.enabled == {"read_file", "write_file", "list_files"}
    assert config.files.root == tmp_path / "workspaces"
    assert config.files.limits.max_file_bytes == 5 * 1024 * 1024
    assert config.sql.database_url is None and config.web.api_key is None
    tools = BuiltinTools(config)
    names = [tool.name for tool in tools.tools]
    assert "sql_query" not in names and "web_search" not in names
    assert "sql_query (SQL_TOOL_DATABASE_URL not set)" in tools.off()
    assert "web_search (WEB_SEARCH_API_KEY not set)" in tools.off()


def test_settings_turn_tools_on_and_off() -> None:
    config = load_tools_config(
        settings(
            code_execution_enabled=False,
            workspace_enabled=False,
            sql_tool_database_url="sqlite:///shop.db",
            web_search_api_key="k",
            code_execution_timeout_s=3,
        ),
        environ={},
    )
    tools = BuiltinTools(config)
    assert [tool.name for tool in tools.tools] == ["sql_query", "web_search"]
    assert tools.off() == ["code_execution (CODE_EXECUTION_ENABLED=false)", "workspace files (WORKSPACE_ENABLED=false)"]
    assert config.code.limits.timeout_s == 3


def test_the_seeds_yaml_shape_overrides_the_settings(tmp_path: Path) -> None:
    text = """
discussion:
  tools:
    enabled: true
    registry:
      - name: code_execution
        enabled: true
        parameters:
          timeout: 15
          memory_mb: 256
          max_processes: 16
          languages: [python, bash]
      - name: web_search
        enabled: true
        parameters:
          api_key: "${WEB_SEARCH_API_KEY}"
          count: 3
          url: "${SEARCH_URL:-https://search.internal/res/v1/web/search}"
      - name: file_manipulation
        enabled: false
      - name: read_file
        parameters: {max_file_mb: 1}
"""
    config = load_tools_config(with_file(tmp_path, text), environ={"WEB_SEARCH_API_KEY": "from-env"})
    assert (config.code.limits.timeout_s, config.code.limits.memory_mb, config.code.limits.processes) == (15, 256, 16)
    assert config.code.languages == ("python", "bash")
    assert (config.web.api_key, config.web.count, config.web.url) == (
        "from-env",
        3,
        "https://search.internal/res/v1/web/search",
    )
    assert config.files.enabled == {"read_file"}  # the group went off, then one came back
    assert config.files.limits.max_file_bytes == 1024 * 1024
    assert config.source.endswith("tools.yaml")
    code = next(tool for tool in BuiltinTools(config).tools if tool.name == "code_execution")
    assert code.input_schema["properties"]["language"]["enum"] == ["python", "bash"]


def test_tools_enabled_false_turns_every_one_of_them_off(tmp_path: Path) -> None:
    config = load_tools_config(
        with_file(tmp_path, "tools:\n  enabled: false\n", sql_tool_database_url="sqlite:///x.db"), environ={}
    )
    tools = BuiltinTools(config)
    assert tools.tools == []
    source = config.source
    assert tools.off() == [
        f"code_execution (turned off in {source})",
        f"workspace files (turned off in {source})",
        f"sql_query (turned off in {source})",
        "web_search (WEB_SEARCH_API_KEY not set)",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tools:\n  registry:\n    - name: teleport\n", "unknown tool 'teleport'"),
        ("tools:\n  registry:\n    - name: code_execution\n      parameters: {timeout: -1}\n", "timeout"),
        ("tools:\n  registry:\n    - name: code_execution\n      parameters: {tiemout: 5}\n", "tiemout"),
        ("tools:\n  registry:\n    - name: code_execution\n      parameters: {languages: [cobol]}\n", "cobol"),
        ("tools:\n  registry:\n    - name: sql_query\n      enabled: maybe\n", "`enabled` must be true or false"),
        ("tools:\n  registry:\n    - enabled: true\n", "needs a `name`"),
        ("tools: [1, 2]\n", "needs a `tools:` mapping"),
        ("tools: {registry: {name: x}}\n", "must be a list"),
        ("tools: [unclosed\n", "not valid YAML"),
    ],
)
def test_mistakes_in_the_file_are_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match="TOOLS_CONFIG") as raised:
        load_tools_config(with_file(tmp_path, text), environ={})
    assert message in str(raised.value)


def test_a_missing_file_and_a_bad_database_url_are_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="TOOLS_CONFIG: cannot read"):
        load_tools_config(settings(tools_config=tmp_path / "nope.yaml"), environ={})
    with pytest.raises(ConfigError, match="SQL_TOOL_DATABASE_URL"):
        load_tools_config(settings(sql_tool_database_url="mysql://x/y"), environ={})


def test_the_sql_byte_budget_comes_from_the_settings_or_the_file(tmp_path: Path) -> None:
    assert load_tools_config(settings(sql_tool_max_result_mb=2.5), environ={}).sql.max_bytes == 2_500_000
    text = (
        "tools:\n  registry:\n    - name: sql_query\n"
        "      parameters: {database_url: 'sqlite:///x.db', max_result_mb: 1}\n"
    )
    assert load_tools_config(with_file(tmp_path, text), environ={}).sql.max_bytes == 1_000_000
