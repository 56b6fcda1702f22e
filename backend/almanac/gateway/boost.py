"""Boost mode on the gateway: for the tiers in ENABLE_BOOST_SUPPORT, a planner model (BOOST_MODEL on
BOOST_BASE_URL) plans and the tier's own upstream model executes with the caller's tools.

The loop is `chat.strategies.boost_driver.run_boost` with Anthropic stream events as its events.
A continuation of a user turn whose plan got the executor calling tools is executed with that
plan again, without asking the planner (`plans.PlanCache`; BOOST_PLAN_REUSE), unless the turn is
in trouble; a SUMMARY streams to the caller as the planner writes it.
The planner sees the caller's conversation (tool results included) as text and the tools only as
text; the executor gets the caller's request with the plan appended to its system prompt and the
real `tools`. Tool use shows at the executor's first `tool_use` block start. Since the gateway
does not run tools, a round in which the executor calls a tool ends the request: the caller gets
the `tool_use` blocks, runs them, and its next request is planned again with the results in view.

`splice` turns the events of whichever sources answered (a SUMMARY, an executor run, the direct
path) into one valid Anthropic stream: one `message_start` (`Head`: sent with the first output, or
earlier by the keep-alive if output is slow to come), blocks renumbered, one `message_delta` and
`message_stop`. Nothing is sent before the first output, so a refusal before it (the executor's
upstream answering 429, say) reaches the caller as the HTTP error it is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

from almanac.chat.strategies.boost import guidance_section
from almanac.chat.strategies.boost_driver import MAX_LOOPS, BoostReport, Plan, run_boost
from almanac.chat.strategies.planner import Planner, planner_view
from almanac.gateway.accumulate import UsageTally
from almanac.gateway.errors import GatewayError
from almanac.gateway.llm_bridge import message_start, model_request
from almanac.gateway.plans import PlanCache, Turn, turn_of
from almanac.gateway.tiers import Route, Tier
from almanac.gateway.upstreams import Upstream
from almanac.gateway.wire import MessagesRequest
from almanac.llm.base import Model, ModelError
from almanac.llm.tokens import output_limit

Event = dict[str, Any]


@dataclass(frozen=True)
class BoostSettings:
    planner: Model
    tiers: frozenset[Tier]
    template: str | None = None
    timeout_s: float = 60.0
    max_tokens: int = 4096
    max_loops: int = MAX_LOOPS
    plans: PlanCache | None = None  # a turn's plan reused for its tool round trips (None: plan each request)
    stream_summary: bool = True  # False: a SUMMARY is sent in one piece once complete (benchmarks compare)

    def applies(self, route: Route) -> bool:
        return route.tier is not None and route.tier in self.tiers


def with_system(body: dict[str, Any], extra: str) -> dict[str, Any]:
    """A copy of a Messages body with `extra` appended to its system prompt (string or blocks)."""
    system = body.get("system")
    if isinstance(system, list):
        return {**body, "system": [*system, {"type": "text", "text": extra}]}
    return {**body, "system": f"{system}\n\n{extra}" if system else extra}


class Head:
    """The stream's one `message_start`, given out once (by the first output or the keep-alive)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.sent = False

    def take(self) -> list[Event]:
        if self.sent:
            return []
        self.sent = True
        return [message_start(self.model)]


