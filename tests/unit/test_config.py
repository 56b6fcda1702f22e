"""Settings: defaults, validation naming the variable, provider choice, and the README table."""

import re
from pathlib import Path

import pytest

from almanac.config import ConfigError, Settings, load_settings

README = Path(__file__).resolve().parents[2] / "README.md"


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


def test_the_readme_documents_every_variable_with_its_default() -> None:
    table = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([A-Z0-9_]+)` \| ([^|]*) \|", README.read_text(), re.M)}
    missing = [name.upper() for name in Settings.model_fields if name.upper() not in table]
    assert missing == []
