"""What a participant is told at its turn (pure): a system prompt with its role, the goal, who else
takes part and the discussion so far, and a short instruction for the turn.

The discussion so far is what the other models (and this one) said: model output, so every message
is marked as data (`text/marking.py`). It is fitted to a token budget: the newest messages are kept
whole (each cut to a share of the budget at most), older ones leave first, and one line names the
turns left out — `retrieve_full_context` returns any of them when that tool is available.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from almanac.discussions.spec import DiscussionSpec, Participant
from almanac.llm.tokens import TokenCounter
from almanac.text.marking import DATA_RULE, as_data

SYSTEM = """\
You are {label}, one of {count} participants in a discussion between AI models. Your role: {role}.

The goal of the discussion, set by the user:
{goal}

Participants (they speak in this order, {turns} turns in all):
{roster}

How to take part: speak only as {name}, in the first person. Build on what the others said: answer
their questions, correct what is wrong, add what is missing, and move the discussion toward the goal.
Keep each contribution focused: a few short paragraphs, or code where code is the point.{tools}
When the last turn comes, conclude: state what the discussion established and what is still open.

{data_rule}

# The discussion so far
{transcript}
"""
TOOLS_NOTE = " You may call the tools you are given when a fact must be checked or code must be run."
NOBODY_YET = "(Nobody has spoken yet: you open the discussion.)"
SHARE = 3  # one message takes at most 1/SHARE of the transcript's budget


@dataclass(frozen=True)
class Said:
    """A message of the discussion so far."""

    turn: int
    item_id: str
    speaker: Participant
    model: str
    text: str


def instruction(spec: DiscussionSpec, turn: int) -> str:
    """The turn's message to the speaker."""
    speaker = spec.speaker(turn)
    last = " This is the last turn: conclude the discussion." if turn == spec.turns else ""
    return f"Turn {turn} of {spec.turns}: your contribution as {speaker.label}.{last}"


def system_prompt(spec: DiscussionSpec, turn: int, transcript: str, *, tools: bool) -> str:
    """The speaker's system prompt for `turn` (`transcript` from `fit_transcript`)."""
    speaker = spec.speaker(turn)
    roster = "\n".join(f"{p.index + 1}. {p.label}, model {p.model}" for p in spec.participants)
    return SYSTEM.format(
        label=speaker.label,
        name=speaker.name,
        count=len(spec.participants),
        role=speaker.role,
        goal=spec.goal,
        turns=spec.turns,
        roster=roster,
        tools=TOOLS_NOTE if tools else "",
        data_rule=DATA_RULE,
        transcript=transcript,
    )


def render(said: Said, cap: int, counter: TokenCounter) -> str:
    """One message as the participants see it (its text cut to `cap` tokens, with a pointer)."""
    text = said.text.strip() or "(said nothing)"
    if counter.count(text) > cap:
        text = counter.cut(text, max(0, cap - 30)).rstrip() + f'\n… [cut: retrieve_full_context("{said.item_id}")]'
    head = f"[{said.item_id}] Turn {said.turn}, {said.speaker.label}, model {said.model}:"
    return f"{head}\n{as_data(text, source=f'{said.item_id} {said.speaker.name}')}"


def fit_transcript(messages: Sequence[Said], *, budget: int, counter: TokenCounter, retrievable: bool) -> str:
    """The discussion so far within `budget` tokens: newest messages first, older ones named."""
    if not messages:
        return NOBODY_YET
    cap = max(50, budget // SHARE)
    kept: list[str] = []
    used = 0
    for said in reversed(messages):
        block = render(said, cap, counter)
        size = counter.count(block)
        if used + size > budget and kept:
            break
        kept.append(block)
        used += size
    left_out = messages[: len(messages) - len(kept)]
    parts = list(reversed(kept))
    if left_out:
        span = f"{left_out[0].turn}–{left_out[-1].turn}" if len(left_out) > 1 else str(left_out[0].turn)
        how = f' (retrieve_full_context("{left_out[-1].item_id}") returns one)' if retrievable else ""
        parts.insert(0, f"[Turns {span} are not shown here to fit the context window{how}.]")
    return "\n\n".join(parts)
