"""`GracefulServer`: uvicorn's server, telling the application when shutdown begins.

On SIGTERM (or Ctrl+C) uvicorn closes its listening sockets, then waits for open connections for
up to `timeout_graceful_shutdown` before cancelling them. This subclass starts the application's
grace period (`Shutdown.begin`) at that moment, and uvicorn's own bound is set to the grace period
plus `STOP_MARGIN_S`: the time stopped answers get to store, bill and send their last event.

sse-starlette, left alone, ends every SSE stream the moment uvicorn is asked to exit (its
"automatic graceful drain"); that would cut answers mid-sentence instead of letting them finish,
so it is turned off here — `Shutdown` ends the streams instead, at the deadline.

Once the application has started, everything it allocated so far (modules, models, the app's
services: some 230,000 objects) is moved out of the garbage collector's sight (`gc.freeze`).
Those objects live as long as the process; without this, every full collection walks them all —
a pause of 100–500 ms on this machine, which under load lands on whichever requests are in flight
(it was most of the gateway's p99 at 50 clients).
"""

from __future__ import annotations

import gc
import math
import socket
from collections.abc import Callable

import uvicorn
from sse_starlette.sse import AppStatus

from almanac.ops.shutdown import Shutdown

STOP_MARGIN_S = 15.0


def graceful_timeout(grace_s: float) -> int:
    """uvicorn's `timeout_graceful_shutdown` (whole seconds) for a grace period of `grace_s`."""
    return math.ceil(grace_s + STOP_MARGIN_S)


class GracefulServer(uvicorn.Server):
    """A uvicorn server whose shutdown starts the application's grace period first."""

    def __init__(
        self, config: uvicorn.Config, *, shutdown: Shutdown, on_started: Callable[[], None] | None = None
    ) -> None:
        super().__init__(config)
        self.app_shutdown = shutdown
        self.on_started = on_started  # called once the application has started and the sockets listen
        AppStatus.disable_automatic_graceful_drain()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.started:
            return
        gc.collect()  # what is garbage now is not frozen with the rest
        gc.freeze()
        if self.on_started is not None:
            self.on_started()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.app_shutdown.begin()
        await super().shutdown(sockets)
