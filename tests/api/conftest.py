"""Helpers for API tests that need a real HTTP server (uvicorn on a loopback port, in a thread):
what an in-process ASGI client cannot show — chunked bodies, paths no client library normalises,
the server's own logging."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


@contextmanager
def live_server(app: Any) -> Iterator[tuple[str, int]]:
    """Serve `app` with uvicorn on 127.0.0.1 (its lifespan included); yields (host, port). The
    server logs through the standard loggers (no logging config of its own), so `caplog` sees it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on", timeout_graceful_shutdown=5))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(600):  # bounded wait for startup (not a timing assertion: it only stops waiting)
        if server.started or not thread.is_alive():
            break
        time.sleep(0.05)
    assert server.started, "the server did not start"
    try:
        yield "127.0.0.1", port
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def raw_request(address: tuple[str, int], request: bytes, *chunks: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `request` (and then each chunk) over a plain socket, exactly as written — no client
    library normalises the path or adds headers — and read the whole response."""
    with socket.create_connection(address, timeout=30) as connection:
        connection.sendall(request)
        for chunk in chunks:
            try:
                connection.sendall(chunk)
            except OSError:  # the server may answer (and close) before the client has sent everything
                break
        received = b""
        while True:
            try:
                data = connection.recv(65536)
            except OSError:
                break
            if not data:
                break
            received += data
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = _dechunk(body)
    return int(status_line.split()[1]), headers, body


def _dechunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out, body = out + rest[:size], rest[size + 2 :]
    return out
