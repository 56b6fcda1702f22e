"""Stop sequences applied by the gateway, as Anthropic's API applies them (pure state machine).

OpenAI-compatible servers stop at a `stop` string but never say which one matched, nor whether one
did (`finish_reason: "stop"` also means the model simply finished). So for these upstreams the
gateway does not send `stop_sequences` upstream: it watches the streamed text itself. The text
before the first match is passed on (a possible beginning of a sequence is held back until it is
decided), the sequence itself is not, and the stream ends there with `stop_reason:
"stop_sequence"` and `stop_sequence` set to the sequence that matched — the upstream call is then
closed, which stops generation. Output tokens of a cut stream are counted (the upstream's own usage
would have come at the end).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from almanac.llm.tokens import estimate_tokens

Event = dict[str, Any]


class StopSequences:
    """`feed(event)` returns the events to pass on; `stopped` once a sequence matched (then the
    events returned already end the message)."""

    def __init__(self, sequences: Sequence[str]) -> None:
        self.sequences = [s for s in dict.fromkeys(sequences) if s]
        self.stopped = False
        self._held = ""  # text that may be the beginning of a sequence
        self._index: int | None = None  # the text block being watched
        self._input_tokens = 0
        self._output_text: list[str] = []

    def feed(self, event: Event) -> list[Event]:
        if self.stopped:
            return []
        kind = event["type"]
        if kind == "message_start":
            self._input_tokens = int((event["message"].get("usage") or {}).get("input_tokens") or 0)
        if kind == "content_block_start" and event["content_block"].get("type") == "text":
            self._index, self._held = event["index"], ""
            return [event]
        if kind == "content_block_delta" and event["index"] == self._index and event["delta"]["type"] == "text_delta":
            return self._text(event["index"], str(event["delta"]["text"]))
        if kind == "content_block_stop" and event["index"] == self._index:
            flushed = self._delta(event["index"], self._held) if self._held else []
            self._index, self._held = None, ""
            return [*flushed, event]
        return [event]

    def _text(self, index: int, text: str) -> list[Event]:
        pending = self._held + text
        found = [(pending.find(s), s) for s in self.sequences if s in pending]
        if found:
            position, sequence = min(found)
            return self._stop(index, pending[:position], sequence)
        keep = max((n for s in self.sequences for n in range(1, len(s)) if pending.endswith(s[:n])), default=0)
        ready, self._held = (pending[:-keep], pending[-keep:]) if keep else (pending, "")
        return self._delta(index, ready) if ready else []

    def _delta(self, index: int, text: str) -> list[Event]:
        self._output_text.append(text)
        return [{"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}]

    def _stop(self, index: int, before: str, sequence: str) -> list[Event]:
        self.stopped = True
        events = self._delta(index, before) if before else []
        usage = {"input_tokens": self._input_tokens, "output_tokens": estimate_tokens("".join(self._output_text))}
        return [
            *events,
            {"type": "content_block_stop", "index": index},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "stop_sequence", "stop_sequence": sequence},
                "usage": usage,
            },
            {"type": "message_stop"},
        ]


async def with_stop_sequences(
    batches: AsyncIterator[list[Event]], sequences: Sequence[str], *, on_cut: Callable[[], None] | None = None
) -> AsyncIterator[list[Event]]:
    """`batches` with `sequences` applied; the source is closed as soon as one matched (and
    `on_cut` called: the usage reported is then partly counted)."""
    stops = StopSequences(sequences)
    if not stops.sequences:
        async for batch in batches:
            yield batch
        return
    try:
        async for batch in batches:
            out = [passed for event in batch for passed in stops.feed(event)]
            if out:
                yield out
            if stops.stopped:
                if on_cut is not None:
                    on_cut()
                return
    finally:
        close = getattr(batches, "aclose", None)
        if close is not None:
            await close()
