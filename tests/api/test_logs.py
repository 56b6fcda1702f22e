"""Logs carry no secrets and no contents, and say each thing once: a database error is a 500 JSON
logged once, without the statement's parameters (the user's message) or any exception's text; the
server's own lines stay bounded whatever path a client sends; configured secrets never appear."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from tests.api.conftest import live_server, raw_request
from tests.support import api_client, make_user, wait_ready

from almanac.api.logs import LogHygiene
from almanac.main import create_app

SECRET_MESSAGE = "my salary is 123456 and my password is hunter2-ZQX"


async def break_history_table(services: Any) -> None:
    """Make every write of a history item fail inside the database (a real database error)."""
    async with services.database.session() as session:
        await session.execute(text("ALTER TABLE history_items RENAME TO history_items_gone"))


def logged_text(records: list[logging.LogRecord]) -> str:
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return "\n".join(formatter.format(record) for record in records)


async def test_a_database_error_is_a_500_logged_once_without_its_parameters(
    database_url: str, build: Any, caplog: pytest.LogCaptureFixture
) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    await break_history_table(services)
    caplog.set_level(logging.DEBUG)
    # The in-process transport re-raises whatever escapes the application: nothing may.
    async with api_client(services, settings, user.api_key) as http:
        response = await http.post("/api/chat", json={"message": SECRET_MESSAGE})
        assert response.status_code == 500
        assert response.json() == {
            "error": {
                "code": "internal_error",
                "message": "an internal error occurred; it has been logged",
                "request_id": response.headers["x-request-id"],
            }
        }
        assert response.headers["x-frame-options"] == "DENY"
        assert (await http.get("/api/credits")).json()["balance"] == 50  # one transaction, rolled back
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert len(errors) == 1, logged_text(errors)
    [error] = errors
    assert error.name == "almanac.api.errors" and error.exc_info is None
    assert "unhandled error in POST /api/chat: sqlalchemy.exc." in error.getMessage()
    everything = logged_text(caplog.records)
    assert "hunter2" not in everything and "123456" not in everything and "INSERT" not in everything


async def test_a_500_through_a_real_server_is_logged_once(
    sqlite_url: str, build: Any, caplog: pytest.LogCaptureFixture
) -> None:
    services, settings = build(sqlite_url)
    user = await make_user(services)
    await break_history_table(services)
    await services.database.dispose()  # the server's own event loop opens its connections
    caplog.set_level(logging.INFO)
    body = b'{"message": "' + SECRET_MESSAGE.encode() + b'"}'
    with live_server(create_app(settings, services)) as address:
        request = (
            f"POST /api/chat HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {user.api_key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        status, _, answer = raw_request(address, request, body)
    assert status == 500 and b"internal_error" in answer
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert [record.name for record in errors] == ["almanac.api.errors"], logged_text(errors)
    assert "hunter2" not in logged_text(caplog.records)


def test_log_hygiene_redacts_secrets_and_bounds_arguments() -> None:
    hygiene = LogHygiene(["sk-ant-api03-VERYSECRET", "pg-pass-1234"])
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/" + "p" * 20_000, "1.1", 404),
        None,
    )
    assert hygiene.filter(record)
    line = record.getMessage()
    assert len(line) < 700 and line.endswith('HTTP/1.1" 404') and "20,001 characters" in line
    try:
        raise RuntimeError("cannot connect with postgresql://app:pg-pass-1234@db/almanac")
    except RuntimeError:
        failure = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "key %s failed", ("sk-ant-api03-VERYSECRET",), sys.exc_info()
        )
    hygiene.filter(failure)
    shown = logging.Formatter().format(failure)
    assert "VERYSECRET" not in shown and "pg-pass-1234" not in shown and "postgresql://app:***@db" in shown


@pytest.mark.timeout(120)
def test_the_served_process_logs_bounded_lines_and_no_secrets(tmp_path: Path) -> None:
    """`almanac serve` as deployed: uvicorn's access log cuts a long path, and a configured key that
    an error quotes is masked."""
    port = _free_port()
    ui = tmp_path / "dist"
    ui.mkdir()
    (ui / "index.html").write_text("<!doctype html><title>Almanac</title>")
    env = {
        **os.environ,
        "DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'almanac.db'}",
        "LOCAL_USER": "false",
        "MCP_ENABLED": "false",
        "DOCS_AUTO_INDEX": "false",
        "EMBEDDINGS": "none",
        "CHAT_PROVIDER": "offline",
        "ANTHROPIC_API_KEY": "sk-ant-api03-THIS-MUST-NOT-BE-LOGGED",
        "FRONTEND_DIST": str(ui),
        "LOG_LEVEL": "INFO",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "almanac.cli", "serve", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_ready(process, f"http://127.0.0.1:{port}")
        long_path = "/" + "z" * 8_000
        assert httpx.get(f"http://127.0.0.1:{port}{long_path}").status_code == 414
        assert httpx.get(f"http://127.0.0.1:{port}/%00").status_code == 400
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=60)
    lines = output.splitlines()
    assert any("GET /zzzz" in line and "414" in line for line in lines), output[-2_000:]
    assert max(len(line) for line in lines) < 1_000
    assert "Traceback" not in output and "THIS-MUST-NOT-BE-LOGGED" not in output


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_database_errors_carry_no_parameters_whoever_logs_them(database_url: str, build: Any) -> None:
    """Other layers may `log.exception` a failed write (a summary, a tool result): the error's own
    text must not quote the statement's parameters, on either database."""
    services, _ = build(database_url)
    await break_history_table(services)
    with pytest.raises(Exception) as failure:  # whichever error the driver raises
        async with services.database.session() as session:
            await session.execute(
                text("INSERT INTO history_items (conversation_id, item_id, content) VALUES (:c, :i, :content)"),
                {"c": "c", "i": "q1", "content": SECRET_MESSAGE},
            )
    shown = "".join(traceback.format_exception(failure.value))
    assert "history_items" in shown and "hunter2" not in shown and "123456" not in shown
