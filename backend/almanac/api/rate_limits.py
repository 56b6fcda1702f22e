"""Per-user limits on the routes that start work (the chat routes): a dependency the composition
root attaches to those routers (`include_router(…, dependencies=LIMITED)`), so every route of
theirs, present or added later, is limited.

Requests that change state (POST, PUT, PATCH, DELETE) count against the caller's requests per
minute (shared with `POST /v1/messages`, which the gateway limits itself); a request that streams
(`Accept: text/event-stream`, or a path ending in `/stream`) also holds one of the caller's stream
slots until its response has ended. A refusal is 429 with `Retry-After`, decided after the caller
is identified and before the route runs: nothing is started or charged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from fastapi import Depends, Request

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.errors import ApiError
from almanac.api.guards import SAFE_METHODS
from almanac.ops.limits import RateLimited, StreamSlot


def wants_stream(request: Request) -> bool:
    """Whether the request asks for a stream (SSE) answer."""
    return request.url.path.endswith("/stream") or "text/event-stream" in request.headers.get("accept", "")


def rate_limited(exc: RateLimited) -> ApiError:
    """The 429 of a refusal: `limit` (`requests` or `streams`), `allowed`, `retry_after` (seconds)."""
    return ApiError(429, "rate_limited", str(exc), limit=exc.limit, allowed=exc.allowed, retry_after=exc.retry_after_s)


async def limit_requests(request: Request, user: CurrentUser, services: ServicesDep) -> AsyncIterator[None]:
    """Admit the request under the caller's limits (429 otherwise); a stream's slot is held until
    its response has ended."""
    ops = services.ops
    if ops is None or request.method in SAFE_METHODS:
        yield
        return
    slot: StreamSlot | None = None
    try:
        await ops.limiter.check_rate(user_id=user.id, plan=user.plan)
        if wants_stream(request):
            slot = await ops.limiter.open_stream(user_id=user.id, kind="chat")
    except RateLimited as exc:
        raise rate_limited(exc) from None
    try:
        yield
    finally:
        if slot is not None:
            slot.release()


LIMITED: list[Any] = [Depends(limit_requests)]
