"""The limiter: requests per minute by plan, open streams per user, renewal, and what it does when
its store fails."""

import asyncio
import gc
import time
from collections.abc import Sequence

import pytest

from almanac.ops.limit_stores import MemoryStore
from almanac.ops.limits import LimitConfig, Limiter, RateLimited, retry_after_s
from almanac.ops.metrics import Metrics


def limiter(**config: object) -> Limiter:
    return Limiter(LimitConfig(**config), MemoryStore(), metrics=Metrics())  # type: ignore[arg-type]


async def test_each_plan_has_its_own_requests_per_minute() -> None:
    limits = limiter(per_minute={"free": 2, "pro": 3})
    for _ in range(2):
        await limits.check_rate(user_id="f", plan="free")
    with pytest.raises(RateLimited) as refused:
        await limits.check_rate(user_id="f", plan="free")
    assert (refused.value.limit, refused.value.allowed) == ("requests", 2)
    assert 1 <= refused.value.retry_after_s <= 60
    for _ in range(3):
        await limits.check_rate(user_id="p", plan="pro")
    with pytest.raises(RateLimited):
        await limits.check_rate(user_id="p", plan="pro")


@pytest.mark.parametrize(("wait_s", "told"), [(35.4, 36), (35.0, 35), (0.001, 1), (59.999, 60), (0.0, 1)])
def test_retry_after_is_rounded_up_to_whole_seconds(wait_s: float, told: int) -> None:
    assert retry_after_s(wait_s) == told


async def test_a_refusal_says_when_the_window_really_has_room_rounded_up() -> None:
    """One request a minute; the second comes 24.6 s later: the first leaves the window in 35.4 s,
    so the client is told 36 (35 would bring it back too early, into another refusal)."""
    now = [1000.0]
    limits = Limiter(LimitConfig(per_minute={"free": 1}), MemoryStore(clock=lambda: now[0]))
    await limits.check_rate(user_id="u", plan="free")
    now[0] += 24.6
    with pytest.raises(RateLimited) as refused:
        await limits.check_rate(user_id="u", plan="free")
    assert refused.value.retry_after_s == 36 and "retry in 36 s" in str(refused.value)
    now[0] += 35.0
    with pytest.raises(RateLimited):
        await limits.check_rate(user_id="u", plan="free")
    now[0] += 1.0
    await limits.check_rate(user_id="u", plan="free")


async def test_an_unknown_plan_gets_the_default_plans_limit_and_zero_means_none() -> None:
    limits = limiter(per_minute={"free": 1, "pro": 0})
    await limits.check_rate(user_id="t", plan="team")
    with pytest.raises(RateLimited):
        await limits.check_rate(user_id="t", plan="team")
    for _ in range(50):
        await limits.check_rate(user_id="p", plan="pro")


async def test_streams_are_capped_per_user_and_counted() -> None:
    limits = limiter(max_streams=2)
    first = await limits.open_stream(user_id="u", kind="chat")
    await limits.open_stream(user_id="u", kind="gateway")
    with pytest.raises(RateLimited) as refused:
        await limits.open_stream(user_id="u", kind="chat")
    assert (refused.value.limit, refused.value.allowed) == ("streams", 2)
    await limits.open_stream(user_id="someone-else", kind="chat")
    assert limits.open_streams == {"chat": 2, "gateway": 1}
    first.release()
    first.release()  # idempotent
    await limits.settled()
    await limits.open_stream(user_id="u", kind="chat")
    assert limits.open_streams == {"chat": 2, "gateway": 1}
    await limits.close()


async def test_without_a_cap_streams_are_only_counted() -> None:
    limits = limiter(max_streams=0)
    slots = [await limits.open_stream(user_id="u", kind="chat") for _ in range(20)]
    assert limits.open_streams["chat"] == 20 and not any(slot.held for slot in slots)
    for slot in slots:
        slot.release()
    assert limits.open_streams["chat"] == 0


async def test_held_slots_are_renewed_and_a_dropped_one_expires() -> None:
    limits = limiter(max_streams=1, slot_ttl_s=0.3)
    kept = await limits.open_stream(user_id="u", kind="chat")
    await asyncio.sleep(0.8)  # well past the TTL: only renewal keeps it
    with pytest.raises(RateLimited):
        await limits.open_stream(user_id="u", kind="chat")
    kept.release()
    await limits.settled()
    dropped = await limits.open_stream(user_id="u", kind="chat")
    del dropped  # never released (a bug): once nothing refers to it, it is not renewed
    gc.collect()
    await asyncio.sleep(0.8)
    await limits.open_stream(user_id="u", kind="chat")
    await limits.close()


class BrokenStore(MemoryStore):
    async def hit(self, key: str, member: str, *, limit: int, window_s: float) -> float:
        raise ConnectionError("redis is down")

    async def acquire(self, key: str, slot: str, *, cap: int, ttl_s: float) -> bool:
        raise ConnectionError("redis is down")

    async def renew(self, slots: Sequence[tuple[str, str]], *, ttl_s: float) -> None:
        raise ConnectionError("redis is down")


class CountingBrokenStore(BrokenStore):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def hit(self, key: str, member: str, *, limit: int, window_s: float) -> float:
        self.calls += 1
        return await super().hit(key, member, limit=limit, window_s=window_s)


async def test_a_failing_store_admits_rather_than_failing_requests_and_is_left_alone_a_while(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CountingBrokenStore()
    limits = Limiter(LimitConfig(per_minute={"free": 1}, max_streams=1), store)
    for _ in range(3):
        await limits.check_rate(user_id="u", plan="free")
        slot = await limits.open_stream(user_id="u", kind="chat")
        slot.release()
    assert "limit store failed (rate limit)" in caplog.text
    assert store.calls == 1  # one failure, then the store is not asked (no timeout per request)
    later = time.monotonic() + 6
    monkeypatch.setattr("almanac.ops.limits.time.monotonic", lambda: later)
    await limits.check_rate(user_id="u", plan="free")
    assert store.calls == 2  # asked again after the back-off


async def test_refusals_are_counted_in_the_metrics() -> None:
    metrics = Metrics()
    limits = Limiter(LimitConfig(per_minute={"free": 1}, max_streams=1), MemoryStore(), metrics=metrics)
    await limits.check_rate(user_id="u", plan="free")
    held = await limits.open_stream(user_id="u", kind="gateway")
    for _ in range(2):
        with pytest.raises(RateLimited):
            await limits.check_rate(user_id="u", plan="free")
    with pytest.raises(RateLimited):
        await limits.open_stream(user_id="u", kind="chat")
    text = metrics.exposition().decode()
    assert 'almanac_rate_limited_total{limit="requests"} 2.0' in text
    assert 'almanac_rate_limited_total{limit="streams"} 1.0' in text
    assert 'almanac_active_streams{kind="gateway"} 1.0' in text
    held.release()
    assert 'almanac_active_streams{kind="gateway"} 0.0' in metrics.exposition().decode()
    await limits.close()
