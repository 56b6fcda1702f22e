"""Is the model stuck? The collaboration strategy's judge (pure: no model, no I/O but one log line).

Signals on an answer (each a score from 0, bad, to 1, good):

- `relevance`: how close the answer is to the question — the cosine of their embeddings from the
  retrieval embedder, or a lexical overlap when none is configured (`relevance.py`; the method is
  named in the log);
- `length`: the answer's words against a target that grows with the question's length; under
  `min_chars` characters it is at most 0.3;
- `actionable`: fenced code, numbered or bulleted steps → 1; inline code, citations of item IDs,
  links → 0.8; plain prose → 0.5;
- `certainty`: 1 less 0.4 per hedge ("I think", "maybe", "might be", …) per 50 words.

They are weighted into a quality score (`WEIGHTS`); below the threshold the answer is `low_quality`.
Hard signals make the model stuck whatever the score: `explicit_phrase` ("I'm not sure how to …",
"beyond my capabilities", …), `no_answer`, and in a tool loop `repeated_tool_call` (the same tool
with the same arguments `repeat_limit` times), `no_progress` (`idle_turns` tool turns in a row
without a new successful result), `malformed_tool_calls` (arguments that are not JSON or do not fit
the schema, unknown tools: `malformed_limit` of them) and `announced_action` (the answer ends by
saying it will check, run or look something up, and calls no tool although tools were there).

Every decision is logged at INFO with its reasons and scores: signal names and numbers only, never
what the question or the answer said.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

WEIGHTS: Mapping[str, float] = {"relevance": 0.4, "length": 0.2, "actionable": 0.15, "certainty": 0.25}
STUCK_PHRASES = (
    "i'm not sure how to",
    "i am not sure how to",
    "i don't know how to",
    "i do not know how to",
    "i'm unable to",
    "i am unable to",
    "i can't perform",
    "i cannot perform",
    "i can't do this task",
    "i cannot complete this",
    "beyond my capabilities",
    "i'm stuck",
    "i am stuck",
    "i don't have enough information to",
)
HEDGES = (
    "i think",
    "i believe",
    "i guess",
    "perhaps",
    "maybe",
    "might be",
    "could be",
    "not sure",
    "possibly",
    "probably",
    "it seems",
    "not certain",
)
MALFORMED = frozenset({"invalid_input", "unknown_tool"})
_ANNOUNCED = re.compile(
    r"\b(?:let me|let's|allow me to|i(?:'ll| will| am going to|'m going to| shall))\s+"
    r"(?:now\s+|first\s+|quickly\s+|go ahead and\s+)?"
    r"(?:check|look|search|run|try|find|fetch|see|verify|call|use|open|read|query|execute|test|investigate|"
    r"examine|inspect|get|retrieve|browse|grep|list|consult|pull)\b",
    re.IGNORECASE,
)
_ANNOUNCE_TAIL_CHARS = 250  # an announcement counts only near the end: the model stopped right after it
_HEDGE = re.compile(r"\b(?:" + "|".join(re.escape(h) for h in HEDGES) + r")\b")
_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)
_LIST_LINE = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+\S", re.MULTILINE)
_STEP = re.compile(r"\bstep\s+1\b", re.IGNORECASE)
_REFERENCE = re.compile(r"`[^`\n]+`|\[q\d+(?:-t\d+|-r)?\]|https?://\S+")


@dataclass(frozen=True)
class ToolRecord:
    """One tool call of the attempt: which tool, its arguments (canonical JSON), how it ended."""

    name: str
    arguments: str
    status: str
    turn: int

    @property
    def malformed(self) -> bool:
        return self.status in MALFORMED


@dataclass(frozen=True)
class Relevance:
    """How relevant the answer is to the question (0–1), and how that was measured."""

    score: float
    method: str


@dataclass(frozen=True)
class Attempt:
    """What the model did for one question: its answer and the tool calls it made."""

    prompt: str
    answer: str = ""
    tools: tuple[ToolRecord, ...] = ()
    tools_available: bool = False
    relevance: Relevance | None = None


@dataclass(frozen=True)
class StuckRules:
    threshold: float = 0.5  # quality below this is `low_quality`
    repeat_limit: int = 3
    idle_turns: int = 3
    malformed_limit: int = 2
    min_chars: int = 20


@dataclass(frozen=True)
class Verdict:
    """The decision: stuck or not, the signals that fired (`reasons`), and the scores behind it."""

    stuck: bool
    reasons: tuple[str, ...] = ()
    score: float | None = None
    signals: Mapping[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        """The reasons in words safe to log and to show (no contents)."""
        return ", ".join(self.reasons) if self.reasons else "not stuck"


class StuckDetector:
    """Applies `StuckRules` to attempts; see the module docstring."""

    def __init__(self, rules: StuckRules | None = None) -> None:
        self.rules = rules or StuckRules()

    def loop_check(self, tools: Sequence[ToolRecord], *, where: str = "") -> Verdict:
        """Between tool turns: is the tool loop going nowhere?"""
        reasons, signals = self._loop_signals(tools)
        return _logged(Verdict(bool(reasons), tuple(reasons), None, signals), where or "tool loop")

    def judge(self, attempt: Attempt, *, where: str = "") -> Verdict:
        """At the end of an attempt: the tool-loop signals, then the answer's."""
        reasons, signals = self._loop_signals(attempt.tools)
        answer = attempt.answer.strip()
        if not answer:
            reasons.append("no_answer")
        if explicit_phrase(answer):
            reasons.append("explicit_phrase")
        if attempt.tools_available and announced_action(answer):
            reasons.append("announced_action")
        score, parts = quality(attempt, min_chars=self.rules.min_chars)
        signals = {**signals, **parts, "quality": score}
        if score < self.rules.threshold and "no_answer" not in reasons:
            reasons.append("low_quality")
        return _logged(Verdict(bool(reasons), tuple(reasons), score, signals), where or "answer")

    def _loop_signals(self, tools: Sequence[ToolRecord]) -> tuple[list[str], dict[str, float]]:
        rules = self.rules
        repeats, idle, malformed = repeated_calls(tools), idle_turns(tools), sum(t.malformed for t in tools)
        reasons = []
        if repeats >= rules.repeat_limit:
            reasons.append("repeated_tool_call")
        if idle >= rules.idle_turns:
            reasons.append("no_progress")
        if malformed >= rules.malformed_limit:
            reasons.append("malformed_tool_calls")
        return reasons, {"repeated_calls": repeats, "idle_turns": idle, "malformed_calls": malformed}


