"""Chat events as Server-Sent Events: `event:` is the event's type, `data:` its JSON, and
heartbeat comments keep idle connections open."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from sse_starlette import EventSourceResponse, ServerSentEvent

from almanac.chat.events import ChatEvent, payload


def sse_response(events: AsyncIterator[ChatEvent], *, heartbeat_s: float) -> EventSourceResponse:
    """Stream `events`; leaving early (client disconnect) closes `events`, which cancels the run."""

    async def frames() -> AsyncIterator[ServerSentEvent]:
        async for event in events:
            yield ServerSentEvent(data=json.dumps(payload(event), ensure_ascii=False), event=event.type)

    return EventSourceResponse(
        frames(),
        ping=heartbeat_s,
        ping_message_factory=lambda: ServerSentEvent(comment="heartbeat"),
    )
