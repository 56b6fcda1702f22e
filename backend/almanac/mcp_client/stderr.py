"""A stdio MCP server's stderr, sent to our logs line by line instead of the terminal.

`StderrPipe` is a pipe whose write end becomes the server's stderr; `pump()` reads the other end
until every writer has closed it, logging each line (cut at `MAX_LINE`) at INFO on the server's
logger, and keeping the last lines for error messages.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from typing import IO, TextIO

MAX_LINE = 2_000
KEEP_LINES = 20


class StderrPipe:
    """One pipe for one server process. Use as a context manager to close both ends."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        read_fd, write_fd = os.pipe()
        self._reader: IO[bytes] = os.fdopen(read_fd, "rb", buffering=0)
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self.recent: deque[str] = deque(maxlen=KEEP_LINES)

    def close_writer(self) -> None:
        """Close our copy of the write end (once the child has its own), so `pump` sees EOF when
        the server exits."""
        if not self.writer.closed:
            self.writer.close()

    async def pump(self) -> None:
        """Log every line the server writes, until the pipe closes."""
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), self._reader)
        pending = b""
        try:
            while chunk := await stream.read(65_536):
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    self._log(line)
                if len(pending) > MAX_LINE * 4:  # a runaway line: log what we have
                    self._log(pending)
                    pending = b""
            self._log(pending)
        finally:
            transport.close()

    def _log(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip()
        if line:
            line = line if len(line) <= MAX_LINE else line[:MAX_LINE] + " …"
            self.recent.append(line)
            self._logger.info("stderr: %s", line)

    def last_line(self) -> str:
        """The last thing the server wrote to stderr ('' if nothing)."""
        return self.recent[-1] if self.recent else ""

    async def drain(self, pump: asyncio.Task[None], *, timeout_s: float = 1.0) -> None:
        """Let `pump` log the last lines (the process has exited), then close the pipe."""
        self.close_writer()
        _, pending = await asyncio.wait([pump], timeout=timeout_s)
        for task in pending:
            task.cancel()
        self.__exit__()

    def __enter__(self) -> StderrPipe:
        return self

    def __exit__(self, *_: object) -> None:
        self.close_writer()
        if not self._reader.closed:
            self._reader.close()