def _logged(verdict: Verdict, where: str) -> Verdict:
    shown = " ".join(f"{name}={value:.2f}" for name, value in sorted(verdict.signals.items()))
    log.info("stuck check (%s): %s [%s]", where, "stuck: " + verdict.describe() if verdict.stuck else "ok", shown)
    return verdict


# --- the signals (each pure, each tested on its own) ---------------------------------------------


def _plain(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").lower()


def explicit_phrase(answer: str) -> bool:
    """The answer says outright that the model cannot do it."""
    plain = _plain(answer)
    return any(phrase in plain for phrase in STUCK_PHRASES)


def announced_action(answer: str) -> bool:
    """The answer ends by announcing an action ("Let me check the docs.")."""
    return bool(_ANNOUNCED.search(_plain(answer)[-_ANNOUNCE_TAIL_CHARS:]))


def length_score(answer: str, prompt: str, *, min_chars: int = 20) -> float:
    """The answer's words against a target of 6 + half the question's words (8 to 60)."""
    words = len(answer.split())
    target = min(60.0, max(8.0, 6 + len(prompt.split()) / 2))
    score = min(1.0, words / target)
    return min(score, 0.3) if len(answer.strip()) < min_chars else score


def actionable_score(answer: str) -> float:
    """Code or steps → 1.0; inline code, cited item IDs or links → 0.8; prose → 0.5."""
    if _FENCE.search(answer) or _STEP.search(answer) or len(_LIST_LINE.findall(answer)) >= 2:
        return 1.0
    return 0.8 if _REFERENCE.search(answer) else 0.5


def certainty_score(answer: str) -> float:
    """1 less 0.4 for each hedge per 50 words (0 at worst)."""
    hedges = len(_HEDGE.findall(_plain(answer)))
    per_fifty = hedges / max(1.0, len(answer.split()) / 50)
    return max(0.0, 1.0 - 0.4 * per_fifty)


def quality(attempt: Attempt, *, min_chars: int = 20) -> tuple[float, dict[str, float]]:
    """The weighted quality score and its parts (relevance left out, and the weights renormalised,
    when it was not measured)."""
    answer = attempt.answer.strip()
    parts = {
        "length": length_score(answer, attempt.prompt, min_chars=min_chars),
        "actionable": actionable_score(answer) if answer else 0.0,
        "certainty": certainty_score(answer) if answer else 0.0,
    }
    if attempt.relevance is not None:
        parts["relevance"] = attempt.relevance.score
    total = sum(WEIGHTS[name] for name in parts)
    return sum(WEIGHTS[name] * value for name, value in parts.items()) / total, parts


def repeated_calls(tools: Sequence[ToolRecord]) -> int:
    """How often the most repeated call (same tool, same arguments) was made."""
    counts = Counter((t.name, t.arguments) for t in tools)
    return max(counts.values(), default=0)


def idle_turns(tools: Sequence[ToolRecord]) -> int:
    """Tool turns in a row, up to the latest, in which no call brought a new successful result
    (every call failed, or repeated a call that had already succeeded)."""
    succeeded: set[tuple[str, str]] = set()
    idle = 0
    for turn in sorted({t.turn for t in tools}):
        progressed = False
        for record in (t for t in tools if t.turn == turn):
            key = (record.name, record.arguments)
            if record.status == "ok" and key not in succeeded:
                progressed = True
                succeeded.add(key)
        idle = 0 if progressed else idle + 1
    return idle
