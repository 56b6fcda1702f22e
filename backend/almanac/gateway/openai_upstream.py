"""An OpenAI-compatible server behind the gateway: requests converted (`openai_wire`), answers
converted back (`openai_stream`), and refusals read (`refusals`) so that the request is adapted
and sent again instead of failing:

- system messages after the first refused → folded into the user turn (OPENAI_SYSTEM_MESSAGES
  `auto`; `fold` always folds, `keep` never does), remembered for the model;
- a parameter refused (`reasoning_effort`, `response_format`, `parallel_tool_calls`) → left out,
  remembered for the model;
- `max_tokens` above the model's own limit → that limit, remembered for the model;
- prompt + `max_tokens` over the context window while the prompt fits → the room left;
- the prompt itself over the window → Anthropic's `prompt is too long: N tokens > M maximum`.

At most `MAX_ADAPTATIONS` retries per request; what a model was seen to refuse is kept per process
(a new process learns it again, at the cost of one refused call).

`max_tokens`: the client's value, capped by `MessagesRequest.output_cap` (the tier's setting or the
model's known limit) and by what the model was seen to allow. Stop sequences are applied by the
gateway (`stops`), which is the only way to know which one matched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from almanac.gateway.accumulate import accumulate
from almanac.gateway.errors import UpstreamError
from almanac.gateway.estimate import body_tokens, content_pieces, text_tokens
from almanac.gateway.http import HttpPool, sse_blocks, status_error, stream_error
from almanac.gateway.openai_stream import OpenAIStreamConverter
from almanac.gateway.openai_system import has_mid_system
from almanac.gateway.openai_wire import WireOptions, anthropic_message, openai_request
from almanac.gateway.refusals import (
    context_refusal,
    output_limit,
    prompt_too_long,
    refuses_mid_system,
    refuses_parameter,
)
from almanac.gateway.stops import with_stop_sequences
from almanac.gateway.wire import MessagesRequest
from almanac.llm.tokens import context_window

Event = dict[str, Any]
SystemMode = Literal["keep", "fold", "auto"]
MAX_ADAPTATIONS = 3
OPTIONAL_PARAMETERS = ("reasoning_effort", "response_format", "parallel_tool_calls")


def estimate_tokens(body: dict[str, Any]) -> int:
    """About how many tokens a request's system, messages and tools take (≈ 3.5 bytes of JSON
    per token); used where the upstream cannot count."""
    size = sum(len(orjson.dumps(body.get(key))) for key in ("system", "messages", "tools") if body.get(key))
    return max(1, int(size / 3.5))


@dataclass
class Quirks:
    """What one upstream model was seen to refuse."""

    fold_system: bool = False
    omit: set[str] = field(default_factory=set)
    max_output: int | None = None


class OpenAIUpstream:
    kind = "openai"

    def __init__(
        self,
        http: HttpPool,
        *,
        base_url: str,
        api_key: str | None,
        timeout_s: float,
        system_messages: SystemMode = "auto",
    ) -> None:
        self._http = http
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout_s
        self._system_mode = system_messages
        self.quirks: dict[str, Quirks] = {}

    def _quirks(self, model: str) -> Quirks:
        if model not in self.quirks:
            self.quirks[model] = Quirks(fold_system=self._system_mode == "fold")
        return self.quirks[model]

    async def create(self, request: MessagesRequest, model: str) -> dict[str, Any]:
        if request.body.get("stop_sequences"):  # applied here, on the stream
            return accumulate([event async for batch in self.stream(request, model) for event in batch])
        async with self._accepted(request, model, stream=False) as response:
            completion = orjson.loads(await response.read())
        message = anthropic_message(completion, request.model, thinking=request.thinking, tools=request.tools_allowed)
        if not (isinstance(completion, dict) and completion.get("usage")):  # a server that reports none
            message["usage"] = {
                "input_tokens": body_tokens(request.body),
                "output_tokens": text_tokens(content_pieces(message["content"])),
            }
            request.usage.estimated = True
        return message

    def stream(self, request: MessagesRequest, model: str) -> AsyncIterator[list[Event]]:
        return with_stop_sequences(
            self._stream(request, model), request.body.get("stop_sequences") or (), on_cut=request.usage.note_estimate
        )

    async def _stream(self, request: MessagesRequest, model: str) -> AsyncIterator[list[Event]]:
        async with self._accepted(request, model, stream=True) as response:
            converter = OpenAIStreamConverter(
                request.model,
                input_tokens=estimate_tokens(request.body),
                thinking=request.thinking,
                tools=request.tools_allowed,
            )
            events = converter.start()
            done = False
            async for block in sse_blocks(response):
                for data in block:
                    if data == b"[DONE]":
                        done = True
                        break
                    chunk = orjson.loads(data)
                    if isinstance(chunk, dict) and chunk.get("error"):
                        raise stream_error({"error": {"type": "api_error", "message": str(chunk["error"])}})
                    events += converter.feed(chunk)
                if events:
                    yield events
                    events = []
                if done:
                    break
            if not converter.reported:  # llama-cpp-python ignores stream_options.include_usage
                converter.estimate(
                    input_tokens=body_tokens(request.body), output_tokens=text_tokens(converter.produced)
                )
                request.usage.estimated = True
            yield events + converter.finish()

    def _body(self, request: MessagesRequest, model: str, *, stream: bool, room: int | None) -> dict[str, Any]:
        quirks = self._quirks(model)
        caps = [c for c in (request.max_tokens, request.output_cap, quirks.max_output, room) if c is not None]
        options = WireOptions(
            max_tokens=max(1, min(caps)),
            fold_system=quirks.fold_system,
            omit=frozenset(quirks.omit),
            send_stop=False,
        )
        return openai_request(request.body, model, stream=stream, options=options)

    @asynccontextmanager
    async def _accepted(self, request: MessagesRequest, model: str, *, stream: bool) -> AsyncIterator[Any]:
        """The upstream's 200 response, after adapting the request to what it refused."""
        room: int | None = None
        for attempt in range(MAX_ADAPTATIONS + 1):
            body = self._body(request, model, stream=stream, room=room)
            async with self._http.post(self._url, body, self._headers, timeout_s=self._timeout) as response:
                if response.status == 200:
                    yield response
                    return
                error = await status_error(response)
            adapted = self._adapt(error, body, model) if attempt < MAX_ADAPTATIONS else None
            if adapted is None:
                raise error
            room = adapted if adapted > 0 else room

    def _adapt(self, error: UpstreamError, body: dict[str, Any], model: str) -> int | None:
        """How to send the request again after `error`: 0 with the model's quirks updated, a
        positive number for a smaller max_tokens, None to give up (raising what the caller
        should see instead, for a prompt that does not fit)."""
        quirks, detail = self._quirks(model), error.detail
        if 400 <= error.upstream_status < 600 and refuses_mid_system(detail):
            if self._system_mode == "auto" and not quirks.fold_system and has_mid_system(body["messages"]):
                quirks.fold_system = True
                return 0
        for name in OPTIONAL_PARAMETERS:
            if name in body and name not in quirks.omit and refuses_parameter(detail, name):
                quirks.omit.add(name)
                return 0
        limit = output_limit(detail)
        if limit is not None and limit < body["max_tokens"]:
            quirks.max_output = limit
            return 0
        refusal = context_refusal(detail, error.fields)
        if refusal is None:
            return None
        room = refusal.room()
        if refusal.prompt_fits and room is not None and 0 < room < body["max_tokens"]:
            return room
        if refusal.prompt_fits:
            return None
        raise prompt_too_long(refusal.prompt or estimate_tokens(body), refusal.limit or context_window(model))

    async def count_tokens(self, body: dict[str, Any], model: str) -> int:
        return estimate_tokens(body)
