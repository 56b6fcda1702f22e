"""A fake Anthropic Messages API that speaks the real wire format, streaming included.

Script it with `FakeAnthropic.enqueue(...)`: each step is a `Turn` (text and/or tool calls) or an
`Failure` (an HTTP error with headers, or an `error` event after some streamed events). Every
request is recorded (`requests`) with its headers and JSON body.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.validation import anthropic_problem


@dataclass
class Turn:
    text: str = ""
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (id, name, input)
    input_tokens: int = 25
    output_tokens: int = 12
    chunk_delay_s: float = 0.0
    raw_tool_json: str | None = None  # send this instead of the JSON of the first tool call's input

    @property
    def stop_reason(self) -> str:
        return "tool_use" if self.tool_calls else "end_turn"


@dataclass
class Failure:
    status: int = 500
    error_type: str = "api_error"
    message: str = "Internal server error"
    headers: dict[str, str] = field(default_factory=dict)
    after_events: int | None = None  # stream this many events, then an `error` event


class FakeAnthropic:
    def __init__(self) -> None:
        self.steps: deque[Turn | Failure] = deque()
        self.requests: list[dict[str, Any]] = []
        # Answers chosen by looking at the request; consulted before the queue (None: use the queue).
        self.route: Callable[[dict[str, Any]], Turn | None] = lambda body: None
        self.validate = True  # refuse what the real API refuses (tests/fakes/validation.py)
        self.invalid: list[str] = []  # why each refused request was refused
        self.app = Starlette(routes=[Route("/v1/messages", self._messages, methods=["POST"])])

    def enqueue(self, *steps: Turn | Failure) -> None:
        self.steps.extend(steps)

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append({"headers": dict(request.headers), "body": body, "at": time.monotonic()})
        problem = anthropic_problem(body) if self.validate else None
        if problem is not None:
            self.invalid.append(problem)
            error = {"type": "invalid_request_error", "message": problem}
            return JSONResponse({"type": "error", "error": error, "request_id": "req_fake"}, status_code=400)
        routed = self.route(body)
        step = routed if routed is not None else (self.steps.popleft() if self.steps else Turn(text="ok"))
        if isinstance(step, Failure) and step.after_events is None:
            return JSONResponse(
                {
                    "type": "error",
                    "error": {"type": step.error_type, "message": step.message},
                    "request_id": "req_fake",
                },
                status_code=step.status,
                headers=step.headers,
            )
        turn = step if isinstance(step, Turn) else Turn(text="partial answer that will break")
        events = list(_events(turn, body.get("model", "claude")))
        if not body.get("stream"):
            return JSONResponse(_message(turn, body.get("model", "claude")))
        failure = step if isinstance(step, Failure) else None
        return StreamingResponse(_sse(events, turn.chunk_delay_s, failure), media_type="text/event-stream")


def _message(turn: Turn, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
    content += [{"type": "tool_use", "id": i, "name": n, "input": inp} for i, n, inp in turn.tool_calls]
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": turn.stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens},
    }


def _events(turn: Turn, model: str) -> list[dict[str, Any]]:
    message = _message(turn, model)
    message.update(content=[], stop_reason=None, usage={"input_tokens": turn.input_tokens, "output_tokens": 1})
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}, {"type": "ping"}]
    index = 0
    if turn.text:
        events.append({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
        words = turn.text.split(" ")
        for n, word in enumerate(words):
            piece = word if n == len(words) - 1 else word + " "
            events.append(
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
            )
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    for position, (call_id, name, arguments) in enumerate(turn.tool_calls):
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            }
        )
        raw = turn.raw_tool_json if (position == 0 and turn.raw_tool_json is not None) else json.dumps(arguments)
        third = max(1, len(raw) // 3)
        for start in range(0, len(raw), third):
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": raw[start : start + third]},
                }
            )
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": turn.output_tokens},
        }
    )
    events.append({"type": "message_stop"})
    return events


async def _sse(events: list[dict[str, Any]], delay: float, failure: Failure | None) -> AsyncIterator[bytes]:
    limit = failure.after_events if failure is not None and failure.after_events is not None else len(events)
    for event in events[:limit]:
        yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
        if delay:
            await asyncio.sleep(delay)
    if failure is not None:
        error = {"type": "error", "error": {"type": failure.error_type, "message": failure.message}}
        yield f"event: error\ndata: {json.dumps(error)}\n\n".encode()
