"""Boost mode on the gateway: for the tiers in ENABLE_BOOST_SUPPORT, a planner model (BOOST_MODEL on
BOOST_BASE_URL) plans and the tier's own upstream model executes with the caller's tools.

The loop is `chat.strategies.boost_driver.run_boost` with Anthropic stream events as its events.
The planner sees the caller's conversation (tool results included) as text and the tools only as
text; the executor gets the caller's request with the plan appended to its system prompt and the
real `tools`. Tool use shows at the executor's first `tool_use` block start. Since the gateway
does not run tools, a round in which the executor calls a tool ends the request: the caller gets
the `tool_use` blocks, runs them, and its next request is planned again with the results in view.

`splice` turns the events of whichever sources answered (a SUMMARY, an executor run, the direct
path) into one valid Anthropic stream: one `message_start` (sent at once, so a streaming caller
has a valid stream from the start), blocks renumbered, one `message_delta` and `message_stop`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

from almanac.chat.strategies.boost import guidance_section
from almanac.chat.strategies.boost_driver import MAX_LOOPS, BoostReport, Plan, run_boost
from almanac.chat.strategies.planner import Planner, planner_view
from almanac.gateway.accumulate import UsageTally
from almanac.gateway.llm_bridge import message_start, model_request, text_events
from almanac.gateway.tiers import Route, Tier
from almanac.gateway.upstreams import Upstream
from almanac.gateway.wire import MessagesRequest
from almanac.llm.base import Model

Event = dict[str, Any]


@dataclass(frozen=True)
class BoostSettings:
    planner: Model
    tiers: frozenset[Tier]
    template: str | None = None
    timeout_s: float = 60.0
    max_tokens: int = 4096
    max_loops: int = MAX_LOOPS

    def applies(self, route: Route) -> bool:
        return route.tier is not None and route.tier in self.tiers


def with_system(body: dict[str, Any], extra: str) -> dict[str, Any]:
    """A copy of a Messages body with `extra` appended to its system prompt (string or blocks)."""
    system = body.get("system")
    if isinstance(system, list):
        return {**body, "system": [*system, {"type": "text", "text": extra}]}
    return {**body, "system": f"{system}\n\n{extra}" if system else extra}


@dataclass
class BoostRun:
    """One boosted request: its steps for the driver, its report and both models' usage."""

    settings: BoostSettings
    request: MessagesRequest
    route: Route
    upstream: Upstream
    report: BoostReport = field(default_factory=BoostReport)
    executor: UsageTally = field(default_factory=UsageTally)
    planner: Planner = field(init=False)

    def __post_init__(self) -> None:
        self.planner = Planner(
            self.settings.planner,
            template=self.settings.template,
            timeout_s=self.settings.timeout_s,
            max_tokens=self.settings.max_tokens,
        )

    # --- BoostSteps ----------------------------------------------------------------------------

    @property
    def has_tools(self) -> bool:
        return bool(self.request.tools) and self.request.tool_choice != "none"

    def execute(self, plan: Plan) -> AsyncIterator[Event]:
        body = with_system(self.request.body, guidance_section(plan))
        guided = replace(self.request, body=body)
        return self._tallied(self.upstream.stream(guided, self.route.model))

    def direct(self) -> AsyncIterator[Event]:
        return self._tallied(self.upstream.stream(self.request, self.route.model))

    async def answer(self, text: str) -> AsyncIterator[Event]:
        usage = self.planner.usage
        for event in text_events(
            self.request.model, text, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens
        ):
            yield event

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
        view = planner_view(model_request(self.request.body))
        driven = run_boost(self.planner, self, view, self.report, max_loops=self.settings.max_loops)
        return splice(driven, self.request.model)


async def splice(events: AsyncIterator[Event], model: str) -> AsyncIterator[Event]:
    """Several sources' complete streams as one valid stream (see the module docstring)."""
    yield message_start(model)
    position = 0
    indexes: dict[int, int] = {}
    stop_reason: str = "end_turn"
    usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}
    async for event in events:
        kind = event["type"]
        if kind == "message_start":
            indexes = {}
            started = event["message"].get("usage") or {}
            usage = {"input_tokens": int(started.get("input_tokens") or 0), "output_tokens": 0}
        elif kind == "message_delta":
            stop_reason = (event.get("delta") or {}).get("stop_reason") or stop_reason
            usage.update({k: int(v) for k, v in (event.get("usage") or {}).items() if isinstance(v, int)})
        elif kind == "content_block_start":
            indexes[event["index"]] = position
            position += 1
            yield {**event, "index": indexes[event["index"]]}
        elif kind in ("content_block_delta", "content_block_stop"):
            yield {**event, "index": indexes.get(event["index"], position - 1)}
    yield {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": usage}
    yield {"type": "message_stop"}
