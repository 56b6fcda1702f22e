"""Running one command as a process tree that can always be stopped whole.

The command starts in a new session (its own process group) with a minimal environment; its output
is read concurrently up to a bound per stream (the rest is drained and dropped, so a pipe never
blocks); it is stopped with SIGKILL to the whole group when the wall-clock limit passes, when a
stream goes over its bound, when a watcher reports a problem (disk use), or when the caller is
cancelled. The sandbox's PID namespace then takes every descendant with it: bubblewrap's own init
is the only process the group signal must reach (`--die-with-parent`, PID-namespace teardown).
Given bubblewrap's `--info-fd` pipe, `run_tree` also waits, before it returns, until the sandbox's
init process has exited — which the kernel allows only once every other process of its namespace
is gone — so no orphan outlives the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import select
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

# After SIGKILL, how long to wait for the pipes to close (they close as the namespace goes away).
DRAIN_AFTER_KILL_S = 5.0
CHUNK = 64 * 1024
Watcher = Callable[[], Awaitable[str | None]]  # a problem that must stop the run, or None
Starter = Callable[[int], Awaitable[None]]  # given the sandbox's init PID, before the program starts
SETUP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Outcome:
    """How a process tree ended."""

    returncode: int | None  # None: it could not be waited for (see the log)
    stdout: bytes
    stderr: bytes
    stdout_size: int  # bytes written in all, kept or not
    stderr_size: int
    timed_out: bool
    stopped: str | None  # why it was stopped early (output or disk limit), None if it was not
    duration_s: float
    memory_exhausted: bool = False  # the run's memory cgroup hit its limit (allocations failed, OOM kill)


class _Stream:
    """Reads a pipe to its end, keeping at most `limit` bytes; `on_overflow` fires once past it."""

    def __init__(self, reader: asyncio.StreamReader | None, limit: int, on_overflow: Callable[[], None]) -> None:
        self.kept = bytearray()
        self.size = 0
        self._reader, self._limit, self._on_overflow = reader, limit, on_overflow

    async def pump(self) -> None:
        if self._reader is None:
            return
        while chunk := await self._reader.read(CHUNK):
            room = self._limit - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
            self.size += len(chunk)
            if self.size > self._limit:
                self._on_overflow()  # keep draining: a paused pipe would never report its end


async def run_tree(
    argv: Sequence[str],
    *,
    stdin: bytes,
    timeout_s: float,
    output_bytes: int,
    env: dict[str, str],
    watcher: Watcher | None = None,
    watch_every_s: float = 0.25,
    info: tuple[int, int] | None = None,
    block: tuple[int, int] | None = None,
    on_start: Starter | None = None,
    pass_fds: tuple[int, ...] = (),
) -> Outcome:
    """Run `argv` and collect what it wrote; see the module docstring for when it is stopped.
    `info` is bubblewrap's info pipe and `block` its block pipe (read end, write end): the child's
    ends are passed to it and closed here, as are `pass_fds`. With `block`, `on_start` is awaited
    with the sandbox's init PID before the program may start; if it raises, the tree is killed and
    the exception raised once nothing of it is left."""
    started = time.monotonic()
    ours = [fd for fd in (info[0] if info else None, block[1] if block else None) if fd is not None]
    theirs = [fd for fd in (info[1] if info else None, block[0] if block else None) if fd is not None]
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
            close_fds=True,
            pass_fds=(*theirs, *pass_fds),
        )
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in (*theirs, *pass_fds):
            os.close(fd)
    init = asyncio.create_task(asyncio.to_thread(_sandbox_init, info[0])) if info is not None else None
    reasons: list[str] = []

    def stop(reason: str) -> None:
        if reason in reasons:
            return
        reasons.append(reason)
        if process.returncode is None:  # once reaped, its PID (and group ID) may belong to another
            _kill_group(process.pid)

    streams = [
        _Stream(process.stdout, output_bytes, lambda: stop("output")),
        _Stream(process.stderr, output_bytes, lambda: stop("output")),
    ]
    tasks = [asyncio.create_task(_feed(process.stdin, stdin)), *(asyncio.create_task(s.pump()) for s in streams)]
    if watcher is not None:
        tasks.append(asyncio.create_task(_watch(watcher, watch_every_s, stop)))
    waiting = asyncio.create_task(process.wait())
    timed_out = False
    returncode: int | None = None
    failed: BaseException | None = None
    try:
        if block is not None:
            try:
                await _release(block[1], init, on_start)
            except Exception as exc:  # the tree dies before the program could start
                failed = exc
                stop("setup")
        try:
            await asyncio.wait_for(asyncio.shield(waiting), timeout_s)
        except TimeoutError:
            timed_out = True
            stop("timeout")
        try:  # the pipes close once every process of the sandbox is gone
            returncode = await asyncio.wait_for(asyncio.shield(waiting), DRAIN_AFTER_KILL_S)
            await asyncio.wait_for(asyncio.gather(*tasks[1:3]), DRAIN_AFTER_KILL_S)
        except TimeoutError:
            log.warning("a sandboxed process tree did not close its pipes %.0f s after SIGKILL", DRAIN_AFTER_KILL_S)
    finally:
        if process.returncode is None:  # cancelled, or it never ended: nothing may outlive the call
            _kill_group(process.pid)
        for task in (*tasks, waiting):
            task.cancel()
        await asyncio.gather(*tasks, waiting, return_exceptions=True)
        if init is not None:
            await _namespace_gone(init)
        if block is not None:
            os.close(block[1])  # only now: at end of file bubblewrap would start the program
    if failed is not None:
        raise failed
    stopped = next((r for r in reasons if r not in ("timeout", "setup")), None)
    out, err = streams
    return Outcome(
        returncode if returncode is not None else process.returncode,
        bytes(out.kept),
        bytes(err.kept),
        out.size,
        err.size,
        timed_out,
        stopped,
        time.monotonic() - started,
    )


def _kill_group(pid: int) -> None:
    """SIGKILL to the whole process group started for the run (its leader's PID is the group's)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _feed(pipe: asyncio.StreamWriter | None, data: bytes) -> None:
    """Write stdin and close it; a program that never reads it (or exits early) is fine."""
    if pipe is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if data:
            pipe.write(data)
            await pipe.drain()
        pipe.close()
        await pipe.wait_closed()


