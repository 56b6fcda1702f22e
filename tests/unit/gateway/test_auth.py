"""API keys on the gateway: both header styles, and the short-lived lookup cache."""

from datetime import UTC, datetime

import pytest

from almanac.auth.service import Identity
from almanac.gateway.auth import KeyCache, api_key_from
from almanac.gateway.errors import GatewayError
from almanac.storage.records import UserRecord

USER = Identity(UserRecord("u1", "a@b.c", "free", datetime.now(UTC)), "k1")


@pytest.mark.parametrize(
    ("headers", "key"),
    [
        ({"x-api-key": "alm_a"}, "alm_a"),
        ({"authorization": "Bearer alm_b"}, "alm_b"),
        ({"authorization": "bearer  alm_c "}, "alm_c"),
        ({"x-api-key": "alm_d", "authorization": "Bearer alm_e"}, "alm_d"),
    ],
)
def test_keys_come_from_either_header(headers: dict[str, str], key: str) -> None:
    assert api_key_from(headers) == key


@pytest.mark.parametrize("headers", [{}, {"authorization": "Basic abc"}, {"x-api-key": " "}])
def test_no_key_is_an_authentication_error(headers: dict[str, str]) -> None:
    with pytest.raises(GatewayError) as error:
        api_key_from(headers)
    assert error.value.status == 401 and error.value.error_type == "authentication_error"


async def test_lookups_are_cached_for_their_ttl_and_misses_briefly() -> None:
    now = [0.0]
    calls: list[str] = []

    async def identify(key: str) -> Identity | None:
        calls.append(key)
        return USER if key == "good" else None

    cache = KeyCache(identify, ttl_s=5, miss_ttl_s=1, clock=lambda: now[0])
    assert await cache.identity("good") == USER
    assert await cache.identity("good") == USER
    for _ in range(2):
        with pytest.raises(GatewayError):
            await cache.identity("bad")
    assert calls == ["good", "bad"]
    now[0] = 2.0
    with pytest.raises(GatewayError):
        await cache.identity("bad")
    await cache.identity("good")
    assert calls == ["good", "bad", "bad"]
    now[0] = 6.0
    await cache.identity("good")
    assert calls[-1] == "good" and len(calls) == 4


async def test_a_key_revoked_elsewhere_is_refused_once_its_entry_expires() -> None:
    """Another process (a sibling worker, `almanac keys revoke`) cannot reach this cache: the key
    keeps working here for at most the TTL, then the lookup sees the revocation."""
    now = [0.0]
    revoked: set[str] = set()

    async def identify(key: str) -> Identity | None:
        return None if key in revoked else USER

    cache = KeyCache(identify, ttl_s=5, clock=lambda: now[0])
    assert await cache.identity("alm_k") == USER
    revoked.add("alm_k")
    now[0] = 4.9
    assert await cache.identity("alm_k") == USER  # still within the TTL
    now[0] = 5.1
    with pytest.raises(GatewayError) as refused:
        await cache.identity("alm_k")
    assert refused.value.status == 401


async def test_the_cache_is_bounded() -> None:
    async def identify(key: str) -> Identity | None:
        return USER

    cache = KeyCache(identify, max_entries=3)
    for n in range(10):
        await cache.identity(f"k{n}")
    assert len(cache._entries) == 3


async def test_concurrent_requests_with_one_key_share_one_lookup() -> None:
    import asyncio

    release = asyncio.Event()
    calls: list[str] = []

    async def identify(key: str) -> Identity | None:
        calls.append(key)
        await release.wait()
        return USER

    cache = KeyCache(identify)
    waiting = [asyncio.create_task(cache.identity("good")) for _ in range(50)]
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*waiting) == [USER] * 50
    assert calls == ["good"]
