"""The stuck detector, case by case: each signal on its own, then whole attempts and tool loops."""

import logging

import pytest

from almanac.chat.strategies.stuck import (
    Attempt,
    Relevance,
    StuckDetector,
    StuckRules,
    ToolRecord,
    actionable_score,
    announced_action,
    certainty_score,
    explicit_phrase,
    idle_turns,
    length_score,
    quality,
    repeated_calls,
)

ASYNCIO = "How do I cancel an asyncio task?"
GOOD = (
    "Call `task.cancel()`: the task gets `CancelledError` at its next await. Then `await task` inside "
    "`try/except asyncio.CancelledError` to wait until it has finished cleaning up."
)
ON_TOPIC, OFF_TOPIC = Relevance(1.0, "test"), Relevance(0.0, "test")


def ok(name: str, arguments: str = "{}", turn: int = 1) -> ToolRecord:
    return ToolRecord(name, arguments, "ok", turn)


def failed(name: str, arguments: str = "{}", turn: int = 1, status: str = "error") -> ToolRecord:
    return ToolRecord(name, arguments, status, turn)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("I'm not sure how to cancel that.", True),
        ("I\u2019m not sure how to do this.", True),  # a typographic apostrophe
        ("I am unable to access the repository.", True),
        ("That is beyond my capabilities.", True),
        ("I don't know how to parse this format.", True),
        ("I'm not sure it matters, but cancel() is the way.", False),  # a hedge, not a surrender
        (GOOD, False),
    ],
)
def test_explicit_phrases(answer: str, expected: bool) -> None:
    assert explicit_phrase(answer) is expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Let me check the documentation for that.", True),
        ("I'll run the tests now.", True),
        ("I will now search GitHub for it.", True),
        ("Let me look that up.", True),
        ("Let me explain: cancel() raises CancelledError in the task.", False),  # explaining is answering
        (
            "Let me check the docs. " + "The answer is that cancel() raises CancelledError. " * 10,
            False,
        ),  # not at the end
        (GOOD, False),
    ],
)
def test_announced_actions_count_only_at_the_end(answer: str, expected: bool) -> None:
    assert announced_action(answer) is expected


@pytest.mark.parametrize(
    ("answer", "prompt", "low", "high"),
    [
        ("ok", ASYNCIO, 0.0, 0.3),  # under 20 characters
        ("Use cancel() and await it.", ASYNCIO, 0.52, 0.53),  # 5 words of a target of 9.5
        (GOOD, ASYNCIO, 1.0, 1.0),
        ("word " * 30, "long question " * 100, 0.49, 0.51),  # the target stops at 60 words
    ],
)
def test_length_is_measured_against_the_question(answer: str, prompt: str, low: float, high: float) -> None:
    assert low <= length_score(answer, prompt) <= high


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("```python\ntask.cancel()\n```", 1.0),
        ("1. Cancel the task.\n2. Await it.", 1.0),
        ("- cancel it\n- await it", 1.0),
        ("Step 1: cancel it.", 1.0),
        ("Use `task.cancel()`.", 0.8),
        ("See [q1-t1] for the log.", 0.8),
        ("See https://docs.python.org/3/library/asyncio-task.html.", 0.8),
        ("TCP is reliable and ordered; UDP is neither.", 0.5),
    ],
)
def test_actionable_content(answer: str, expected: float) -> None:
    assert actionable_score(answer) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (GOOD, 1.0),
        ("I think maybe it could be something about networks, perhaps.", 0.0),  # four hedges in ten words
        ("Maybe use cancel().", 0.6),
        ("Perhaps " + "the task is cancelled and awaited as usual here. " * 20, 0.89),  # one hedge in 181 words
    ],
)
def test_hedging_lowers_certainty(answer: str, expected: float) -> None:
    assert certainty_score(answer) == pytest.approx(expected, abs=0.05)


def test_quality_leaves_relevance_out_when_it_was_not_measured() -> None:
    with_relevance, parts = quality(Attempt(ASYNCIO, GOOD, relevance=OFF_TOPIC))
    without, others = quality(Attempt(ASYNCIO, GOOD))
    assert "relevance" in parts and "relevance" not in others
    assert with_relevance == pytest.approx(0.57)  # length 1 (×0.2), actionable 0.8 (×0.15), certainty 1 (×0.25)
    assert without == pytest.approx(0.57 / 0.6)  # the same, over the weights that were measured


