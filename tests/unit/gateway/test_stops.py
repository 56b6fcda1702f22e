"""Stop sequences applied on an Anthropic event stream (pure)."""

from typing import Any

import pytest

from almanac.gateway.stops import StopSequences

Event = dict[str, Any]


def stream(*pieces: str) -> list[Event]:
    return [
        {"type": "message_start", "message": {"usage": {"input_tokens": 7, "output_tokens": 0}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *[{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}} for p in pieces],
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 3},
        },
        {"type": "message_stop"},
    ]


def run(sequences: list[str], events: list[Event]) -> tuple[str, dict[str, Any], list[str]]:
    stops = StopSequences(sequences)
    out = [passed for event in events for passed in stops.feed(event)]
    text = "".join(e["delta"]["text"] for e in out if e["type"] == "content_block_delta")
    delta = next(e for e in out if e["type"] == "message_delta")
    return text, delta, [e["type"] for e in out]


@pytest.mark.parametrize(
    ("sequences", "pieces", "text", "matched"),
    [
        (["END"], ["one two ", "END three"], "one two ", "END"),
        (["END"], ["one E", "N", "D more"], "one ", "END"),  # split across deltas
        (["\n\nHuman:"], ["answer\n", "\nHu", "man: next"], "answer", "\n\nHuman:"),
        (["B", "AB"], ["xxAB"], "xx", "AB"),  # the earliest match wins
        (["END"], ["no stop here, E", "ND-ish? no: EN"], "no stop here, ", "END"),
        (["STOP"], ["ST", "and on"], "STand on", None),  # a held beginning that never completes
        (["zzz"], ["plain text"], "plain text", None),
    ],
)
def test_text_is_cut_before_the_first_sequence(
    sequences: list[str], pieces: list[str], text: str, matched: str | None
) -> None:
    got, delta, kinds = run(sequences, stream(*pieces))
    assert got == text
    assert delta["delta"]["stop_sequence"] == matched
    assert delta["delta"]["stop_reason"] == ("stop_sequence" if matched else "end_turn")
    assert kinds[-1] == "message_stop" and kinds.count("content_block_stop") == 1


def test_a_cut_stream_counts_its_output_and_keeps_its_input_tokens() -> None:
    _, delta, _ = run(["END"], stream("four words of text END"))
    assert delta["usage"]["input_tokens"] == 7 and delta["usage"]["output_tokens"] > 0


def test_tool_use_blocks_pass_untouched() -> None:
    tool = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "n", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"q": "END"}'},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    stops = StopSequences(["END"])
    assert [passed for event in tool for passed in stops.feed(event)] == tool and not stops.stopped
