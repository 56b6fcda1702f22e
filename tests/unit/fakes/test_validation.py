"""The fake vendor servers refuse what the real APIs refuse, so a malformed request fails a test."""

from typing import Any

import pytest
from tests.fakes.validation import anthropic_problem, openai_problem

TOOL = {"name": "t", "description": "d", "input_schema": {"type": "object"}}
USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}]}
RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}
ASK = {"role": "user", "content": "hi"}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"model": "m", "max_tokens": 10, "messages": [ASK]}, None),
        ({"model": "m", "max_tokens": 10, "messages": [ASK, USE, RESULT], "tools": [TOOL]}, None),
        ({"max_tokens": 10, "messages": [ASK]}, "model"),
        ({"model": "m", "messages": [ASK]}, "max_tokens"),
        ({"model": "m", "max_tokens": 10, "messages": []}, "messages"),
        ({"model": "m", "max_tokens": 10, "messages": [ASK], "tool_choice": {"type": "none"}}, "tool_choice"),
        ({"model": "m", "max_tokens": 10, "messages": [ASK, USE, RESULT]}, "must define tools"),
        ({"model": "m", "max_tokens": 10, "messages": [ASK, USE, ASK], "tools": [TOOL]}, "without `tool_result`"),
        ({"model": "m", "max_tokens": 10, "messages": [ASK, RESULT], "tools": [TOOL]}, "unexpected `tool_use_id`"),
        ({"model": "m", "max_tokens": 10, "messages": [USE]}, "first message"),
    ],
)
def test_anthropic_requests(body: dict[str, Any], problem: str | None) -> None:
    found = anthropic_problem(body)
    assert (found is None) if problem is None else (found is not None and problem in found)


CALLS = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}],
}
ANSWER = {"role": "tool", "tool_call_id": "c1", "content": "x"}
OPENAI_TOOL = {"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"model": "m", "messages": [ASK]}, None),
        ({"model": "m", "messages": [ASK, CALLS, ANSWER, ASK], "tools": [OPENAI_TOOL]}, None),
        ({"messages": [ASK]}, "model"),
        ({"model": "m", "messages": []}, "too short"),
        ({"model": "m", "messages": [ASK], "tool_choice": "none"}, "only allowed when 'tools'"),
        ({"model": "m", "messages": [ASK, ANSWER]}, "must be a response"),
        ({"model": "m", "messages": [ASK, CALLS, ASK], "tools": [OPENAI_TOOL]}, "did not have response messages"),
        ({"model": "m", "messages": [{"role": "robot", "content": "x"}]}, "Invalid value"),
    ],
)
def test_openai_requests(body: dict[str, Any], problem: str | None) -> None:
    found = openai_problem(body)
    assert (found is None) if problem is None else (found is not None and problem in found)
