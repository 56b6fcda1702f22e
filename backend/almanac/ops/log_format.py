"""How log records are written: `text` (one line each) or `json` (one JSON object per line), both
with the request ID of the request being handled (`-` outside any request).

`configure_logging` installs one handler on the root logger; uvicorn's own loggers are left
without handlers of their own (`log_config=None`), so its startup and access lines pass the same
handler — and so the same formatter and the secret-masking filter (`api/logs.py`) — as ours.

A JSON line has `time` (UTC, ISO 8601 with milliseconds), `level`, `logger`, `message`,
`request_id`, and `exception` when a traceback is attached. Nothing else of the record is copied:
what a line says is exactly what its message says, after redaction.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Literal

from almanac.ops.request_ids import current_request_id

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


def _request_id(record: logging.LogRecord) -> str:
    found = getattr(record, "request_id", None)
    if not found:
        found = current_request_id() or "-"
        record.request_id = found
    return str(found)


class TextFormatter(logging.Formatter):
    """The classic line, with the request ID after the logger's name."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        _request_id(record)
        return super().format(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per record (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": _request_id(record),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def formatter_for(kind: LogFormat) -> logging.Formatter:
    """The formatter of LOG_FORMAT."""
    return JsonFormatter() if kind == "json" else TextFormatter()


def configure_logging(level: str, kind: LogFormat) -> None:
    """Log to stderr at `level` in the `kind` format, through one root handler — which drops what is below
    `level` even from a library that sets its own logger to DEBUG (bm25s does)."""
    logging.basicConfig(level=level, force=True)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(formatter_for(kind))
        handler.setLevel(level)
