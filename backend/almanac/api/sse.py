"""Chat (and discussion) events as Server-Sent Events: `event:` is the event's type, `data:` its JSON, and
heartbeat comments keep idle connections open."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from sse_starlette import EventSourceResponse, ServerSentEvent

from almanac.chat.events import ChatEvent, payload


def sse_response(
    events: AsyncIterator[ChatEvent] | AsyncIterator[Any],
    *,
    heartbeat_s: float,
    encode: Callable[[Any], dict[str, Any]] = payload,
) -> EventSourceResponse:
    """Stream `events` (chat events, or any events `encode` turns into JSON with a `type`, such as a
    discussion's); leaving early (client disconnect) closes `events`, which cancels the run."""

    async def frames() -> AsyncIterator[ServerSentEvent]:
        async for event in events:
            data = encode(event)
            yield ServerSentEvent(data=json.dumps(data, ensure_ascii=False), event=data["type"])

    return EventSourceResponse(
        frames(),
        ping=heartbeat_s,
        ping_message_factory=lambda: ServerSentEvent(comment="heartbeat"),
    )
