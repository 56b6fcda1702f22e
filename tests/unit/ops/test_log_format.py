"""Log lines: text or JSON, each with the request ID of its context, secrets masked."""

import io
import json
import logging
import sys

from almanac.api.logs import LogHygiene
from almanac.ops.log_format import JsonFormatter, TextFormatter, configure_logging, formatter_for
from almanac.ops.request_ids import _current


def record(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("boom with sk-secret-123456")
        except ValueError:
            exc_info = sys.exc_info()
    return logging.LogRecord("almanac.test", logging.WARNING, __file__, 1, message, args, exc_info)


def test_a_json_line_has_the_fields_and_the_request_id_of_its_context() -> None:
    token = _current.set("req-42")
    try:
        line = JsonFormatter().format(record("answered %s in %d ms", "q3", 12))
    finally:
        _current.reset(token)
    entry = json.loads(line)
    assert set(entry) == {"time", "level", "logger", "message", "request_id"}
    assert entry["message"] == "answered q3 in 12 ms" and entry["request_id"] == "req-42"
    assert entry["level"] == "WARNING" and entry["logger"] == "almanac.test" and entry["time"].endswith("+00:00")
    assert "\n" not in line


def test_outside_a_request_the_id_is_a_dash() -> None:
    assert json.loads(JsonFormatter().format(record("startup")))["request_id"] == "-"
    assert " [-] startup" in TextFormatter().format(record("startup"))


def test_a_text_line_carries_the_request_id() -> None:
    token = _current.set("abc123")
    try:
        line = TextFormatter().format(record("hello"))
    finally:
        _current.reset(token)
    assert line.endswith("WARNING almanac.test [abc123] hello")


def test_tracebacks_are_one_field_and_pass_the_secret_filter_first() -> None:
    hygiene = LogHygiene(["sk-secret-123456"])
    failed = record("key %s failed", "sk-secret-123456", exc=True)
    assert hygiene.filter(failed)
    entry = json.loads(formatter_for("json").format(failed))
    assert "sk-secret" not in json.dumps(entry)
    assert entry["message"] == "key *** failed" and "ValueError: boom with ***" in entry["exception"]


def test_the_log_level_holds_for_libraries_that_set_their_own_logger_to_debug() -> None:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        configure_logging("INFO", "text")
        out = io.StringIO()
        for handler in root.handlers:
            assert isinstance(handler, logging.StreamHandler)
            handler.setStream(out)
        chatty = logging.getLogger("chatty_library")
        chatty.setLevel(logging.DEBUG)  # as bm25s does on import
        chatty.debug("Building index from tokens")
        chatty.info("index built")
        assert "index built" in out.getvalue() and "Building index" not in out.getvalue()
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
