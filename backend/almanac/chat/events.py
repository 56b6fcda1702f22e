"""The one event vocabulary from the turn loop to the browser.

Every event has a `type`; over SSE, the `event:` field equals it and `data:` is the JSON of
`payload(event)`. `ChatOutcome` accumulates a sequence of events into the end state (pure).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class MessageStart:
    type: ClassVar[str] = "message_start"
    conversation_id: str
    query_id: str
    model: str
    provider: str


@dataclass(frozen=True)
class TextDeltaEvent:
    type: ClassVar[str] = "text_delta"
    text: str


@dataclass(frozen=True)
class ToolCallEvent:
    type: ClassVar[str] = "tool_call"
    id: str
    name: str
    input: Mapping[str, Any]
    item_id: str
    turn: int


@dataclass(frozen=True)
class ToolResultEvent:
    type: ClassVar[str] = "tool_result"
    id: str
    name: str
    item_id: str
    summary_id: str
    is_error: bool
    status: str
    summary: str | None
    duration_ms: int
    credits: int
    citations: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class ToolProgressEvent:
    """A running tool says what it is doing (e.g. waiting for the documentation index to build)."""

    type: ClassVar[str] = "tool_progress"
    id: str
    item_id: str
    message: str


@dataclass(frozen=True)
class PlanEvent:
    """Boost: the planner's view for loop `loop` — ANALYSIS and GUIDANCE handed to the executor."""

    type: ClassVar[str] = "plan"
    loop: int
    analysis: str
    guidance: str
    model: str


@dataclass(frozen=True)
class EscalationEvent:
    """Collaboration: the primary model was judged stuck and a helper model was asked."""

    type: ClassVar[str] = "escalation"
    reason: str
    from_model: str
    to_model: str
    attempt: int


@dataclass(frozen=True)
class UsageEvent:
    """One model call's tokens (`estimated`: the server reported none; they were counted here)."""

    type: ClassVar[str] = "usage"
    turn: int
    input_tokens: int
    output_tokens: int
    estimated: bool = False


@dataclass(frozen=True)
class MessageEnd:
    type: ClassVar[str] = "message_end"
    conversation_id: str
    query_id: str
    message_id: str
    summary_id: str
    summary: str | None  # None while the answer's summary is still being written (a `summary` event follows)
    response: str
    tools_used: list[str]
    credits_used: int
    credits_remaining: int
    turns: int
    stop_reason: str
    summaries: dict[str, str] = field(default_factory=dict)  # summary ID → text, those ready at the end
    credit_limit: int = 0  # the per-query ceiling (MAX_QUERY_CREDITS)
    credit_limit_reached: bool = False  # some tool call was not run because of it


@dataclass(frozen=True)
class SummaryEvent:
    """A summary that finished after `message_end` (it is stored as well)."""

    type: ClassVar[str] = "summary"
    item_id: str
    summary_id: str
    summary: str
    status: str  # "done", or "failed" (the item is kept verbatim, bounded)


@dataclass(frozen=True)
class ErrorEvent:
    type: ClassVar[str] = "error"
    code: str
    message: str
    refunded: bool = False


ChatEvent = (
    MessageStart
    | TextDeltaEvent
    | ToolCallEvent
    | ToolProgressEvent
    | ToolResultEvent
    | PlanEvent
    | EscalationEvent
    | UsageEvent
    | MessageEnd
    | SummaryEvent
    | ErrorEvent
)


def payload(event: ChatEvent) -> dict[str, Any]:
    """The JSON object of an event, `type` first."""
    return {"type": event.type, **dataclasses.asdict(event)}


@dataclass
class ChatOutcome:
    """The end state of a chat, folded from its events."""

    text: str = ""
    end: MessageEnd | None = None
    error: ErrorEvent | None = None
    tool_results: list[ToolResultEvent] = field(default_factory=list)
    plans: list[PlanEvent] = field(default_factory=list)
    late_summaries: dict[str, str] = field(default_factory=dict)  # summary ID → text, after message_end

    def add(self, event: ChatEvent) -> None:
        if isinstance(event, TextDeltaEvent):
            self.text += event.text
        elif isinstance(event, ToolResultEvent):
            self.tool_results.append(event)
        elif isinstance(event, PlanEvent):
            self.plans.append(event)
        elif isinstance(event, MessageEnd):
            self.end = event
        elif isinstance(event, SummaryEvent):
            self.late_summaries[event.summary_id] = event.summary
        elif isinstance(event, ErrorEvent):
            self.error = event

    @classmethod
    def of(cls, events: Iterable[ChatEvent]) -> ChatOutcome:
        outcome = cls()
        for event in events:
            outcome.add(event)
        return outcome
