"""The local index as the running service knows it — loaded, being built, or missing — and the wait of a
question asked while the first build has not yet produced a searchable index."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from almanac.rag.local_search import LocalIndex
from almanac.rag.priority import LibraryPriority

Report = Callable[[str], None]


def describe_index(index: LocalIndex) -> str:
    """`46,499 chunks, 278 libraries (hybrid)` — and while embeddings are being computed, how many
    libraries already have hybrid search."""
    if index.vectors is None:
        kind = "BM25 only"
    elif index.hybrid is None or index.libraries.keys() <= index.hybrid:
        kind = "hybrid"
    else:
        kind = f"hybrid for {len(index.hybrid):,} of {len(index.libraries):,} libraries, BM25 for the rest"
    return f"{len(index.chunks):,} chunks, {len(index.libraries):,} libraries ({kind})"


class LocalIndexState:
    """The current local index (`get`), what is happening to it (`status`), and the background build."""

    def __init__(self, priority: LibraryPriority | None = None) -> None:
        self.index: LocalIndex | None = None
        self.status = "not built or not loaded yet; run `almanac docs index`"
        self.task: asyncio.Task[None] | None = None
        self.priority = priority or LibraryPriority()
        self.published: list[str] = []  # describe_index() of every index handed out, in order
        self._changed = asyncio.Event()

    def get(self) -> LocalIndex | None:
        """The index to search now, or None."""
        return self.index

    def missing(self) -> str:
        """Why there is no index (or what is being done about it)."""
        return self.status

    def publish(self, index: LocalIndex) -> None:
        """Serve `index` from now on."""
        self.index = index
        self.published.append(describe_index(index))
        self.set_status(describe_index(index))

    def set_status(self, status: str) -> None:
        """Record what the index is doing, and wake whoever waits for a change."""
        self.status = status
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def building(self) -> bool:
        """Whether a background build is running."""
        return self.task is not None and not self.task.done()

    async def changed(self) -> None:
        """Return at the next status change (or publication)."""
        await self._changed.wait()

    async def wait_loaded(self, *, timeout_s: float, report: Report | None = None) -> bool:
        """Wait until an index is loaded — at most `timeout_s`, and only while a build is running —
        telling `report` what the build is doing each time that changes. Returns whether one is loaded."""
        if self.index is not None or not self.building():
            return self.index is not None
        assert self.task is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        said = ""
        while self.index is None and self.building() and loop.time() < deadline:
            if report is not None and self.status != said:
                said = self.status
                report(f"The local documentation index is being built (first start); waiting for it: {said}")
            change = asyncio.ensure_future(self.changed())
            try:
                await asyncio.wait({change, self.task}, timeout=deadline - loop.time(), return_when="FIRST_COMPLETED")
            finally:
                change.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await change
        return self.index is not None