@pytest.mark.parametrize(
    ("tools", "repeats", "idle"),
    [
        ((), 0, 0),
        ((ok("search", '{"q":"a"}', 1), ok("search", '{"q":"b"}', 2)), 1, 0),
        ((ok("search", "{}", 1), ok("search", "{}", 2), ok("search", "{}", 3)), 3, 2),  # repeats bring nothing new
        ((failed("run", turn=1), failed("run", turn=2), failed("run", turn=3)), 3, 3),
        ((failed("run", turn=1), failed("run", turn=2), ok("read", turn=3)), 2, 0),  # progress resets the count
        ((ok("a", turn=1), failed("b", turn=1), failed("b", '{"x":1}', turn=2)), 1, 1),
    ],
)
def test_tool_loop_measures(tools: tuple[ToolRecord, ...], repeats: int, idle: int) -> None:
    assert repeated_calls(tools) == repeats
    assert idle_turns(tools) == idle


@pytest.mark.parametrize(
    ("attempt", "reasons"),
    [
        (Attempt(ASYNCIO, GOOD, relevance=ON_TOPIC), ()),
        (Attempt(ASYNCIO, "I'm not sure how to cancel a task.", relevance=ON_TOPIC), ("explicit_phrase",)),
        (Attempt(ASYNCIO, "", relevance=OFF_TOPIC), ("no_answer",)),
        (
            Attempt(ASYNCIO, "I think maybe it could be something about networks, perhaps.", relevance=OFF_TOPIC),
            ("low_quality",),
        ),
        (Attempt(ASYNCIO, GOOD, relevance=Relevance(0.1, "test")), ()),  # weak relevance alone is not enough
        (
            Attempt(ASYNCIO, "Let me check the documentation for that.", tools_available=True, relevance=ON_TOPIC),
            ("announced_action",),
        ),
        (  # without tools to call, announcing is only words
            Attempt(ASYNCIO, "Let me check the documentation for that.", tools_available=False, relevance=ON_TOPIC),
            (),
        ),
        (
            Attempt(ASYNCIO, GOOD, (ok("docs", turn=1), ok("docs", turn=2), ok("docs", turn=3)), True, ON_TOPIC),
            ("repeated_tool_call",),
        ),
        (
            Attempt(
                ASYNCIO,
                GOOD,
                (failed("run", "1", 1, "invalid_input"), failed("nope", "{}", 2, "unknown_tool")),
                True,
                ON_TOPIC,
            ),
            ("malformed_tool_calls",),
        ),
    ],
)
def test_whole_attempts(attempt: Attempt, reasons: tuple[str, ...]) -> None:
    verdict = StuckDetector().judge(attempt)
    assert verdict.reasons == reasons
    assert verdict.stuck is bool(reasons)


@pytest.mark.parametrize(
    ("tools", "reasons"),
    [
        ((ok("docs", '{"q":"x"}', 1), ok("docs", '{"q":"y"}', 2)), ()),
        ((ok("docs", "{}", 1), ok("docs", "{}", 2), ok("docs", "{}", 3)), ("repeated_tool_call",)),
        (
            (failed("run", '{"a":1}', 1), failed("run", '{"a":2}', 2), failed("run", '{"a":3}', 3)),
            ("no_progress",),
        ),
        ((failed("run", "x", 1, "invalid_input"), failed("run", "y", 1, "invalid_input")), ("malformed_tool_calls",)),
    ],
)
def test_tool_loops(tools: tuple[ToolRecord, ...], reasons: tuple[str, ...]) -> None:
    assert StuckDetector().loop_check(tools).reasons == reasons


def test_the_threshold_decides_low_quality() -> None:
    attempt = Attempt(ASYNCIO, "Sure, asyncio has tasks.", relevance=Relevance(0.5, "test"))
    score = quality(attempt)[0]
    assert StuckDetector(StuckRules(threshold=score - 0.01)).judge(attempt).stuck is False
    assert StuckDetector(StuckRules(threshold=score + 0.01)).judge(attempt).reasons == ("low_quality",)


def test_each_decision_is_logged_with_reasons_and_scores_but_no_contents(caplog: pytest.LogCaptureFixture) -> None:
    secret = "my-private-question-about-zebras"
    caplog.set_level(logging.INFO, logger="almanac.chat.strategies.stuck")
    StuckDetector().judge(Attempt(secret, f"I'm not sure how to {secret}", relevance=ON_TOPIC), where="c1/q3 attempt 1")
    StuckDetector().judge(Attempt(secret, GOOD, relevance=ON_TOPIC), where="c1/q4 attempt 1")
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 2
    assert "c1/q3 attempt 1" in lines[0] and "stuck: explicit_phrase" in lines[0] and "quality=" in lines[0]
    assert "c1/q4 attempt 1" in lines[1] and ": ok [" in lines[1]
    assert all(secret not in line and "zebras" not in line for line in lines)
