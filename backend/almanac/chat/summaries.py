"""Background summarisation: summaries are written without holding up the turn loop.

Jobs run in tasks owned by the application, not by the request, so a client that disconnects
does not stop its summaries. A failed summary leaves the item verbatim (bounded) in the
summarised track: nothing is ever dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from almanac.memory.history import HistoryStore, bounded
from almanac.memory.summarise import Summariser, SummaryRequest

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SummaryDone:
    """A finished summary job: the text stored for the summary ID, and whether it is a real
    summary (`done`) or the bounded original kept because summarising failed (`failed`)."""

    full_id: str
    text: str
    status: str


class SummaryJobs:
    def __init__(
        self, summariser: Summariser, history: HistoryStore, *, fallback_chars: int, timeout_s: float = 120.0
    ) -> None:
        self.summariser = summariser
        self._history = history
        self._fallback_chars = fallback_chars
        self._timeout_s = timeout_s
        self._tasks: set[asyncio.Task[SummaryDone]] = set()

    def fallback(self, content: str, *, full_id: str) -> str:
        """What the summarised track holds until (or unless) a summary arrives."""
        return bounded(content, self._fallback_chars, full_id=full_id)

    def schedule(
        self, *, conversation_id: str, summary_id: str, full_id: str, request: SummaryRequest
    ) -> asyncio.Task[SummaryDone]:
        """Start summarising; the task's result is what was stored for `summary_id`."""
        task = asyncio.create_task(self._run(conversation_id, summary_id, full_id, request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _run(self, conversation_id: str, summary_id: str, full_id: str, request: SummaryRequest) -> SummaryDone:
        try:
            async with asyncio.timeout(self._timeout_s):
                summary = (await self.summariser.summarise(request)).strip()
            status = "done"
            if not summary or len(summary) >= len(request.content):
                summary = self.fallback(request.content, full_id=full_id)
        except Exception as exc:  # boundary: any summariser failure keeps the item verbatim
            log.warning("summary of %s failed (%s); keeping it verbatim", full_id, type(exc).__name__)
            summary, status = self.fallback(request.content, full_id=full_id), "failed"
        try:
            await self._history.set_content(
                conversation_id=conversation_id, item_id=summary_id, content=summary, status=status
            )
        except Exception:  # boundary: the bounded fallback stays in place; log and move on
            log.exception("could not store the summary %s", summary_id)
        return SummaryDone(full_id, summary, status)

    @staticmethod
    async def wait(tasks: Iterable[asyncio.Task[SummaryDone]], *, timeout_s: float) -> None:
        """Wait for these jobs, at most `timeout_s` (they keep running afterwards)."""
        pending = [task for task in tasks if not task.done()]
        if pending and timeout_s > 0:
            await asyncio.wait(pending, timeout=timeout_s)

    async def drain(self, *, timeout_s: float) -> None:
        """On shutdown: let running jobs finish for a while, then cancel the rest."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout_s)
        for task in list(self._tasks):
            task.cancel()
