"""Reusing a boost plan for the rest of its user turn.

An agent such as Claude Code runs its tools itself, so one user turn reaches the gateway as several
requests: the turn's opening request, then one per tool round trip, each ending with a user
message that holds the tool results. Planning each of them again costs a planner call (with a
prompt of tens of kilobytes) per round trip, and gains nothing while the plan is being followed.
So a plan that got the executor calling tools is kept for its turn, and a continuation of that turn
(the last message holds tool results) is executed with it directly — unless there is trouble, when
the planner is asked again (and its new plan kept): a tool reported an error, the executor said it
is stuck, the executor repeated a call it had already made in this turn, or the plan has already
been reused `max_reuses` times.

The turn is named by a digest of the user, the requested model, the tools' names and the
conversation up to and including the turn's opening user message (the last user message that holds
no tool results), with `cache_control` marks left out (clients move them from request to request).
Two requests can only share a plan if all of that is equal. The cache is per process: behind a load
balancer a continuation that reaches another process finds nothing there and costs a planner call,
never a wrong plan. Entries expire after `ttl_s` and the least recently used go first.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from almanac.chat.strategies.boost_driver import Plan
from almanac.chat.strategies.stuck import explicit_phrase
from almanac.gateway.wire import block_list, result_text


@dataclass(frozen=True)
class Turn:
    """Where a request stands in its user turn."""

    key: str
    continuation: bool  # the last message holds tool results
    trouble: str | None = None  # why the turn's plan should not be followed further


def turn_of(body: dict[str, Any], *, user_id: str, model: str) -> Turn | None:
    """The turn `body` belongs to, or None when it has no opening user message."""
    messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
    opening = next(
        (
            n
            for n in range(len(messages) - 1, -1, -1)
            if messages[n].get("role") == "user" and not _results(messages[n])
        ),
        None,
    )
    if opening is None:
        return None
    tools = sorted(str(t.get("name")) for t in body.get("tools") or () if isinstance(t, dict))
    prefix = [_canonical(m) for m in messages[: opening + 1]]
    digest = hashlib.sha256(orjson.dumps([user_id, model, tools, prefix])).hexdigest()
    continuation = opening < len(messages) - 1 and bool(_results(messages[-1]))
    return Turn(digest, continuation, _trouble(messages[opening + 1 :]) if continuation else None)


def _results(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in block_list(message.get("content")) if b.get("type") == "tool_result"]


def _canonical(value: Any) -> Any:
    """`value` without `cache_control` marks; a string content as its one text block."""
    if isinstance(value, dict):
        out = {k: _canonical(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(out.get("content"), str) and "role" in out:
            out["content"] = [{"type": "text", "text": out["content"]}]
        return out
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    return value


def _trouble(since_opening: list[dict[str, Any]]) -> str | None:
    """Why the executor should not go on with the plan, judging by the turn so far."""
    last = since_opening[-1]
    if any(b.get("is_error") or "<tool_use_error>" in result_text(b.get("content", "")) for b in _results(last)):
        return "a tool reported an error"
    assistants = [m for m in since_opening if m.get("role") == "assistant"]
    if not assistants:
        return None
    said = "".join(str(b.get("text", "")) for b in block_list(assistants[-1].get("content")) if b.get("type") == "text")
    if explicit_phrase(said):
        return "the executor said it is stuck"
    calls = [_calls(m) for m in assistants]
    if calls[-1] and any(calls[-1] & earlier for earlier in calls[:-1]):
        return "the executor repeated a call"
    return None


def _calls(message: dict[str, Any]) -> set[bytes]:
    return {
        orjson.dumps([b.get("name"), b.get("input")], option=orjson.OPT_SORT_KEYS)
        for b in block_list(message.get("content"))
        if b.get("type") == "tool_use"
    }


@dataclass
class _Entry:
    plan: Plan
    stored_at: float
    reuses: int = 0


class PlanCache:
    """Plans by turn key: bounded, expiring, per process."""

    def __init__(
        self,
        *,
        max_entries: int = 4096,
        ttl_s: float = 1800.0,
        max_reuses: int = 12,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._max = max_entries
        self._ttl = ttl_s
        self.max_reuses = max_reuses
        self._clock = clock

    def take(self, turn: Turn) -> Plan | None:
        """The plan to follow for a continuation of `turn` (counted as a reuse), or None: no
        plan kept, the turn is in trouble, or the plan was reused enough."""
        entry = self._entries.get(turn.key)
        if entry is None or not turn.continuation or turn.trouble is not None:
            return None
        if self._clock() - entry.stored_at > self._ttl or entry.reuses >= self.max_reuses:
            del self._entries[turn.key]
            return None
        entry.reuses += 1
        self._entries.move_to_end(turn.key)
        return entry.plan

    def put(self, turn: Turn, plan: Plan) -> None:
        """Keep `plan` as the turn's plan (replacing an earlier one)."""
        self._entries[turn.key] = _Entry(plan, self._clock())
        self._entries.move_to_end(turn.key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    @property
    def size(self) -> int:
        """How many turns have a plan kept."""
        return len(self._entries)
