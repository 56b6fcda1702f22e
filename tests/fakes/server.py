"""Run an ASGI app on a real uvicorn server on 127.0.0.1 (a free port) in a background thread."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import uvicorn


class ServerThread:
    """`with ServerThread(app) as server: server.url` — a real HTTP server for the block's duration."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1") -> None:
        self._config = uvicorn.Config(
            app, host=host, port=0, log_level="warning", lifespan="on", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(self._config)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    def _run(self) -> None:
        asyncio.run(self._server.serve())

    def __enter__(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("test server did not start")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *_: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)
