"""The helper model of the collaboration strategy: what it is asked and what is kept of its reply.

The helper gets a meta-prompt: the task (the user's message), the primary model's attempt — its
answer and the tool calls it made, with short results — and why the attempt was judged stuck. The
attempt and the results are marked as data (`text/marking.py`): they came from a model and from
tools, so nothing inside them is an instruction to the helper. The helper has no tools; it answers
with a plan. `distill()` keeps the plan short (numbered steps and code first), and the primary
retries with it (`collaborate.py`).

A helper that fails or times out raises `HelperFailed`; the strategy then retries the primary with
only the reasons it was stuck.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from almanac.llm.base import Model, ModelError, complete
from almanac.llm.messages import Message, ModelRequest, Usage
from almanac.text.marking import DATA_RULE, as_data

PLAN_CHARS = 1_500
ATTEMPT_CHARS = 6_000
RESULT_CHARS = 600
HELPER_SYSTEM = (
    "You are an expert assistant helping another AI model that is stuck on a task. You cannot call "
    "tools yourself; the other model can. Reply with a short, concrete plan it can follow: numbered "
    "steps, the exact tool calls or commands to use and their arguments, and complete code where code is "
    "needed. Say what the other model got wrong, if anything. No preamble.\n\n" + DATA_RULE
)
_STEP = re.compile(r"^\s*(?:\d+[.)]|[-*•]|step\s+\d+[:.)]?)\s+\S", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~)")


class HelperFailed(Exception):
    """The helper could not be asked (an error or a timeout); the message says why."""


@dataclass(frozen=True)
class StuckAttempt:
    """What the helper is told about the primary's attempt."""

    task: str
    answer: str
    tool_lines: tuple[str, ...]  # "name(arguments) → status: short result"
    reasons: str


@dataclass(frozen=True)
class HelperReply:
    text: str
    plan: str
    usage: Usage


def meta_prompt(attempt: StuckAttempt) -> str:
    """The helper's message: the task, the attempt (as data), and why it was judged stuck."""
    answer = attempt.answer.strip() or "(no answer: it stopped before answering)"
    if len(answer) > ATTEMPT_CHARS:
        answer = answer[:ATTEMPT_CHARS] + " […]"
    tools = "\n".join(attempt.tool_lines) or "(no tool calls)"
    return (
        "A smaller model is struggling with the task below. Help it with a clear plan.\n\n"
        f"Task (the user's request):\n{attempt.task.strip()}\n\n"
        f"The model's attempt:\n{as_data(answer, source='primary model attempt')}\n\n"
        f"The tool calls it made:\n{as_data(tools, source='primary model tool calls')}\n\n"
        f"Why it was judged stuck: {attempt.reasons}.\n\n"
        "Write the plan it should follow to complete the task."
    )


def tool_line(name: str, arguments: str, status: str, result: str) -> str:
    """One tool call as the helper sees it (result cut short)."""
    shown = " ".join(result.split())
    if len(shown) > RESULT_CHARS:
        shown = shown[:RESULT_CHARS] + " […]"
    args = arguments if len(arguments) <= 300 else arguments[:300] + "…"
    return f"- {name}({args}) → {status}: {shown}"


def distill(text: str, *, limit: int = PLAN_CHARS) -> str:
    """The helper's reply as a short plan: its steps and code blocks if it has any, else its
    opening paragraphs; never more than `limit` characters."""
    lines = text.strip().splitlines()
    kept: list[str] = []
    in_code = False
    for line in lines:
        if _FENCE.match(line):
            in_code = not in_code
            kept.append(line)
        elif in_code or _STEP.match(line):
            kept.append(line)
        elif kept and line[:1].isspace() and line.strip():
            kept.append(line)  # a step's continuation
    if in_code:
        kept.append("```")
    plan = "\n".join(kept).strip() if len(kept) >= 2 else text.strip()
    if len(plan) <= limit:
        return plan
    cut = plan[:limit]
    end = max(cut.rfind("\n"), cut.rfind(". "))
    plan = (cut[: end + 1] if end > limit // 2 else cut).rstrip()
    if plan.count("```") % 2:
        plan += "\n```"
    return plan + "\n[…]"


class Helper:
    """Asks the helper model for a plan; counts its usage."""

    def __init__(self, model: Model, *, timeout_s: float = 60.0, max_tokens: int = 2048) -> None:
        self.model = model
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        self.usage = Usage()
        self.calls = 0
        self.estimated_calls = 0  # calls whose tokens the server did not report

    async def ask(self, attempt: StuckAttempt) -> HelperReply:
        """One helper call; raises `HelperFailed` on an error, a timeout or an empty reply."""
        request = ModelRequest(
            HELPER_SYSTEM, (Message.user(meta_prompt(attempt)),), (), self.max_tokens, tool_choice="none"
        )
        self.calls += 1
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await complete(self.model, request)
        except TimeoutError:
            raise HelperFailed(f"the helper did not answer within {self.timeout_s:g} s") from None
        except ModelError as exc:
            raise HelperFailed(f"the helper failed: {exc}") from None
        self.usage = self.usage + response.usage
        self.estimated_calls += response.usage.estimated
        if not response.text.strip():
            raise HelperFailed("the helper's reply was empty")
        return HelperReply(response.text, distill(response.text), response.usage)
