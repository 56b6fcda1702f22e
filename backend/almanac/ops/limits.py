"""Per-user limits: requests per minute (by plan) and concurrently open streams.

`Limiter.check_rate` admits or refuses one request to a limited route (the chat routes and
`POST /v1/messages` share one budget per user); `Limiter.open_stream` admits or refuses one
stream (an SSE chat answer, a streaming `/v1/messages` request) and returns the `StreamSlot` it
holds until `release()`. A refusal is `RateLimited`, which the API answers with 429 and
`Retry-After`; it is raised before any work starts, so a refused request costs nothing.

The counts live in a `LimitStore` (`limit_stores.py`): in Redis when REDIS_URL is set, so the
limits hold across every process; in this process otherwise. While slots are held, one task per
process renews them every third of their TTL. A slot that is dropped without `release()` (a bug,
a generator never started) stops being renewed once nothing refers to it, and expires.

If the store fails (Redis unreachable), requests are admitted and the failure is logged: limits
protect the service, they must not take it down with them. After a failure the store is left alone
for `STORE_BACKOFF_S`, so an unreachable Redis costs one timeout per few seconds, not one per request.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import uuid
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from almanac.ops.limit_stores import LimitStore
from almanac.ops.metrics import Metrics

log = logging.getLogger(__name__)
LimitKind = Literal["requests", "streams"]
StreamKind = Literal["chat", "gateway"]
STREAM_RETRY_AFTER_S = 5  # what a refused stream is told: streams end on their own schedule
STORE_BACKOFF_S = 5.0


@dataclass(frozen=True)
class LimitConfig:
    """Requests per minute by plan (0: no limit; a plan not listed gets `default_plan`'s) and
    open streams per user (0: no cap)."""

    per_minute: Mapping[str, int] = field(default_factory=lambda: {"free": 30, "pro": 120})
    default_plan: str = "free"
    max_streams: int = 4
    slot_ttl_s: float = 60.0
    window_s: float = 60.0

    def requests_per_window(self, plan: str) -> int:
        return self.per_minute.get(plan, self.per_minute.get(self.default_plan, 0))


def retry_after_s(wait_s: float) -> int:
    """Whole seconds a client is told to wait (`Retry-After`): rounded up, at least 1 — a 35.4 s wait
    says 36, since a client that comes back after 35 s is refused again."""
    return max(1, math.ceil(wait_s))


class RateLimited(Exception):
    """A limit refused the request; `retry_after_s` says when to try again (whole seconds, ≥ 1)."""

    def __init__(self, limit: LimitKind, allowed: int, retry_after_s: int) -> None:
        self.limit = limit
        self.allowed = allowed
        self.retry_after_s = retry_after_s
        if limit == "requests":
            message = f"rate limit reached: {allowed} requests per minute on your plan; retry in {retry_after_s} s"
        else:
            message = f"too many open streams: at most {allowed} at once; close one or retry in {retry_after_s} s"
        super().__init__(message)


class StreamSlot:
    """One open stream's hold on a user's stream cap. `release()` once it ends (idempotent)."""

    def __init__(self, limiter: Limiter, *, kind: StreamKind, key: str, slot: str, held: bool) -> None:
        self._limiter = limiter
        self.kind = kind
        self.key = key
        self.slot = slot
        self.held = held  # False when no cap applies: the stream is only counted
        self.released = False

    def release(self) -> None:
        """Give the slot back (the store is told in the background: safe in cancelled code)."""
        if not self.released:
            self.released = True
            self._limiter._release(self)


class Limiter:
    """The limits of one application (see the module docstring)."""

    def __init__(self, config: LimitConfig, store: LimitStore, *, metrics: Metrics | None = None) -> None:
        self.config = config
        self.store = store
        self._metrics = metrics
        self._held: weakref.WeakSet[StreamSlot] = weakref.WeakSet()
        self._renewer: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        self.open_streams: dict[str, int] = {"chat": 0, "gateway": 0}
        self._store_down_until = 0.0  # monotonic time until which the store is not asked (it failed)

    def _store_usable(self) -> bool:
        return time.monotonic() >= self._store_down_until

    def _store_failed(self, what: str) -> None:
        self._store_down_until = time.monotonic() + STORE_BACKOFF_S
        log.warning("limit store failed (%s); admitting without limits for %g s", what, STORE_BACKOFF_S, exc_info=True)

    async def check_rate(self, *, user_id: str, plan: str, budget: str = "") -> None:
        """Count one request of the user's; `RateLimited` if their plan's budget is spent. `budget`
        names a budget of its own, with the same allowance (e.g. token counting, which should not eat
        into the budget of the requests that do the work)."""
        allowed = self.config.requests_per_window(plan)
        if allowed <= 0 or not self._store_usable():
            return
        key = f"rate:{user_id}:{budget}" if budget else f"rate:{user_id}"
        try:
            wait_s = await self.store.hit(key, uuid.uuid4().hex, limit=allowed, window_s=self.config.window_s)
        except Exception:  # boundary: an unreachable store admits (and says so) rather than failing requests
            self._store_failed("rate limit")
            return
        if wait_s > 0:
            self._refused("requests")
            raise RateLimited("requests", allowed, retry_after_s(wait_s))

    async def open_stream(self, *, user_id: str, kind: StreamKind) -> StreamSlot:
        """Hold one of the user's stream slots; `RateLimited` if they all are held."""
        cap = self.config.max_streams
        held = cap > 0 and self._store_usable()
        slot = StreamSlot(self, kind=kind, key=f"streams:{user_id}", slot=uuid.uuid4().hex, held=held)
        if slot.held:
            try:
                admitted = await self.store.acquire(slot.key, slot.slot, cap=cap, ttl_s=self.config.slot_ttl_s)
            except Exception:  # boundary: as in check_rate
                self._store_failed("stream limit")
                admitted, slot.held = True, False
            if not admitted:
                self._refused("streams")
                raise RateLimited("streams", cap, STREAM_RETRY_AFTER_S)
            self._held.add(slot)
            self._start_renewing()
        self.open_streams[kind] += 1
        if self._metrics is not None:
            self._metrics.stream_opened(kind)
        return slot

    def _refused(self, limit: LimitKind) -> None:
        if self._metrics is not None:
            self._metrics.limited(limit)

    def _release(self, slot: StreamSlot) -> None:
        self.open_streams[slot.kind] -= 1
        if self._metrics is not None:
            self._metrics.stream_closed(slot.kind)
        if not slot.held:
            return
        self._held.discard(slot)
        task = asyncio.get_running_loop().create_task(self._give_back(slot.key, slot.slot))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _give_back(self, key: str, slot: str) -> None:
        try:
            await self.store.release(key, slot)
        except Exception:  # boundary: the slot expires on its own after its TTL
            log.warning("could not release a stream slot; it expires on its own", exc_info=True)

    def _start_renewing(self) -> None:
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.get_running_loop().create_task(self._renew())

    async def _renew(self) -> None:
        """Renew every slot held here, every third of the TTL, while any is held."""
        interval = self.config.slot_ttl_s / 3
        while True:
            await asyncio.sleep(interval)
            held = [(slot.key, slot.slot) for slot in list(self._held) if not slot.released]
            if not held:
                return
            try:
                await self.store.renew(held, ttl_s=self.config.slot_ttl_s)
            except Exception:  # boundary: retried at the next beat; a slot lapses only after a whole TTL
                log.warning("could not renew %d stream slots", len(held), exc_info=True)

    async def settled(self) -> None:
        """Wait until every release handed to the background has reached the store."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    async def close(self) -> None:
        """Stop renewing, finish pending releases, close the store's connections."""
        if self._renewer is not None:
            self._renewer.cancel()
            await asyncio.gather(self._renewer, return_exceptions=True)
        await self.settled()
        await self.store.close()
