"""Who is calling the gateway: an Almanac API key from `x-api-key` or `Authorization: Bearer`,
looked up through `AccountService.identify` and remembered for a few seconds.

The cache keeps the database off the request path (Claude Code sends several requests a second);
the price is that a revoked key keeps working on the gateway for up to `ttl_s`. Unknown keys are
remembered too (briefly), and the cache is bounded.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping

from almanac.auth.service import Identity
from almanac.gateway.errors import GatewayError

Identify = Callable[[str], Awaitable[Identity | None]]


def api_key_from(headers: Mapping[str, str]) -> str:
    """The key a request carries: `x-api-key`, else `Authorization: Bearer …`; 401 if neither."""
    key = headers.get("x-api-key", "").strip()
    if key:
        return key
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    raise GatewayError(401, "missing API key: send an Almanac API key as x-api-key or Authorization: Bearer")


class KeyCache:
    def __init__(
        self,
        identify: Identify,
        *,
        ttl_s: float = 5.0,
        miss_ttl_s: float = 1.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._identify = identify
        self._ttl = ttl_s
        self._miss_ttl = miss_ttl_s
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, Identity | None]] = OrderedDict()
        self._lookups: dict[str, asyncio.Future[Identity | None]] = {}

    async def identity(self, key: str) -> Identity:
        """The key's owner; 401 for an unknown or revoked key."""
        now = self._clock()
        cached = self._entries.get(key)
        if cached is not None and cached[0] > now:
            found = cached[1]
        else:
            found = await self._lookup(key)
        if found is None:
            raise GatewayError(401, "invalid or revoked API key (the gateway takes Almanac API keys)")
        return found

    async def _lookup(self, key: str) -> Identity | None:
        """One database lookup per key at a time: concurrent requests with the same key share it
        (when a popular key's entry expires, 50 requests in flight cause one query, not 50)."""
        pending = self._lookups.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Identity | None] = asyncio.get_running_loop().create_future()
        self._lookups[key] = future
        try:
            found = await self._identify(key)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody shared it
            raise
        finally:
            self._lookups.pop(key, None)
        future.set_result(found)
        self._entries[key] = (self._clock() + (self._ttl if found else self._miss_ttl), found)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return found

    def forget_user(self, user_id: str) -> None:
        """Drop every cached key of one user (disabled, or a key revoked): in this process their
        keys are checked again at the next request; other processes' entries expire on their own."""
        for key in [k for k, (_, found) in self._entries.items() if found is not None and found.user.id == user_id]:
            self._entries.pop(key, None)

    def forget(self, key: str | None = None) -> None:
        """Drop one cached key (or all)."""
        if key is None:
            self._entries.clear()
        else:
            self._entries.pop(key, None)
