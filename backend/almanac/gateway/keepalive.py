"""Holding a slow stream's response head, then keeping the stream alive (boost mode).

A boosted request spends seconds in the planner (and more when the executor's output is held back)
before it has anything to say. Two wishes pull apart: a request the upstream refuses before any
output should get the HTTP status and error type Anthropic's API would give (429 with
`retry-after`, 400 `prompt is too long`, 529…), which needs the response head held until the
first output; and proxies and clients with idle timeouts want bytes while they wait, which needs
the head sent (pings may only follow a `message_start`).

`held_then_pinged` does both, in turn: for the first `hold_s` seconds nothing is sent, so a refusal
in that time is a proper HTTP error; if no output has come by then, the head and `message_start`
go out and a `ping` follows every `interval_s` seconds, as Anthropic's API sends them — a refusal
after that point can only be an `error` event in the stream. The default hold (GATEWAY_STREAM_HOLD_S,
20 s) covers a typical plan; clients such as Claude Code wait far longer for a first byte (minutes),
while common proxy idle timeouts are 60 s.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

Event = dict[str, Any]
PING: list[Event] = []  # the marker yielded while waiting (an empty batch, compared by identity)


async def held_then_pinged(
    batches: AsyncIterator[list[Event]],
    *,
    head: Callable[[], list[Event]],
    hold_s: float,
    interval_s: float,
) -> AsyncIterator[list[Event]]:
    """`batches`; if the first takes longer than `hold_s`, `head()` (the `message_start`) first,
    then `PING` whenever the next batch takes longer than `interval_s`."""
    pending: asyncio.Future[list[Event]] | None = None
    waited_for_first = False
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(batches))
            if not waited_for_first:
                waited_for_first = True
                done, _ = await asyncio.wait({pending}, timeout=hold_s)
                if not done:
                    yield head()
                    continue
            else:
                done, _ = await asyncio.wait({pending}, timeout=interval_s)
                if not done:
                    yield PING
                    continue
            finished, pending = pending, None
            try:
                batch = finished.result()
            except StopAsyncIteration:
                return
            yield batch
    finally:
        if pending is not None:
            pending.cancel()
