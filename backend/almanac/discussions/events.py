"""A discussion's events: the chat vocabulary, with who is speaking.

- `discussion_start` (new): the discussion's ID, goal, turns and participants.
- per turn: `message_start` (the turn, the speaker's index, name, role and model), then the chat
  events of that speaker's answer — `text_delta`, `tool_call`, `tool_progress`, `tool_result`,
  `escalation`, `usage` — each with `turn` and `speaker` added (where a chat event has its own
  `turn`, the model turn within the answer, it is called `step` here; `usage` also names the `model`
  and its `role`: `participant`, or `helper` for a collaboration helper; models are named as in the
  discussion, by their catalog names, `escalation` too), then `message_end` (the
  message's ID, text, tools used, the turn's credits and the balance left);
- `error` (a model failed, or the credits ran out before a turn: `insufficient_credits`);
- `discussion_end` (new): status, stop reason, turns done, credits used and left.

Over SSE, `event:` equals `type`, as for chats.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from almanac.chat.events import ChatEvent, ErrorEvent, payload


@dataclass(frozen=True)
class DiscussionStart:
    type: ClassVar[str] = "discussion_start"
    discussion_id: str
    goal: str
    turns: int
    participants: list[dict[str, Any]]


@dataclass(frozen=True)
class TurnStart:
    type: ClassVar[str] = "message_start"
    discussion_id: str
    turn: int
    speaker: int
    name: str
    role: str
    model: str
    provider: str


@dataclass(frozen=True)
class InTurn:
    """A chat event of the speaker's answer at `turn`."""

    event: ChatEvent
    turn: int
    speaker: int
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> str:
        return self.event.type


@dataclass(frozen=True)
class TurnEnd:
    type: ClassVar[str] = "message_end"
    discussion_id: str
    turn: int
    speaker: int
    message_id: str
    response: str
    tools_used: list[str]
    credits_used: int
    credits_remaining: int
    stop_reason: str
    escalations: int = 0


@dataclass(frozen=True)
class DiscussionEnd:
    type: ClassVar[str] = "discussion_end"
    discussion_id: str
    status: str  # done | stopped | failed
    stop_reason: str  # completed | credits_exhausted | cancelled | model_error | internal_error
    turns_done: int
    credits_used: int
    credits_remaining: int


DiscussionEvent = DiscussionStart | TurnStart | InTurn | TurnEnd | DiscussionEnd | ErrorEvent


def discussion_payload(event: DiscussionEvent) -> dict[str, Any]:
    """The JSON object of an event, `type` first (see the module docstring)."""
    if isinstance(event, InTurn):
        inner = payload(event.event)
        if "turn" in inner:
            inner["step"] = inner.pop("turn")
        return {**inner, "turn": event.turn, "speaker": event.speaker, **event.extra}
    return {"type": event.type, **dataclasses.asdict(event)}
