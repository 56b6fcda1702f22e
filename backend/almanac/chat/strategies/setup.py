"""Building the loop that answers one chat query, by its strategy (the chat run calls these).

Boost in the chat service: the planner is the configured boost model (`BOOST_BASE_URL`,
`BOOST_MODEL`), else the chat model itself plans for itself; it sees the query's assembled context
(within the window, tool results and summaries marked as data) and the tools as text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Protocol

from almanac.chat.events import ChatEvent
from almanac.chat.strategies.boost import BoostLoop, boost_turn_loop
from almanac.chat.strategies.planner import Planner
from almanac.chat.turn import TurnLoop
from almanac.llm.base import ModelContextTooLong
from almanac.llm.messages import ModelRequest
from almanac.memory.context import ContextOverflow, QueryPrompt, assemble

if TYPE_CHECKING:
    from almanac.chat.service import ChatService


class AnswerLoop(Protocol):
    """What a chat run iterates: events, then how it ended."""

    turns: int
    stop_reason: str

    def run(self) -> AsyncIterator[ChatEvent]: ...


def boost_for(service: ChatService, prompt: QueryPrompt, new_loop: Callable[[str], TurnLoop]) -> BoostLoop:
    """A boost loop for one query: planner → executor (`new_loop(system)`, the ordinary turn loop
    with the plan in its system prompt)."""
    strategies = service.strategies
    planner = Planner(
        strategies.planner or service.model,
        template=strategies.planner_template,
        timeout_s=strategies.planner_timeout_s,
        max_tokens=service.limits.loop.max_tokens,
    )
    specs = service.registry.specs() if service.model.supports_tools else ()
    try:
        view = assemble(prompt, system=service.system_prompt, tools=specs)
    except ContextOverflow as exc:
        raise ModelContextTooLong(str(exc)) from None
    return boost_turn_loop(
        planner=planner,
        executor=service.model,
        system=service.system_prompt,
        conversation=ModelRequest(service.system_prompt, view.messages, tuple(specs)),
        new_loop=new_loop,
    )
