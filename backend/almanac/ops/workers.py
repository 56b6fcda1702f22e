"""`almanac serve --workers N`: N worker processes serving one listening socket.

The parent binds the socket, then starts the workers (fresh interpreters, `spawn`), each building
its own application and running `GracefulServer` on the inherited socket; the kernel hands each
new connection to whichever worker accepts it first. The first worker is started alone and the
others only once it serves, so the one-time startup work (creating the local user, sweeping what
a dead process left) is never raced by a sibling. On SIGTERM or SIGINT the parent passes SIGTERM
to every worker — each drains as a single `almanac serve` does (`ops/shutdown.py`) — and waits for
them. A worker that dies while the others serve is replaced; one that exits before ever serving
stops the whole server (its replacement would fail the same way) — unless a signal killed it (an
operator, the OOM killer: its startup did not fail), which is replaced up to `MAX_KILLED_STARTING`
times in a row.

What each worker holds for itself: its caches (API keys), its queue of usage rows (flushed at its
own shutdown), its metrics, and — without `REDIS_URL` — its rate-limit counts and stream slots.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.context import SpawnProcess
from multiprocessing.synchronize import Event as ProcessEvent
from types import FrameType

import uvicorn

from almanac.config import Settings

log = logging.getLogger(__name__)
spawn = multiprocessing.get_context("spawn")
multiprocessing.allow_connection_pickling()  # sockets travel to spawned workers

STARTUP_FAILED = 3  # exit status of `almanac serve` when it never served
MAX_KILLED_STARTING = 3  # a worker killed by a signal before it served is replaced at most this many times in a row


def worker_count(text: str) -> int:
    """`--workers`: a whole number of processes, at least 1."""
    try:
        count = int(text)
    except ValueError:
        raise ValueError(f"--workers takes a whole number, not {text!r}") from None
    if count < 1:
        raise ValueError("--workers must be at least 1")
    return count


def worker_settings(settings: Settings, index: int) -> Settings:
    """The settings of worker `index`: only the first builds the local documentation index on its
    own (`DOCS_AUTO_INDEX`) — N concurrent builds would write the same tables N times; the others
    load whatever index exists when they start."""
    return settings if index == 0 else settings.model_copy(update={"docs_auto_index": False})


def serve_one(
    settings: Settings,
    config: dict[str, object],
    sockets: list[socket.socket] | None = None,
    on_started: Callable[[], None] | None = None,
) -> bool:
    """Build the application and serve it until shutdown (in this process); whether it served."""
    from almanac.api.logs import install_log_hygiene, secret_values
    from almanac.main import create_app
    from almanac.ops.serve import GracefulServer

    app = create_app(settings)
    config = {**config, "log_config": None}  # uvicorn's lines go through our root handler (LOG_FORMAT)
    server = GracefulServer(
        uvicorn.Config(app, **config),  # type: ignore[arg-type]
        shutdown=app.state.services.ops.shutdown,
        on_started=on_started,
    )
    install_log_hygiene(secret_values(settings))  # uvicorn's handlers exist now: keep secrets out of them too
    try:
        server.run(sockets=sockets)
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl+C it handled, after a graceful shutdown
        pass
    return bool(server.started)


def _worker(settings: Settings, config: dict[str, object], sock: socket.socket, ready: ProcessEvent) -> None:
    """A worker process's body: logging as in the parent, then serve on the inherited socket."""
    from almanac.api.logs import install_log_hygiene, secret_values
    from almanac.ops.log_format import configure_logging

    configure_logging(settings.log_level, settings.log_format)
    install_log_hygiene(secret_values(settings))
    raise SystemExit(0 if serve_one(settings, config, [sock], on_started=ready.set) else STARTUP_FAILED)


@dataclass
class Workers:
    """The parent: starts, watches, replaces and stops the worker processes."""

    settings: Settings
    config: dict[str, object]
    count: int
    startup_timeout_s: float = 120.0
    processes: list[SpawnProcess] = field(default_factory=list)
    stopping: bool = False

    def run(self) -> int:
        # uvicorn binds as it would for itself (IPv6, SO_REUSEADDR); the app named is never loaded here.
        host, port = str(self.config["host"]), int(str(self.config["port"]))
        sock = uvicorn.Config("almanac.main:create_app", host=host, port=port).bind_socket()
        previous = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            return self._supervise(sock)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            sock.close()

    def _stop(self, _signal: int, _frame: FrameType | None) -> None:
        self.stopping = True

    def _start(self, sock: socket.socket, index: int) -> tuple[SpawnProcess, ProcessEvent]:
        ready = spawn.Event()
        settings = worker_settings(self.settings, index)
        process = spawn.Process(target=_worker, args=(settings, self.config, sock, ready), daemon=False)
        process.start()
        return process, ready

    def _supervise(self, sock: socket.socket) -> int:
        started: list[tuple[SpawnProcess, ProcessEvent]] = []
        for index in range(self.count):
            process, ready = self._start(sock, index)
            started.append((process, ready))
            self.processes.append(process)
            if index == 0 and not self._wait_ready(process, ready):
                return self._stop_all(STARTUP_FAILED, sock)
        log.info("serving with %d worker processes: %s", self.count, ", ".join(str(p.pid) for p in self.processes))
        killed = [0] * self.count  # per worker: how many in a row were killed before they served
        while not self.stopping:
            time.sleep(0.2)
            for index, (process, ready) in enumerate(started):
                if process.is_alive() or self.stopping:
                    continue
                # killed by a signal (an operator, the OOM killer) before it served: its startup did not fail
                signalled = (process.exitcode or 0) < 0 and killed[index] < MAX_KILLED_STARTING
                if not ready.is_set() and not signalled:
                    log.error("worker %s stopped before it served (exit status %s)", process.pid, process.exitcode)
                    return self._stop_all(STARTUP_FAILED, sock)
                killed[index] = 0 if ready.is_set() else killed[index] + 1
                log.warning("worker %s died (exit status %s); starting another", process.pid, process.exitcode)
                started[index] = self._start(sock, index)
                self.processes[index] = started[index][0]
        return self._stop_all(0, sock)

    def _wait_ready(self, process: SpawnProcess, ready: ProcessEvent) -> bool:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline and not self.stopping:
            if ready.wait(0.2):
                return True
            if not process.is_alive():
                return False
        return ready.is_set()

    def _stop_all(self, status: int, sock: socket.socket) -> int:
        """Close the parent's copy of the socket (so that new connections are refused once the
        workers close theirs), SIGTERM every worker and wait for each (a worker drains for at most
        its grace period plus uvicorn's margin; after that it is killed)."""
        sock.close()
        for process in self.processes:
            if process.is_alive() and process.pid is not None:
                process.terminate()
        timeout = float(str(self.config.get("timeout_graceful_shutdown") or 30)) + 10
        deadline = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.1, deadline - time.monotonic()))
            if process.is_alive():
                log.error("worker %s did not stop in time; killing it", process.pid)
                process.kill()
                process.join()
        return status
