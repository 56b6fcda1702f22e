"""DOC_SOURCE=auto: Context7 while it answers, else the local index — decided once per check, not per
question, so an offline service never waits for Context7's timeout.

Context7 is probed at startup (startup waits briefly for the first answer, then goes on) and again every
`recheck_s`. A question that finds Context7 unreachable after all marks it down at once (the pipeline
answers that question from the local index); the next successful check brings it back. No API key is
needed: Context7 answers without one, at lower limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from almanac.rag.sources.base import Corpus, DocSource, LibraryInfo, RateLimited, SourceUnavailable
from almanac.rag.sources.local import LocalSource

log = logging.getLogger(__name__)


class Probed(DocSource, Protocol):
    async def probe(self) -> tuple[bool, str]:
        """Whether the source answers now, and a few words on why (not)."""
        ...


class AutoSource:
    """A doc source that is Context7 while it answers, else the local index (see the module docstring)."""

    def __init__(self, context7: Probed, local: LocalSource, *, recheck_s: float = 300.0) -> None:
        self.context7 = context7
        self.local = local
        self.recheck_s = recheck_s
        self.up = False
        self.detail = "not checked yet"
        self.checks = 0
        self._task: asyncio.Task[None] | None = None
        self._checked = asyncio.Event()

    @property
    def name(self) -> str:
        return self.active().name

    def active(self) -> DocSource:
        """The source questions go to now."""
        return self.context7 if self.up else self.local

    def describe(self) -> str:
        """One line for the startup table."""
        using = "Context7" if self.up else "local index"
        return f"auto: {using} (Context7 {self.detail}; checked every {self.recheck_s:g} s)"

    async def check(self) -> bool:
        """Probe Context7 now and route questions accordingly; returns whether it answers."""
        try:
            up, detail = await self.context7.probe()
        except Exception as exc:  # boundary: a failing probe must never stop the checks; it means "down"
            log.warning("checking Context7 failed", exc_info=True)
            up, detail = False, f"could not be checked ({type(exc).__name__})"
        if up != self.up or self.checks == 0:
            log.info("documentation source: %s (Context7 %s)", "Context7" if up else "local index", detail)
        self.up, self.detail = up, detail
        self.checks += 1
        checked, self._checked = self._checked, asyncio.Event()
        checked.set()
        return up

    async def next_check(self) -> None:
        """Return when the next check has finished."""
        await self._checked.wait()

    def failed(self, error: SourceUnavailable) -> None:
        """A question found Context7 unavailable: use the local index until a check says otherwise.
        A rate limit is not an outage (Context7 answers; that question falls back on its own)."""
        if isinstance(error, RateLimited) or not self.up:
            return
        self.up, self.detail = False, f"failed a question ({error})"
        log.warning("Context7 failed a question; the local index answers until the next check: %s", error)

    async def start(self, *, wait_s: float = 3.0) -> None:
        """Start the periodic checks; wait at most `wait_s` for the first one (it finishes in the background)."""
        if self._task is None:
            first = asyncio.ensure_future(self.next_check())
            self._task = asyncio.create_task(self._run(), name="context7-checks")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(first), wait_s)

    async def _run(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(self.recheck_s)

    async def stop(self) -> None:
        """Stop the checks and close Context7's client."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        aclose = getattr(self.context7, "aclose", None)
        if aclose is not None:
            await aclose()

    async def libraries(self, name: str, query: str) -> list[LibraryInfo]:
        return await self.active().libraries(name, query)

    async def corpus(self, library: LibraryInfo, topic: str) -> Corpus:
        return await self.active().corpus(library, topic)
