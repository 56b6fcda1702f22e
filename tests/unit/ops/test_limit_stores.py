"""The limit stores: the same sliding-window and slot semantics in this process (a fake clock) and in
the Redis that runs here (its own clock, so the Redis cases wait in real time)."""

import asyncio
from collections.abc import AsyncIterator

import pytest
from tests.ops_support import redis_url, unique_prefix

from almanac.ops.limit_stores import LimitStore, MemoryStore, RedisStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_window_admits_exactly_the_limit_in_any_window() -> None:
    clock = Clock()
    store = MemoryStore(clock)
    admitted = []
    for second in range(0, 120):  # one request a second against 10 per 30 s
        clock.now = 1000.0 + second
        admitted.append(await store.hit("u", str(second), limit=10, window_s=30) == 0.0)
    times = [second for second, ok in enumerate(admitted) if ok]
    # at most 10 admitted in any 30 s window, and the window slides (not fixed buckets)
    assert all(sum(1 for t in times if start <= t < start + 30) <= 10 for start in range(0, 120))
    assert times[:10] == list(range(10)) and times[10] == 30


async def test_a_refusal_says_when_the_deciding_request_leaves_the_window() -> None:
    clock = Clock()
    store = MemoryStore(clock)
    for i in range(3):
        clock.now = 1000.0 + i * 10
        assert await store.hit("u", str(i), limit=3, window_s=60) == 0.0
    clock.now = 1025.0
    assert await store.hit("u", "x", limit=3, window_s=60) == pytest.approx(35.0)
    # after the limit is lowered to 1, all but none may stay: the newest request decides
    assert await store.hit("u", "y", limit=1, window_s=60) == pytest.approx(55.0)
    clock.now = 1060.5  # the first request has left the window
    assert await store.hit("u", "z", limit=3, window_s=60) == 0.0


async def test_users_are_counted_apart() -> None:
    store = MemoryStore(Clock())
    assert await store.hit("a", "1", limit=1, window_s=60) == 0.0
    assert await store.hit("a", "2", limit=1, window_s=60) > 0
    assert await store.hit("b", "1", limit=1, window_s=60) == 0.0


async def test_slots_are_capped_released_and_expire_unless_renewed() -> None:
    clock = Clock()
    store = MemoryStore(clock)
    assert await store.acquire("u", "s1", cap=2, ttl_s=10)
    assert await store.acquire("u", "s2", cap=2, ttl_s=10)
    assert not await store.acquire("u", "s3", cap=2, ttl_s=10)
    await store.release("u", "s1")
    assert await store.acquire("u", "s3", cap=2, ttl_s=10)
    clock.now += 8
    await store.renew([("u", "s3")], ttl_s=10)  # s2 is not renewed: its holder died
    clock.now += 3
    assert await store.acquire("u", "s4", cap=2, ttl_s=10)  # s2 expired
    assert not await store.acquire("u", "s5", cap=2, ttl_s=10)  # s3 (renewed) and s4 hold


async def test_renewing_a_released_slot_does_not_bring_it_back() -> None:
    store = MemoryStore(Clock())
    assert await store.acquire("u", "s1", cap=1, ttl_s=10)
    await store.release("u", "s1")
    await store.renew([("u", "s1")], ttl_s=10)
    assert await store.acquire("u", "s2", cap=1, ttl_s=10)


@pytest.fixture
async def redis_store() -> AsyncIterator[RedisStore]:
    store = RedisStore.from_url(redis_url(), prefix=unique_prefix())
    yield store
    await store.close()


async def test_redis_admits_exactly_the_limit_then_refuses_until_the_window_slides(redis_store: LimitStore) -> None:
    results = await asyncio.gather(*(redis_store.hit("u", f"m{i}", limit=5, window_s=1.5) for i in range(12)))
    assert sum(1 for wait in results if wait == 0.0) == 5  # atomic under concurrency: never more
    waits = [wait for wait in results if wait > 0]
    assert all(0 < wait <= 1.5 for wait in waits)
    await asyncio.sleep(max(waits) + 0.05)
    assert await redis_store.hit("u", "later", limit=5, window_s=1.5) == 0.0


async def test_redis_slots_are_shared_capped_and_expire_without_renewal(redis_store: RedisStore) -> None:
    other = RedisStore.from_url(redis_url(), prefix=redis_store._prefix)  # another process's connection
    try:
        assert await redis_store.acquire("u", "a", cap=2, ttl_s=1.0)
        assert await other.acquire("u", "b", cap=2, ttl_s=1.0)
        assert not await redis_store.acquire("u", "c", cap=2, ttl_s=1.0)
        await other.release("u", "b")
        assert await redis_store.acquire("u", "c", cap=2, ttl_s=1.0)
        for _ in range(3):  # "a" is kept alive; "c" is left to expire, as a dead process's would be
            await asyncio.sleep(0.4)
            await redis_store.renew([("u", "a")], ttl_s=1.0)
        assert await other.acquire("u", "d", cap=2, ttl_s=1.0)
        assert not await other.acquire("u", "e", cap=2, ttl_s=1.0)
        await redis_store.release("u", "a")
        await redis_store.renew([("u", "a")], ttl_s=1.0)  # released: renewal must not re-create it
        assert await other.acquire("u", "e", cap=2, ttl_s=1.0)
    finally:
        await other.close()


async def test_users_idle_for_a_whole_window_are_forgotten() -> None:
    clock = Clock()
    store = MemoryStore(clock)
    store.SWEEP_EVERY = 10
    for i in range(9):
        await store.hit(f"idle-{i}", "m", limit=5, window_s=60)
    clock.now += 61
    await store.hit("active", "m", limit=5, window_s=60)  # the tenth request sweeps
    assert list(store._windows) == ["active"]
