"""Boost mode's planner: the prompt it gets (the wrapper template filled in) and one call to it.

The planner never receives a `tools` parameter: the tools are described as text in its message
(`render.concise_manifest`), so any model can plan, including ones whose provider disables tools.
Unlike the original boost proxy, it sees the conversation — earlier turns, the tool calls made and
their results (each cut to a bound, oldest turns dropped first when the transcript is too long) —
not only the last user message. Its reply is read as it streams (`sections.SummaryStream`): the
text of a SUMMARY is handed on as it arrives, and the complete reply is parsed into sections.

A failed call (an error, a timeout, a reply the model declares declined or a refusal) raises `PlannerFailed`; the
boost loop then falls back. The time limit covers the whole reply (it is checked at every piece the planner sends).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from almanac.chat.strategies.sections import Sections, SummaryStream
from almanac.llm.base import Model, ModelError
from almanac.llm.events import StreamEnd, TextDelta, UsageReport
from almanac.llm.messages import Message, ModelRequest, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock, Usage
from almanac.llm.render import concise_manifest
from almanac.text.marking import as_data

DEFAULT_TEMPLATE = """\
You are the planner. Another model, the executor, will carry out your plan: it can call the tools
listed below, you cannot. Reply in exactly one of these formats.

FORMAT 1 — when no tool is needed, answer the user yourself:
SUMMARY:
<the complete final answer for the user>

FORMAT 2 — when tools are needed:
ANALYSIS:
<your reasoning: what the user needs, what is known from the conversation and the tool results so
far, what is uncertain, which paths could work and which one you choose and why>

GUIDANCE:
<numbered, concrete instructions for the executor: which tools to call, in which order, with which
exact arguments, and what to do with the results>

Any other reply counts as a failed attempt and you will be asked again.

---
Attempt (loop): {loop_count} of {max_loops} (counted from 0)
Previous attempts:
{previous_attempts}

Conversation so far (latest last; tool results may be cut):
{conversation}

User request:
{user_request}

Available tools (described here only; the executor calls them):
{tools_text}

Notes: if you give GUIDANCE and the executor calls no tool, you will be asked again. Be specific:
name the tools and their arguments. If the tool results above already answer the request, reply
with SUMMARY.
"""
PLACEHOLDERS = ("loop_count", "max_loops", "previous_attempts", "user_request", "conversation", "tools_text")
RESULT_CHARS = 4_000  # one tool result as the planner sees it
TRANSCRIPT_CHARS = 60_000  # the whole conversation as the planner sees it
SYSTEM_CHARS = 6_000


class PlannerFailed(Exception):
    """The planner could not be asked (error, timeout); the message says why."""


@dataclass(frozen=True)
class Attempt:
    """A loop that did not end the request, for the next prompt's "Previous attempts"."""

    loop: int
    reply: str
    problem: str


@dataclass(frozen=True)
class PlannerView:
    """What the planner is shown of a request."""

    request: str
    conversation: str
    tools: tuple[ToolSpec, ...]


@dataclass(frozen=True)
class PlannerReply:
    text: str
    sections: Sections
    usage: Usage


def planner_view(request: ModelRequest) -> PlannerView:
    """The planner's view of a model request: the latest user text, the transcript, the tools."""
    latest = next(
        (m.text for m in reversed(request.messages) if m.role == "user" and m.text.strip()),
        "(no text: continue the task from the conversation and tool results)",
    )
    names = {b.id: b.name for m in request.messages for b in m.content if isinstance(b, ToolUseBlock)}
    lines = [_line(message, names) for message in request.messages]
    if request.system.strip():
        system = request.system.strip()
        cut = system if len(system) <= SYSTEM_CHARS else system[:SYSTEM_CHARS] + " […]"
        lines.insert(0, f"[System prompt of the application]\n{cut}")
    return PlannerView(latest, _fit(lines), tuple(request.tools))


def _line(message: Message, names: dict[str, str]) -> str:
    parts = []
    for block in message.content:
        if isinstance(block, TextBlock) and block.text.strip():
            parts.append(block.text.strip())
        elif isinstance(block, ToolUseBlock):  # a model chose the name and arguments: data, like results
            arguments = json.dumps(dict(block.input), ensure_ascii=False)[:1000]
            parts.append("(tool call:)\n" + as_data(f"{block.name} with {arguments}", source="tool call"))
        elif isinstance(block, ToolResultBlock):
            text = block.content if len(block.content) <= RESULT_CHARS else block.content[:RESULT_CHARS] + " […cut]"
            label = "error" if block.is_error else "result"
            parts.append(
                f"(tool {label}:)\n" + as_data(text, source=f"{label} of {names.get(block.tool_use_id, 'tool')}")
            )
    speaker = "User" if message.role == "user" else "Assistant"
    return f"{speaker}: " + "\n".join(parts)


