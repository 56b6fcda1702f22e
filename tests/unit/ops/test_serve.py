"""`GracefulServer` once it has started: the application's long-lived objects are frozen out of
the garbage collector's full collections, and whoever waits for the start is told."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import uvicorn

from almanac.ops.serve import GracefulServer
from almanac.ops.shutdown import Shutdown


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:  # never called here
    raise AssertionError("no request was sent")


async def test_after_startup_the_heap_is_frozen_and_the_start_announced() -> None:
    started = asyncio.Event()
    server = GracefulServer(
        uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="off", log_level="warning"),
        shutdown=Shutdown(grace_s=0),
        on_started=started.set,
    )
    gc.unfreeze()
    serving = asyncio.create_task(server.serve())
    try:
        await asyncio.wait([serving, asyncio.ensure_future(started.wait())], return_when=asyncio.FIRST_COMPLETED)
        assert server.started and started.is_set()
        assert gc.get_freeze_count() > 10_000  # the interpreter's and the test's modules at least
    finally:
        server.should_exit = True
        await serving
        gc.unfreeze()
