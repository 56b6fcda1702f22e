"""Folding system messages that follow the first message into the user turn (pure)."""

from typing import Any

import pytest

from almanac.gateway.openai_system import fold_system_messages, has_mid_system


def system(text: str) -> dict[str, Any]:
    return {"role": "system", "content": text}


def note(text: str) -> str:
    return f"<system-message>\n{text}\n</system-message>"


USER = {"role": "user", "content": "hi"}
ASSISTANT_CALL = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]}
TOOL = {"role": "tool", "tool_call_id": "c", "content": "ok"}


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([system("a"), system("b"), USER], [system("a\n\nb"), USER]),
        ([system("s"), USER, system("n")], [system("s"), {"role": "user", "content": f"hi\n\n{note('n')}"}]),
        (
            [USER, ASSISTANT_CALL, system("n"), TOOL, {"role": "user", "content": "more"}],
            [USER, ASSISTANT_CALL, TOOL, {"role": "user", "content": f"{note('n')}\n\nmore"}],
        ),
        (
            [USER, ASSISTANT_CALL, system("n"), TOOL, {"role": "assistant", "content": "done"}],
            [
                USER,
                ASSISTANT_CALL,
                TOOL,
                {"role": "user", "content": note("n")},
                {"role": "assistant", "content": "done"},
            ],
        ),
        (
            [USER, ASSISTANT_CALL, TOOL, system("n")],
            [USER, ASSISTANT_CALL, TOOL, {"role": "user", "content": note("n")}],
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": "x"}]}, system("n")],
            [{"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": note("n")}]}],
        ),
    ],
    ids=["leading-merged", "after-user", "between-call-and-result", "before-assistant", "at-the-end", "parts"],
)
def test_folding(messages: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    folded = fold_system_messages(messages)
    assert folded == expected
    assert not has_mid_system(folded)


def test_only_later_system_messages_count() -> None:
    assert not has_mid_system([system("a"), system("b"), USER])
    assert has_mid_system([system("a"), USER, system("b")])
