"""OpenAI stream chunks → Anthropic stream events (pure), checked against the SDK's own accumulator."""

from typing import Any

import pytest

from almanac.gateway.accumulate import UsageTally, accumulate
from almanac.gateway.openai_stream import OpenAIStreamConverter


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, usage: dict[str, int] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage:
        out["usage"] = usage
    return out


def run(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    converter = OpenAIStreamConverter("claude-x", input_tokens=7)
    events = converter.start()
    for item in chunks:
        events += converter.feed(item)
    return events + converter.finish()


def test_text_then_tool_calls_make_blocks_in_order() -> None:
    events = run(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Let me "}),
            chunk({"content": "check."}),
            chunk({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "get", "arguments": ""}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Oslo"}'}}]}),
            chunk({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "get", "arguments": "{}"}}]}),
            chunk({}, "tool_calls"),
            chunk(None, usage={"prompt_tokens": 30, "completion_tokens": 9}),
        ]
    )
    kinds = [(e["type"], e.get("index")) for e in events]
    assert kinds == [
        ("message_start", None),
        ("content_block_start", 0),
        ("content_block_delta", 0),
        ("content_block_delta", 0),
        ("content_block_stop", 0),
        ("content_block_start", 1),
        ("content_block_delta", 1),
        ("content_block_stop", 1),
        ("content_block_start", 2),
        ("content_block_delta", 2),
        ("content_block_stop", 2),
        ("message_delta", None),
        ("message_stop", None),
    ]
    message = accumulate(events)
    assert message["content"] == [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "call_a", "name": "get", "input": {"city": "Oslo"}},
        {"type": "tool_use", "id": "call_b", "name": "get", "input": {}},
    ]
    assert message["stop_reason"] == "tool_use"
    assert message["usage"] == {"input_tokens": 30, "output_tokens": 9}


def test_a_tool_block_starts_as_soon_as_the_name_is_known() -> None:
    converter = OpenAIStreamConverter("m")
    converter.start()
    started = converter.feed(
        chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "read", "arguments": '{"pa'}}]})
    )
    assert started[0]["type"] == "content_block_start" and started[0]["content_block"]["name"] == "read"


def test_a_name_split_over_fragments_waits_for_the_arguments() -> None:
    events = run(
        [
            chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "get_", "arguments": ""}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{'q': 'x',}"}}]}),
            chunk({}, "tool_calls"),
        ]
    )
    message = accumulate(events)
    assert message["content"][0]["input"] == {"q": "x"}  # repaired before it was sent


def test_finish_reason_length_and_usage_tally() -> None:
    events = run(
        [
            chunk({"content": "abc"}),
            chunk({}, "length"),
            chunk(None, usage={"prompt_tokens": 5, "completion_tokens": 3}),
        ]
    )
    tally = UsageTally()
    for event in events:
        tally.observe(event)
    assert accumulate(events)["stop_reason"] == "max_tokens"
    assert (tally.input_tokens, tally.output_tokens, tally.tool_use) == (5, 3, False)


def test_an_empty_stream_is_still_a_valid_message() -> None:
    message = accumulate(run([chunk({}, "stop")]))
    assert message["content"] == [] and message["stop_reason"] == "end_turn"


CALL = chunk({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "get", "arguments": "{}"}}]})


def convert(chunks: list[dict[str, Any]], **options: Any) -> list[dict[str, Any]]:
    converter = OpenAIStreamConverter("claude-x", input_tokens=7, **options)
    events = converter.start()
    for item in chunks:
        events += converter.feed(item)
    return events + converter.finish()


@pytest.mark.parametrize("finish", ["stop", None, "length"])
def test_a_stream_with_tool_calls_ends_in_tool_use_whatever_the_finish_reason(finish: str | None) -> None:
    events = convert([CALL, chunk({}, finish)] if finish else [CALL])
    message = accumulate(events)
    assert message["stop_reason"] == "tool_use" and message["content"][0]["name"] == "get"


def test_no_tool_call_comes_out_with_tools_off_even_if_the_model_writes_one() -> None:
    events = convert([chunk({"content": "Sure."}), CALL, chunk({}, "tool_calls")], tools=False)
    message = accumulate(events)
    assert [block["type"] for block in message["content"]] == ["text"] and message["stop_reason"] == "end_turn"


def test_reasoning_becomes_a_signed_thinking_block_before_the_text() -> None:
    events = convert(
        [
            chunk({"reasoning_content": "Think "}),
            chunk({"reasoning": "twice."}),
            chunk({"content": "Done."}),
            chunk({}, "stop"),
        ],
        thinking=True,
    )
    message = accumulate(events)
    thinking, text = message["content"]
    assert thinking == {"type": "thinking", "thinking": "Think twice.", "signature": thinking["signature"]}
    assert thinking["signature"].startswith("almanac.") and text == {"type": "text", "text": "Done."}
    deltas = [e["delta"]["type"] for e in events if e["type"] == "content_block_delta"]
    assert deltas == ["thinking_delta", "thinking_delta", "signature_delta", "text_delta"]


def test_reasoning_is_dropped_without_thinking() -> None:
    message = accumulate(convert([chunk({"reasoning_content": "hidden"}), chunk({"content": "Done."})]))
    assert message["content"] == [{"type": "text", "text": "Done."}]
