"""Building the loop that answers one chat query, by its strategy (the chat run calls these).

Boost in the chat service: the planner is the configured boost model (`BOOST_BASE_URL`,
`BOOST_MODEL`), else the chat model itself plans for itself; it sees the query's assembled context
(within the window, tool results and summaries marked as data) and the tools as text.

Collaborate: the chat model is the primary; its helper is the configured one (its pair's secondary,
else COLLABORATION_HELPER_MODEL), else the chat model itself. Each attempt is an ordinary turn loop
with the query's hooks; a retry starts with the earlier attempt's tool turns and counts them
against the turn limit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Protocol

from almanac.chat.events import ChatEvent
from almanac.chat.runtime import RunContext
from almanac.chat.strategies.boost import BoostLoop, boost_turn_loop
from almanac.chat.strategies.collaborate import collaborate_turn_loop
from almanac.chat.strategies.planner import Planner
from almanac.chat.strategies.relevance import LexicalRelevance
from almanac.chat.turn import LoopHooks, TurnLoop
from almanac.llm.base import ModelContextTooLong
from almanac.llm.messages import ModelRequest
from almanac.memory.context import ContextOverflow, QueryPrompt, assemble


class AnswerLoop(Protocol):
    """What a chat run iterates: events, then how it ended."""

    turns: int
    stop_reason: str

    def run(self) -> AsyncIterator[ChatEvent]: ...


def boost_for(context: RunContext, prompt: QueryPrompt, new_loop: Callable[[str], TurnLoop]) -> BoostLoop:
    """A boost loop for one query: planner → executor (`new_loop(system)`, the ordinary turn loop
    with the plan in its system prompt)."""
    strategies = context.strategies
    planner = Planner(
        strategies.planner or context.model,
        template=strategies.planner_template,
        timeout_s=strategies.planner_timeout_s,
        max_tokens=context.limits.loop.max_tokens,
    )
    specs = context.registry.specs() if context.model.supports_tools else ()
    try:
        view = assemble(prompt, system=context.system_prompt, tools=specs)
    except ContextOverflow as exc:
        raise ModelContextTooLong(str(exc)) from None
    return boost_turn_loop(
        planner=planner,
        executor=context.model,
        system=context.system_prompt,
        conversation=ModelRequest(context.system_prompt, view.messages, tuple(specs)),
        new_loop=new_loop,
        stream_summary=strategies.stream_summary,
    )


def collaborate_for(context: RunContext, prompt: QueryPrompt, hooks: LoopHooks, *, where: str = "") -> AnswerLoop:
    """A collaboration loop for one query (the chat model as primary), or, with collaboration
    turned off in COLLABORATION_CONFIG, the plain turn loop."""
    strategies, limits = context.strategies, context.limits.loop
    collaboration = strategies.collaboration
    if not collaboration.enabled:
        return TurnLoop(
            model=context.model,
            system=context.system_prompt,
            prompt=prompt,
            registry=context.registry,
            hooks=hooks,
            limits=limits,
        )
    return collaborate_turn_loop(
        primary=context.model,
        helper=strategies.helper,
        pair=collaboration.pair_for(("chat", context.model.name)),
        system=context.system_prompt,
        task=prompt.query_text,
        prompt=prompt,
        registry=context.registry,
        hooks=hooks,
        limits=limits,
        relevance=strategies.relevance or LexicalRelevance(),
        helper_timeout_s=strategies.helper_timeout_s,
        where=where,
    )
