"""Request IDs: which incoming IDs are kept, and how error bodies get theirs."""

import json

import pytest

from almanac.ops.request_ids import accept_or_new, stamp_error


@pytest.mark.parametrize(
    "incoming",
    [
        "abc",
        "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
        "Root=1-67891233-abcdef012345678912345678",
        "a.b:c/d+e_f",
        "x" * 128,
    ],
)
def test_a_sane_incoming_id_is_kept(incoming: str) -> None:
    assert accept_or_new(incoming) == incoming
    assert accept_or_new(incoming.encode()) == incoming


@pytest.mark.parametrize(
    "incoming",
    [None, "", "x" * 129, "has space", 'quote"s', "new\nline", "tab\t", "ünïcode", "semi;colon", "<script>"],
)
def test_anything_else_gets_a_fresh_random_id(incoming: str | None) -> None:
    made = accept_or_new(incoming)
    assert made != incoming and len(made) == 32 and int(made, 16) >= 0
    assert accept_or_new(incoming) != made


def test_an_error_body_gets_the_id_inside_its_error_object() -> None:
    body = json.dumps({"error": {"code": "x", "message": "m\ud800"}}).encode()
    stamped = stamp_error(body, "rid")
    assert stamped is not None and stamped.isascii()
    assert json.loads(stamped) == {"error": {"code": "x", "message": "m\ud800", "request_id": "rid"}}
    anthropic = json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": "m"}}).encode()
    assert json.loads(stamp_error(anthropic, "rid") or b"")["error"]["request_id"] == "rid"


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"detail": "x"}', b'{"error": "a string"}'])
def test_other_bodies_are_left_alone(body: bytes) -> None:
    assert stamp_error(body, "rid") is None
