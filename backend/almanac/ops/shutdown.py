"""Graceful shutdown: what runs between SIGTERM and the process's exit.

The server stops accepting connections at once (uvicorn closes its sockets); `Shutdown.begin()`
is called at that moment (`ops/serve.py`). Answers and streams already running may finish for up
to `grace_s`. Then the stoppers registered with `on_deadline` run: the chat service stops its runs
(each run's finish step — store what completed, bill it, release the conversation — runs shielded
from cancellation, and its stream ends with an `error` event), and every gateway stream still
open is interrupted (`interruptible`) and ends with an Anthropic `error` event; its usage is
recorded and billed when the recorder flushes at shutdown. After that, uvicorn waits for the
responses to end and then runs the application's own shutdown (flushes, closing the database).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio

log = logging.getLogger(__name__)
Stopper = Callable[[], int]  # stops what it runs; returns how many it stopped


class Shutdown:
    """Coordinates the end of a process's work (see the module docstring)."""

    def __init__(self, *, grace_s: float) -> None:
        self.grace_s = grace_s
        self.draining = False
        self.stopped = 0  # streams and answers stopped at the deadline
        self._stoppers: list[Stopper] = []
        self._scopes: set[anyio.CancelScope] = set()
        self._deadline: asyncio.Task[None] | None = None
        self.on_deadline(self._interrupt_streams)

    def on_deadline(self, stopper: Stopper) -> None:
        """Run `stopper` when the grace period ends."""
        self._stoppers.append(stopper)

    def begin(self) -> None:
        """The process is shutting down: start the grace period (once)."""
        if self.draining:
            return
        self.draining = True
        log.info("shutting down: running answers may finish for %g s", self.grace_s)
        self._deadline = asyncio.get_running_loop().create_task(self._expire())

    async def _expire(self) -> None:
        await asyncio.sleep(self.grace_s)
        self.stop_now()

    def stop_now(self) -> int:
        """Stop everything still running (the grace period is over); returns how many were stopped."""
        stopped = 0
        for stopper in self._stoppers:
            try:
                stopped += stopper()
            except Exception:  # boundary: one failing stopper must not keep the others from running
                log.exception("a shutdown stopper failed")
        self.stopped += stopped
        if stopped:
            log.warning("shutdown: stopped %d answers and streams still running after %g s", stopped, self.grace_s)
        return stopped

    @contextmanager
    def interruptible(self) -> Iterator[anyio.CancelScope]:
        """A cancel scope that the deadline cancels: wrap the forwarding of one stream in it, and
        send a farewell when `scope.cancelled_caught`."""
        with anyio.CancelScope() as scope:
            if self.draining and self._deadline is not None and self._deadline.done():
                scope.cancel()
            self._scopes.add(scope)
            try:
                yield scope
            finally:
                self._scopes.discard(scope)

    def _interrupt_streams(self) -> int:
        scopes = list(self._scopes)
        for scope in scopes:
            scope.cancel()
        return len(scopes)

    async def close(self) -> None:
        """Cancel the grace timer (everything ended before it ran out)."""
        if self._deadline is not None and not self._deadline.done():
            self._deadline.cancel()
            await asyncio.gather(self._deadline, return_exceptions=True)
