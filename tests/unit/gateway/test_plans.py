"""Which user turn a request belongs to, when its plan may be reused, and the cache (pure), on
Claude Code's own request shapes (tests/fixtures/claude_code/)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from almanac.chat.strategies.boost_driver import Plan
from almanac.gateway.plans import PlanCache, Turn, turn_of

CAPTURES = Path(__file__).resolve().parents[2] / "fixtures" / "claude_code"
PLAN = Plan(0, "read it", "1. Call Read with file_path: /tmp/notes.txt")


def capture(name: str) -> dict[str, Any]:
    return dict(json.loads((CAPTURES / f"{name}.json").read_text())["body"])


def turn(body: dict[str, Any], user: str = "u1", model: str = "claude-sonnet-4-6") -> Turn:
    found = turn_of(body, user_id=user, model=model)
    assert found is not None
    return found


def test_claude_codes_first_request_and_its_continuation_are_one_turn() -> None:
    first, later = turn(capture("main_first")), turn(capture("main_continuation"))
    assert first.key == later.key  # although Claude Code moved its cache_control marks in between
    assert (first.continuation, later.continuation) == (False, True)
    assert later.trouble is None


def test_a_different_user_model_tool_set_or_opening_message_is_another_turn() -> None:
    body = capture("main_continuation")
    key = turn(body).key
    assert turn(body, user="u2").key != key
    assert turn(body, model="claude-opus-4-6").key != key
    fewer = {**body, "tools": body["tools"][1:]}
    assert turn(fewer).key != key
    other = copy.deepcopy(body)
    other["messages"][0]["content"][1]["text"] = "What does other.txt say?"
    assert turn(other).key != key


def test_a_new_user_message_opens_a_new_turn() -> None:
    body = capture("main_continuation")
    follow_up = {
        **body,
        "messages": [*body["messages"], {"role": "assistant", "content": "42."}, {"role": "user", "content": "and?"}],
    }
    assert turn(follow_up).key != turn(body).key and not turn(follow_up).continuation


def _result(**extra: Any) -> dict[str, Any]:
    body = capture("main_continuation")
    last = body["messages"][-1]
    body["messages"][-1] = {**last, "content": [{**last["content"][0], **extra}]}
    return body


@pytest.mark.parametrize(
    ("body", "trouble"),
    [
        (_result(is_error=True), "a tool reported an error"),
        (_result(content="<tool_use_error>File does not exist.</tool_use_error>"), "a tool reported an error"),
        (_result(), None),
    ],
    ids=["is-error", "tool-use-error-text", "fine"],
)
def test_tool_errors_are_trouble(body: dict[str, Any], trouble: str | None) -> None:
    assert turn(body).trouble == trouble


def _with_assistant(body: dict[str, Any], *blocks: dict[str, Any]) -> dict[str, Any]:
    messages = copy.deepcopy(body["messages"])
    messages[-2] = {"role": "assistant", "content": list(blocks)}
    return {**body, "messages": messages}


def test_an_executor_saying_it_is_stuck_is_trouble() -> None:
    body = capture("main_continuation")
    call = body["messages"][-2]["content"][1]
    stuck = _with_assistant(body, {"type": "text", "text": "I'm not sure how to read this file."}, call)
    assert turn(stuck).trouble == "the executor said it is stuck"


def test_a_repeated_call_is_trouble() -> None:
    body = capture("main_continuation")
    call = body["messages"][-2]["content"][1]
    messages = body["messages"]
    again = {
        **body,
        "messages": [
            *messages,
            {"role": "assistant", "content": [{**call, "id": "toolu_again"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_again", "content": "1\tsame"}]},
        ],
    }
    assert turn(again).trouble == "the executor repeated a call"


def test_the_cache_gives_a_plan_only_to_a_healthy_continuation() -> None:
    cache = PlanCache()
    first, later = turn(capture("main_first")), turn(capture("main_continuation"))
    cache.put(first, PLAN)
    assert cache.take(first) is None  # an opening request is planned
    assert cache.take(later) == PLAN
    assert cache.take(turn(_result(is_error=True))) is None
    assert cache.take(turn(capture("main_continuation"), user="u2")) is None


def test_entries_expire_are_bounded_and_are_reused_a_limited_number_of_times() -> None:
    now = [0.0]
    cache = PlanCache(max_entries=2, ttl_s=60, max_reuses=2, clock=lambda: now[0])
    turns = [Turn(f"k{n}", continuation=True) for n in range(3)]
    for item in turns:
        cache.put(item, PLAN)
    assert cache.size == 2 and cache.take(turns[0]) is None  # the oldest went first
    assert cache.take(turns[1]) == PLAN and cache.take(turns[1]) == PLAN and cache.take(turns[1]) is None
    now[0] = 61
    assert cache.take(turns[2]) is None
