"""Log hygiene for the server process: no secret reaches a log line, and no line grows with what a
client sends.

`LogHygiene` is a `logging.Filter` put on every handler (`install_log_hygiene`), so it sees the
records of every logger — ours, uvicorn's access and error logs, libraries' — before they are
written. It replaces the configured secrets (API keys, tokens, the database password, as written
and percent-decoded) with `***` in the message, its arguments and any formatted traceback, and cuts
each argument to `MAX_ARG_CHARS` (uvicorn's access line carries the request path: a 16 kB path
would otherwise log 16 kB).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from pydantic import SecretStr

from almanac.config import Settings, url_passwords

MAX_ARG_CHARS = 500
MIN_SECRET_CHARS = 4  # shorter values would blank out ordinary words; no key or token is that short


def secret_values(settings: Settings) -> list[str]:
    """Every secret the settings hold: SecretStr values and the database and Redis URLs' passwords."""
    found = [
        value.get_secret_value()
        for value in (getattr(settings, name) for name in type(settings).model_fields)
        if isinstance(value, SecretStr)
    ]
    found += url_passwords(settings.database_url) + url_passwords(settings.redis_url)
    return sorted({s for s in found if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)


class LogHygiene(logging.Filter):
    """Redacts secrets and bounds arguments in every record that passes (it never drops one)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if len(s) >= MIN_SECRET_CHARS]

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = self.redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(self._argument(arg) for arg in record.args)
        elif isinstance(record.args, dict):
            record.args = {key: self._argument(arg) for key, arg in record.args.items()}
        if record.exc_info:
            text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_text, record.exc_info = self.redact(text), None
        elif record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        return True

    def redact(self, text: str) -> str:
        """`text` with every secret replaced by `***`."""
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text

    def _argument(self, value: Any) -> Any:
        """A string argument redacted and bounded; any other kept as it is (so `%d` and `%r` still
        work) unless its text needs either, in which case that text replaces it."""
        if isinstance(value, int | float) or value is None:
            return value
        original = value if isinstance(value, str) else str(value)
        text = self.redact(original)
        if len(text) > MAX_ARG_CHARS:
            text = f"{text[:MAX_ARG_CHARS]}…({len(text):,} characters)"
        return value if text == original and not isinstance(value, str) else text


def install_log_hygiene(secrets: Iterable[str], *, loggers: Iterable[str] = ("", "uvicorn", "uvicorn.access")) -> None:
    """Put one `LogHygiene` on every handler of these loggers (the root's and uvicorn's own)."""
    hygiene = LogHygiene(secrets)
    for name in loggers:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(existing, LogHygiene) for existing in handler.filters):
                handler.addFilter(hygiene)