async def _watch(watcher: Watcher, every_s: float, stop: Callable[[str], None]) -> None:
    while True:
        await asyncio.sleep(every_s)
        if problem := await watcher():
            stop(problem)
            return


async def _release(block: int, init: asyncio.Task[tuple[int, int] | None] | None, on_start: Starter | None) -> None:
    """Let bubblewrap start the program, after `on_start` has prepared its sandbox."""
    if on_start is not None and init is not None:
        try:
            started = await asyncio.wait_for(asyncio.shield(init), SETUP_TIMEOUT_S)
        except TimeoutError:
            raise OSError("bubblewrap did not report its sandbox's PID") from None
        if started is not None:  # None: bubblewrap failed before it made one (its stderr says why)
            await on_start(started[0])
    with contextlib.suppress(BrokenPipeError):  # bubblewrap is gone already: its output says why
        os.write(block, b"x")


def _sandbox_init(info_fd: int) -> tuple[int, int] | None:
    """The PID of the sandbox's init and a pidfd of it, read from bubblewrap's info pipe (None if
    it never started)."""
    data = b""
    try:
        while chunk := os.read(info_fd, 4096):
            data += chunk
    finally:
        os.close(info_fd)
    try:
        pid = int(json.loads(data)["child-pid"])
        return pid, os.pidfd_open(pid)
    except (ValueError, KeyError, TypeError, ProcessLookupError):
        return None


async def _namespace_gone(init: asyncio.Task[tuple[int, int] | None]) -> None:
    """Wait (bounded) until the sandbox's init has exited, i.e. its whole PID namespace is empty."""
    try:
        started = await asyncio.wait_for(asyncio.shield(init), DRAIN_AFTER_KILL_S)
    except (TimeoutError, OSError):
        log.warning("bubblewrap did not report its sandbox's PID")
        return
    if started is None:
        return
    pidfd = started[1]
    try:
        ended, _, _ = await asyncio.to_thread(select.select, [pidfd], [], [], DRAIN_AFTER_KILL_S)
        if not ended:
            log.warning("a sandbox's PID namespace still had processes %.0f s after its end", DRAIN_AFTER_KILL_S)
    finally:
        os.close(pidfd)
