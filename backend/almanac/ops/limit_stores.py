"""Where the limits keep their counts: `MemoryStore` (this process only) or `RedisStore` (shared by
every process that names the same Redis).

Both keep the same two structures, with the same semantics:

* a **sliding-window log** per user: the times of the requests admitted in the last `window_s`.
  A request is admitted while fewer than `limit` are in the window; a refused one is told when the
  oldest (or, after a limit was lowered, the deciding) entry leaves it. Exactly at most `limit`
  requests in any window of `window_s`, unlike a fixed window (up to twice at a boundary).
* a **slot set** per user: one member per open stream, scored by when it expires. A stream is
  admitted while fewer than `cap` unexpired slots exist. The process holding a slot renews it
  every third of its TTL; a process that dies stops renewing, and its slots expire on their own
  after at most `ttl_s` — a crash cannot hold a user's slots forever. (One counter with a TTL on the
  key would not do: every live stream's renewal would keep the dead ones' counts alive too.)

In Redis each operation is one Lua script, atomic on the server, and uses the server's clock
(`TIME`), so processes whose clocks disagree still agree on every window.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import redis.asyncio as aioredis

Refusal = float  # seconds until the request could be admitted; 0.0: admitted


class LimitStore(Protocol):
    async def hit(self, key: str, member: str, *, limit: int, window_s: float) -> Refusal:
        """Admit one request (recorded as `member`) if fewer than `limit` are in the window."""
        ...

    async def acquire(self, key: str, slot: str, *, cap: int, ttl_s: float) -> bool:
        """Hold `slot` for `ttl_s` if fewer than `cap` unexpired slots are held."""
        ...

    async def renew(self, slots: Sequence[tuple[str, str]], *, ttl_s: float) -> None:
        """Extend these (key, slot) holds by `ttl_s` from now (released ones stay released)."""
        ...

    async def release(self, key: str, slot: str) -> None:
        """Give a slot back."""
        ...

    async def close(self) -> None: ...


class MemoryStore:
    """The counts of this process (REDIS_URL unset). Users idle for a whole window are forgotten
    every `SWEEP_EVERY` requests, so memory follows the active users, not all users ever seen."""

    SWEEP_EVERY = 10_000

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._windows: dict[str, deque[float]] = {}
        self._slots: dict[str, dict[str, float]] = {}
        self._hits = 0

    async def hit(self, key: str, member: str, *, limit: int, window_s: float) -> Refusal:
        now = self._clock()
        self._hits += 1
        if self._hits % self.SWEEP_EVERY == 0:
            self._sweep(now - window_s)
        times = self._windows.setdefault(key, deque())
        while times and times[0] <= now - window_s:
            times.popleft()
        if len(times) < limit:
            times.append(now)
            return 0.0
        deciding = times[len(times) - limit]
        return max(deciding + window_s - now, 0.001)

    def _sweep(self, cutoff: float) -> None:
        for key in [key for key, times in self._windows.items() if not times or times[-1] <= cutoff]:
            del self._windows[key]
        now = self._clock()
        for key in [key for key, slots in self._slots.items() if all(until <= now for until in slots.values())]:
            del self._slots[key]

    async def acquire(self, key: str, slot: str, *, cap: int, ttl_s: float) -> bool:
        now = self._clock()
        slots = self._slots.setdefault(key, {})
        for expired in [held for held, until in slots.items() if until <= now]:
            del slots[expired]
        if len(slots) >= cap:
            return False
        slots[slot] = now + ttl_s
        return True

    async def renew(self, slots: Sequence[tuple[str, str]], *, ttl_s: float) -> None:
        until = self._clock() + ttl_s
        for key, slot in slots:
            held = self._slots.get(key)
            if held is not None and slot in held:
                held[slot] = until

    async def release(self, key: str, slot: str) -> None:
        held = self._slots.get(key)
        if held is not None:
            held.pop(slot, None)
            if not held:
                del self._slots[key]

    async def close(self) -> None:
        return None


_NOW_MS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
# KEYS[1] the window; ARGV limit, window (ms), member. Returns 0 (admitted) or the ms to wait.
_HIT = (
    _NOW_MS
    + """
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local deciding = redis.call('ZRANGE', KEYS[1], count - limit, count - limit, 'WITHSCORES')
return math.max(tonumber(deciding[2]) + window - now, 1)
"""
)
# KEYS[1] the slot set; ARGV cap, ttl (ms), slot. Returns 1 (held) or 0 (refused).
_ACQUIRE = (
    _NOW_MS
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
"""
)
# KEYS[1] the slot set; ARGV ttl (ms), slot. Extends a slot still held (XX: never re-creates one).
_RENEW = (
    _NOW_MS
    + """
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
end
return 1
"""
)


class RedisStore:
    """The counts of every process sharing one Redis (REDIS_URL)."""

    def __init__(self, client: aioredis.Redis, *, prefix: str = "almanac:") -> None:
        self._redis = client
        self._prefix = prefix
        self._hit = client.register_script(_HIT)
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)

    @classmethod
    def from_url(cls, url: str, *, prefix: str = "almanac:", timeout_s: float = 2.0) -> RedisStore:
        """A store on the Redis at `url` (connections are made when first needed)."""
        client = aioredis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
        return cls(client, prefix=prefix)

    async def hit(self, key: str, member: str, *, limit: int, window_s: float) -> Refusal:
        wait_ms: Any = await self._hit(keys=[self._prefix + key], args=[limit, int(window_s * 1000), member])
        return int(wait_ms) / 1000

    async def acquire(self, key: str, slot: str, *, cap: int, ttl_s: float) -> bool:
        held: Any = await self._acquire(keys=[self._prefix + key], args=[cap, int(ttl_s * 1000), slot])
        return bool(int(held))

    async def renew(self, slots: Sequence[tuple[str, str]], *, ttl_s: float) -> None:
        if not slots:
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            for key, slot in slots:
                await self._renew(keys=[self._prefix + key], args=[int(ttl_s * 1000), slot], client=pipe)
            await pipe.execute()

    async def release(self, key: str, slot: str) -> None:
        await self._redis.zrem(self._prefix + key, slot)

    async def ping(self) -> bool:
        """Whether Redis answers."""
        return bool(await self._redis.ping())

    async def close(self) -> None:
        await self._redis.aclose()