def _fit(lines: list[str]) -> str:
    """The transcript within TRANSCRIPT_CHARS: the system prompt and the latest lines are kept."""
    kept: list[str] = []
    total = 0
    head = lines[:1] if lines and lines[0].startswith("[System prompt") else []
    body = lines[len(head) :]
    budget = TRANSCRIPT_CHARS - sum(len(line) for line in head)
    for line in reversed(body):
        if total + len(line) > budget and kept:
            kept.append(f"[{len(body) - len(kept)} earlier messages left out]")
            break
        kept.append(line)
        total += len(line)
    return "\n\n".join(head + list(reversed(kept)))


def render_prompt(template: str, view: PlannerView, *, loop: int, max_loops: int, attempts: Sequence[Attempt]) -> str:
    """The wrapper template filled in. Only the known placeholders are replaced (other braces stay);
    a template without `{conversation}` or `{tools_text}` gets them appended, so the planner always
    sees the conversation and the tools."""
    previous = (
        "\n".join(f"- loop {a.loop}: {a.problem}\n  reply was: {_quote(a.reply)}" for a in attempts)
        if attempts
        else "(none: this is the first attempt)"
    )
    values = {
        "loop_count": str(loop),
        "max_loops": str(max_loops),
        "previous_attempts": previous,
        "user_request": view.request,
        "conversation": view.conversation or "(empty)",
        "tools_text": concise_manifest(view.tools) if view.tools else "(none: plan from your own knowledge)",
    }
    prompt = template
    for name in PLACEHOLDERS:
        prompt = prompt.replace("{" + name + "}", values[name])
    if "{conversation}" not in template:
        prompt += f"\n\nConversation so far:\n{values['conversation']}"
    if "{tools_text}" not in template:
        prompt += f"\n\nAvailable tools:\n{values['tools_text']}"
    return prompt


def _quote(text: str, limit: int = 1_500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " […]"


class Planner:
    """Asks the planner model for SUMMARY or ANALYSIS + GUIDANCE; counts its usage."""

    def __init__(
        self, model: Model, *, template: str | None = None, timeout_s: float = 60.0, max_tokens: int = 4096
    ) -> None:
        self.model = model
        self.template = template or DEFAULT_TEMPLATE
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        self.usage = Usage()
        self.calls = 0
        self.estimated_calls = 0  # calls whose tokens the server did not report
        self.stop_reason = "end_turn"  # how the last reply ended ("max_tokens": a SUMMARY was cut)

    async def ask(self, view: PlannerView, *, loop: int, max_loops: int, attempts: Sequence[Attempt]) -> PlannerReply:
        """One planner call, to its end; raises `PlannerFailed` on an error or timeout."""
        async for item in self.stream(view, loop=loop, max_loops=max_loops, attempts=attempts, summary=False):
            if isinstance(item, PlannerReply):
                return item
        raise PlannerFailed("the planner's reply ended early")  # not reached: stream() ends with the reply

    async def stream(
        self, view: PlannerView, *, loop: int, max_loops: int, attempts: Sequence[Attempt], summary: bool = True
    ) -> AsyncIterator[str | PlannerReply]:
        """One planner call: the SUMMARY's text as it arrives (with `summary`), then the
        `PlannerReply`. Raises `PlannerFailed` on an error or timeout, also mid-summary."""
        prompt = render_prompt(self.template, view, loop=loop, max_loops=max_loops, attempts=attempts)
        request = ModelRequest("", (Message.user(prompt),), (), self.max_tokens, purpose="utility")
        self.calls += 1
        self.stop_reason = "end_turn"
        reader, usage, declined = SummaryStream(), Usage(), False
        deadline = time.monotonic() + self.timeout_s
        events = self.model.stream(request)
        try:
            while True:
                try:
                    event = await asyncio.wait_for(anext(events), max(0.0, deadline - time.monotonic()))
                except StopAsyncIteration:
                    break
                if isinstance(event, UsageReport):
                    usage = usage + event.usage
                elif isinstance(event, StreamEnd):
                    self.stop_reason = event.stop_reason
                    declined = event.declined or event.stop_reason == "refusal"
                elif isinstance(event, TextDelta) and (released := reader.feed(event.text)) and summary:
                    yield released
        except TimeoutError:
            raise PlannerFailed(f"the planner did not answer within {self.timeout_s:g} s") from None
        except ModelError as exc:
            raise PlannerFailed(f"the planner failed: {exc}") from None
        finally:
            self.usage = self.usage + usage
            self.estimated_calls += usage.estimated
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
        if declined:  # a model that says it cannot answer gave no plan and no SUMMARY, whatever its words look like
            raise PlannerFailed("the planner declined to plan")
        rest = reader.finish()
        if rest and summary:
            yield rest
        yield PlannerReply(reader.text, reader.sections, usage)