@dataclass
class BoostRun:
    """One boosted request: its steps for the driver, its report and both models' usage."""

    settings: BoostSettings
    request: MessagesRequest
    route: Route
    upstream: Upstream
    user_id: str = ""
    report: BoostReport = field(default_factory=BoostReport)
    executor: UsageTally = field(default_factory=UsageTally)
    planner: Planner = field(init=False)
    head: Head = field(init=False)
    plan: Plan | None = field(init=False, default=None)  # the plan the executor last ran with

    def __post_init__(self) -> None:
        self.head = Head(self.request.model)
        # The planner's SUMMARY may be the answer: it gets the caller's max_tokens where its model's
        # limit is known (never less than the planner's own setting).
        known = output_limit(self.settings.planner.name)
        wanted = min(self.request.max_tokens, known) if known else 0
        self.planner = Planner(
            self.settings.planner,
            template=self.settings.template,
            timeout_s=self.settings.timeout_s,
            max_tokens=max(self.settings.max_tokens, wanted),
        )

    # --- BoostSteps ----------------------------------------------------------------------------

    @property
    def has_tools(self) -> bool:
        return bool(self.request.tools) and self.request.tool_choice != "none"

    def execute(self, plan: Plan) -> AsyncIterator[Event]:
        self.plan = plan
        body = with_system(self.request.body, guidance_section(plan))
        guided = replace(self.request, body=body)
        return self._tallied(self.upstream.stream(guided, self.route.model))

    def direct(self) -> AsyncIterator[Event]:
        return self._tallied(self.upstream.stream(self.request, self.route.model))

    async def answer(self, pieces: AsyncIterator[str]) -> AsyncIterator[Event]:
        """The planner's SUMMARY as a text block, streamed as it arrives; the planner's usage in the
        closing `message_delta` (known once its reply is complete)."""
        yield message_start(self.request.model)
        yield {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        try:
            async for piece in pieces:
                yield {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}
        except ModelError as exc:
            raise GatewayError(502, str(exc)) from None
        usage = self.planner.usage
        yield {"type": "content_block_stop", "index": 0}
        yield {
            "type": "message_delta",
            "delta": {"stop_reason": self.planner.stop_reason, "stop_sequence": None},
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        }
        yield {"type": "message_stop"}

    def planned(self, plan: Plan) -> Event | None:
        return None

    def shows_tool_use(self, event: Event) -> bool:
        return event["type"] == "content_block_start" and event["content_block"].get("type") == "tool_use"

    def text_of(self, event: Event) -> str:
        if event["type"] == "content_block_delta" and event["delta"].get("type") == "text_delta":
            return str(event["delta"]["text"])
        return ""

    async def _tallied(self, batches: AsyncIterator[list[Event]]) -> AsyncIterator[Event]:
        attempt = UsageTally()
        async for batch in batches:
            for event in batch:
                attempt.observe(event)
                yield event
        self.executor.add(attempt)

    # --- the run -------------------------------------------------------------------------------

    def events(self) -> AsyncIterator[Event]:
        """The boosted answer as one Anthropic event stream."""
        plans = self.settings.plans
        turn = turn_of(self.request.body, user_id=self.user_id, model=self.request.model) if plans is not None else None
        kept = plans.take(turn) if plans is not None and turn is not None else None
        if kept is not None:
            self.report.outcome, self.report.loops = "reused", 0
            return splice(self.execute(kept), self.head)
        return splice(self._planned(turn), self.head)

    async def _planned(self, turn: Turn | None) -> AsyncIterator[Event]:
        view = planner_view(model_request(self.request.body))
        settings = self.settings
        async for event in run_boost(
            self.planner, self, view, self.report, max_loops=settings.max_loops, stream_summary=settings.stream_summary
        ):
            yield event
        if settings.plans is not None and turn is not None and self.report.outcome == "guided" and self.plan:
            settings.plans.put(turn, self.plan)


async def splice(events: AsyncIterator[Event], head: Head) -> AsyncIterator[Event]:
    """Several sources' complete streams as one valid stream (see the module docstring)."""
    position = 0
    indexes: dict[int, int] = {}
    stop_reason: str = "end_turn"
    stop_sequence: str | None = None
    usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}
    async for event in events:
        for start in head.take():
            yield start
        kind = event["type"]
        if kind == "message_start":
            indexes = {}
            started = event["message"].get("usage") or {}
            usage = {"input_tokens": int(started.get("input_tokens") or 0), "output_tokens": 0}
        elif kind == "message_delta":
            stop_reason = (event.get("delta") or {}).get("stop_reason") or stop_reason
            stop_sequence = (event.get("delta") or {}).get("stop_sequence")
            usage.update({k: int(v) for k, v in (event.get("usage") or {}).items() if isinstance(v, int)})
        elif kind == "content_block_start":
            indexes[event["index"]] = position
            position += 1
            yield {**event, "index": indexes[event["index"]]}
        elif kind in ("content_block_delta", "content_block_stop"):
            yield {**event, "index": indexes.get(event["index"], position - 1)}
    for start in head.take():
        yield start
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence},
        "usage": usage,
    }
    yield {"type": "message_stop"}
