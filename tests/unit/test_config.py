"""Settings: defaults, validation naming the variable, provider choice, and docs/configuration.md."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from almanac.config import ConfigError, Settings, load_settings

SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def settings(**values: object) -> Settings:
    return load_settings(_env_file=None, **values)


def test_defaults_are_the_embedded_ones() -> None:
    s = settings()
    assert s.resolved_database_url == "sqlite+aiosqlite:///data/almanac.db"
    assert s.resolved_chat_provider == "offline"
    assert (s.max_turns, s.tool_timeout_s, s.max_message_chars, s.anthropic_model) == (
        15,
        30.0,
        32_000,
        "claude-haiku-4-5",
    )


def test_own_documentation_folders_default_to_the_data_folder_not_this_checkouts_docs() -> None:
    assert settings(data_dir=Path("/srv/almanac")).resolved_docs_paths == [Path("/srv/almanac/docs")]
    assert settings(docs_paths="/a, /b").resolved_docs_paths == [Path("/a"), Path("/b")]


@pytest.mark.parametrize(
    ("values", "provider"),
    [
        ({"anthropic_api_key": "k"}, "anthropic"),
        ({"openai_base_url": "http://localhost:11434/v1"}, "openai"),
        ({"anthropic_api_key": "k", "openai_api_key": "o"}, "anthropic"),
        ({"anthropic_api_key": "k", "chat_provider": "offline"}, "offline"),
        ({"openai_api_key": "o", "anthropic_api_key": "k", "chat_provider": "openai"}, "openai"),
    ],
)
def test_the_provider_follows_the_keys_unless_chosen(values: dict[str, str], provider: str) -> None:
    assert settings(**values).resolved_chat_provider == provider


def test_database_urls_get_async_drivers() -> None:
    assert settings(database_url="postgresql://u:p@db/almanac").database_url == "postgresql+asyncpg://u:p@db/almanac"
    assert settings(database_url="sqlite:////srv/a.db").database_url == "sqlite+aiosqlite:////srv/a.db"


@pytest.mark.parametrize(
    ("values", "variable"),
    [
        ({"max_turns": 0}, "MAX_TURNS"),
        ({"port": 70000}, "PORT"),
        ({"tool_timeout_s": -1}, "TOOL_TIMEOUT_S"),
        ({"chat_provider": "gpt"}, "CHAT_PROVIDER"),
        ({"database_url": "mysql://x"}, "DATABASE_URL"),
        ({"chat_provider": "anthropic"}, "ANTHROPIC_API_KEY"),
        ({"chat_provider": "openai"}, "OPENAI_BASE_URL"),
    ],
)
def test_invalid_values_name_the_variable(values: dict[str, object], variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        settings(**values)


def test_secrets_are_never_echoed() -> None:
    with pytest.raises(ConfigError) as error:
        settings(anthropic_api_key=["not", "a", "string"])
    assert "not" not in str(error.value).split("ANTHROPIC_API_KEY", 1)[1]


def _documented_settings() -> dict[str, str]:
    """The settings table of docs/configuration.md: variable → its default as written."""
    rows = re.finditer(r"^\| `([A-Z0-9_]+)` \| ([^|]*) \|", SETTINGS_PAGE.read_text(), re.M)
    return {m.group(1): m.group(2) for m in rows}


def test_the_settings_page_documents_every_variable() -> None:
    table = _documented_settings()
    missing = [name.upper() for name in Settings.model_fields if name.upper() not in table]
    assert missing == []


def _documented_default(cell: str) -> object:
    value = cell.strip().strip("`").strip()
    if value in ("—", "-", "(empty)", "") or value.startswith("(empty)"):
        return None
    return value


def _as_written(default: object) -> object:
    if default is None or default == "":
        return None
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, int | float):
        return float(default)
    if isinstance(default, Path):
        return default.as_posix()
    return str(default)


def test_the_settings_page_defaults_are_the_settings_defaults() -> None:
    table = _documented_settings()
    wrong = []
    for name, field in Settings.model_fields.items():
        written, actual = _documented_default(table.get(name.upper(), "")), _as_written(field.default)
        if isinstance(actual, float) and written is not None:
            try:
                written = float(str(written).replace(",", ""))
            except ValueError:
                pass
        if isinstance(actual, str) and isinstance(written, str):
            written, actual = written.removeprefix("./"), actual.removeprefix("./")
        if written != actual:
            wrong.append(f"{name.upper()}: the page says {table.get(name.upper())!r}, Settings has {field.default!r}")
    assert wrong == []


@pytest.mark.parametrize(
    "url",
    [
        "mysql://almanac:s3cr3t-Pa55@db.internal:3306/almanac",
        "mysql://almanac:s3cr3t-Pa55@word@db.internal/almanac",
        "oracle://db.internal/almanac?user=almanac&password=s3cr3t-Pa55",
        "postgresql+psycopg://almanac:s3cr3t-Pa55@db.internal/almanac",
    ],
)
def test_a_bad_database_url_is_named_without_its_password(url: str) -> None:
    with pytest.raises(ConfigError) as error:
        settings(database_url=url)
    message = str(error.value)
    assert "DATABASE_URL" in message and "db.internal" in message  # still says which URL
    assert "s3cr3t" not in message and "Pa55" not in message and "***" in message


def test_no_secret_setting_is_ever_echoed() -> None:
    with pytest.raises(ConfigError) as error:
        settings(github_personal_access_token=["ghp_tokenvalue"], context7_api_key=["ctx7sk-abcdef"], port="80a")
    message = str(error.value)
    assert "GITHUB_PERSONAL_ACCESS_TOKEN" in message and "CONTEXT7_API_KEY" in message
    assert "ghp_tokenvalue" not in message and "ctx7sk" not in message
    assert "'80a'" in message  # PORT is no secret: its value is shown


def test_the_cli_reports_a_bad_database_url_without_its_password(tmp_path: Path) -> None:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "ALMANAC_"))},
        "DATABASE_URL": "mysql://almanac:s3cr3t-Pa55@db.internal/almanac",
    }
    done = subprocess.run(
        [sys.executable, "-m", "almanac.cli", "db", "upgrade"],
        env=environment,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "DATABASE_URL" in done.stderr
    assert "s3cr3t" not in done.stderr + done.stdout


def test_the_cli_reports_an_unreachable_database_in_one_line_without_its_password(tmp_path: Path) -> None:
    environment = {**os.environ, "DATABASE_URL": "postgresql://almanac:s3cr3t-Pa55@127.0.0.1:1/almanac"}
    done = subprocess.run(
        [sys.executable, "-m", "almanac.cli", "db", "upgrade"],
        env=environment,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("almanac: ") and "Connect call failed" in done.stderr
    assert "s3cr3t" not in done.stderr + done.stdout
