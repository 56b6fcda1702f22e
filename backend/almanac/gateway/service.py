"""`GatewayService`: Anthropic Messages requests in, answers from the configured upstreams out.

Per request: the API key is identified (cached, `auth.KeyCache`); the body is checked
(`wire.parse_messages_request`); the model name picks a tier, an upstream and an upstream model
(`tiers.TierMap`); boost mode takes over for the tiers it is enabled for (`boost.BoostRun`);
otherwise the upstream answers directly. A streaming request's first event is awaited before the
response starts, so a failure before any output is a proper HTTP error (a boosted stream waits
up to `hold_s` for it, then starts and pings: `keepalive.py`); later failures end the stream with
an `error` event. Every request is recorded (`usage.UsageRecorder`, off the request
path): user, key, models, tokens in/out (the planner's apart), latency, time to first token,
status. An upstream that reports no usage gets its tokens estimated (`estimate.py`), and the row
says so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import orjson

from almanac.auth.service import Identity
from almanac.gateway.accumulate import UsageTally, accumulate
from almanac.gateway.auth import KeyCache, api_key_from
from almanac.gateway.boost import BoostRun, BoostSettings
from almanac.gateway.errors import GatewayError
from almanac.gateway.estimate import content_pieces, fill_tally
from almanac.gateway.http import HttpPool, sse_event, sse_events
from almanac.gateway.keepalive import PING, held_then_pinged
from almanac.gateway.server_tools import GatewaySearch, WebSearchRun, web_search_tool
from almanac.gateway.tiers import TIERS, Route, Tier, TierMap, Upstream
from almanac.gateway.upstreams import Upstream as UpstreamClient
from almanac.gateway.usage import UsageRecorder
from almanac.gateway.wire import MessagesRequest, check_messages, checked_model, parse_json, parse_messages_request
from almanac.llm.tokens import output_limit
from almanac.ops.limits import Limiter, RateLimited, StreamSlot
from almanac.storage.gateway import GatewayUsageRecord

log = logging.getLogger(__name__)
Event = dict[str, Any]
CANCELLED = 499  # the caller went away (nginx's convention)
MODEL_LIST_DATE = "2025-01-01T00:00:00Z"
COUNT_TOKENS_BUDGET = "count_tokens"  # its own requests-per-minute budget, the plan's allowance


@dataclass(frozen=True)
class JsonReply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})


@dataclass(frozen=True)
class StreamReply:
    chunks: AsyncIterator[bytes]


@dataclass
class _Call:
    """What is recorded about one request."""

    identity: Identity
    request: MessagesRequest
    route: Route
    started: float
    tally: UsageTally = field(default_factory=UsageTally)
    first_token_ms: int | None = None
    boost: BoostRun | None = None


KEEPALIVE_S = 5.0
HOLD_S = 20.0
KEEPALIVE = b'event: ping\ndata: {"type": "ping"}\n\n'  # as Anthropic's API sends (after message_start)


class GatewayService:
    def __init__(
        self,
        *,
        keys: KeyCache,
        tiers: TierMap,
        upstreams: Mapping[Upstream, UpstreamClient],
        recorder: UsageRecorder,
        http: HttpPool,
        boost: BoostSettings | None = None,
        balance_check: Any = None,
        limiter: Limiter | None = None,
        keepalive_s: float = KEEPALIVE_S,
        hold_s: float = HOLD_S,
        output_caps: Mapping[Tier, int] | None = None,
        search: GatewaySearch | None = None,
    ) -> None:
        self.keys = keys
        self.tiers = tiers
        self.upstreams = dict(upstreams)
        self.recorder = recorder
        self.http = http
        self.boost = boost
        self._balance_check = balance_check
        self.limiter = limiter  # per-user requests per minute and open streams (429 rate_limit_error)
        self.keepalive_s = keepalive_s  # boost streams: a ping this often while the planner thinks…
        self.hold_s = hold_s  # …once the response head has waited this long for output (gateway/keepalive.py)
        self.search = search  # runs web search server tools for non-Anthropic upstreams (server_tools.py)
        self.output_caps = dict(output_caps or {})  # per tier: most output tokens an upstream is asked for

    async def close(self) -> None:
        """Flush usage and close upstream connections."""
        await self.recorder.close()
        await self.http.close()

    def _upstream(self, route: Route) -> UpstreamClient:
        upstream = self.upstreams.get(route.upstream)
        if upstream is None:
            raise GatewayError(
                404, f"model {route.requested!r} maps to the {route.upstream} upstream, which is not configured"
            )
        return upstream

    async def _identify(self, headers: Mapping[str, str]) -> Identity:
        identity = await self.keys.identity(api_key_from(headers))
        if self._balance_check is not None:
            await self._balance_check(identity.user.id)
        return identity

    # --- POST /v1/messages -----------------------------------------------------------------------

    async def admit(self, headers: Mapping[str, str]) -> Identity:
        """The caller of a Messages request, from its headers alone: 401 (no or a bad key), 402 (no
        credits) or 429 (over the per-user rate) before any of its body is read."""
        identity = await self._identify(headers)
        await self._check_rate(identity)
        return identity

    async def admit_count(self, headers: Mapping[str, str]) -> Identity:
        """The caller of a count_tokens request, from its headers alone: 401, or 429 over the per-user
        rate (a budget of its own, `COUNT_TOKENS_BUDGET`, so counting never starves real requests)."""
        identity = await self.keys.identity(api_key_from(headers))
        await self._check_rate(identity, budget=COUNT_TOKENS_BUDGET)
        return identity

    async def messages(
        self, headers: Mapping[str, str], raw: bytes, *, identity: Identity | None = None
    ) -> JsonReply | StreamReply:
        """Answer one Messages request (see the module docstring); `identity` is the caller `admit`
        already accepted (else the headers are checked here)."""
        started = time.perf_counter()
        identity = identity or await self.admit(headers)
        request = parse_messages_request(raw, headers)
        route = self.tiers.route(request.model)
        request = replace(request, output_cap=self.output_cap(route))
        call = _Call(identity, request, route, started)
        upstream = self._upstream(route)
        search_tool = self._search_tool(request, route)
        if search_tool is not None:
            batches = _one_by_one(self._web_search(request, route, upstream, search_tool, identity).events())
        elif (boost := self._boost_for(request, route)) is not None:
            call.boost = BoostRun(boost, request, route, upstream, user_id=identity.user.id)
            batches = _one_by_one(call.boost.events())
            if request.stream:
                # A plan takes seconds (and held-back executor output more): hold the response head
                # a while for a refusal's proper status, then keep the stream visibly alive.
                batches = held_then_pinged(
                    batches, head=call.boost.head.take, hold_s=self.hold_s, interval_s=self.keepalive_s
                )
        elif request.stream:
            batches = upstream.stream(request, route.model)
        else:
            return await self._create(call, upstream)
        if not request.stream:
            return await self._collect(call, batches)
        slot = await self._open_stream(identity)
        try:
            first = await anext(batches)
        except BaseException as exc:
            if slot is not None:
                slot.release()
            if isinstance(exc, GatewayError):
                self._record(call, exc.status, exc.error_type)
            raise
        return StreamReply(self._relay(call, first, batches, slot))

    def _boost_for(self, request: MessagesRequest, route: Route) -> BoostSettings | None:
        """Boost runs for its tiers, but not where a plan has nothing to add: `tool_choice: none`
        (no call to plan) and structured output (a planner's SUMMARY would not follow the schema)."""
        boost = self.boost
        if boost is None or not boost.applies(route) or not request.tools_allowed or request.structured:
            return None
        return boost

    def _search_tool(self, request: MessagesRequest, route: Route) -> dict[str, Any] | None:
        """The request's web search server tool, when the gateway runs it (not for the Anthropic
        API, which runs its own); a 400 for any tool it cannot provide."""
        if route.upstream == "anthropic" or not request.tools:
            return None
        return web_search_tool(request, available=self.search is not None)

    def _web_search(
        self, request: MessagesRequest, route: Route, upstream: UpstreamClient, tool: dict[str, Any], identity: Identity
    ) -> WebSearchRun:
        assert self.search is not None
        charge, user_id = self.search.charge, identity.user.id
        pay = (lambda: charge(user_id)) if charge is not None else None
        return WebSearchRun(
            request, route.model, upstream, self.search.provider, tool, count=self.search.count, pay=pay
        )

    def output_cap(self, route: Route) -> int | None:
        """The most output tokens a request on `route` is given: the tier's setting, else (but for
        the Anthropic API, which knows its own models) the model's known limit; the client's
        max_tokens stands below it."""
        cap = self.output_caps.get(route.tier) if route.tier else None
        if cap is None and route.upstream != "anthropic":
            cap = output_limit(route.model)
        return cap

    async def _check_rate(self, identity: Identity, *, budget: str = "") -> None:
        if self.limiter is not None:
            try:
                await self.limiter.check_rate(user_id=identity.user.id, plan=identity.user.plan, budget=budget)
            except RateLimited as exc:
                raise limit_error(exc) from None

    async def _open_stream(self, identity: Identity) -> StreamSlot | None:
        if self.limiter is None:
            return None
        try:
            return await self.limiter.open_stream(user_id=identity.user.id, kind="gateway")
        except RateLimited as exc:
            raise limit_error(exc) from None

    async def _create(self, call: _Call, upstream: UpstreamClient) -> JsonReply:
        try:
            message = await upstream.create(call.request, call.route.model)
        except GatewayError as exc:
            self._record(call, exc.status, exc.error_type)
            raise
        self._usage_from_message(call, message)
        self._record(call, 200, None)
        return JsonReply(200, orjson.dumps(message))

    async def _collect(self, call: _Call, batches: AsyncIterator[list[Event]]) -> JsonReply:
        collected: list[Event] = []
        try:
            async for batch in batches:
                collected += batch
        except GatewayError as exc:
            self._record(call, exc.status, exc.error_type)
            raise
        message = accumulate(collected)
        self._usage_from_message(call, message)
        self._record(call, 200, None)
        return JsonReply(200, orjson.dumps(message))

    @staticmethod
    def _usage_from_message(call: _Call, message: dict[str, Any]) -> None:
        usage = message.get("usage") or {}
        call.tally.input_tokens = int(usage.get("input_tokens") or 0) + int(usage.get("cache_read_input_tokens") or 0)
        call.tally.output_tokens = int(usage.get("output_tokens") or 0)
        if not call.tally.output_tokens:  # kept for an estimate: the upstream reported no output
            call.tally.produced = content_pieces(message.get("content") or [])

    async def _relay(
        self, call: _Call, first: list[Event], batches: AsyncIterator[list[Event]], slot: StreamSlot | None = None
    ) -> AsyncIterator[bytes]:
        """The SSE bytes of a stream, one write per batch; the usage row is written (and the stream's
        slot given back) however it ends."""
        status, error_type = CANCELLED, None
        try:
            batch: list[Event] | None = first
            while batch is not None:
                if batch is PING:
                    yield KEEPALIVE
                    batch = await anext(batches, None)
                    continue
                for event in batch:
                    if call.first_token_ms is None and event["type"] == "content_block_delta":
                        call.first_token_ms = int((time.perf_counter() - call.started) * 1000)
                    call.tally.observe(event)
                yield sse_events(batch)
                batch = await anext(batches, None)
            status = 200
        except GatewayError as exc:
            status, error_type = 200, exc.error_type
            yield sse_event({"type": "error", "error": {"type": exc.error_type, "message": exc.message}})
        finally:
            self._record(call, status, error_type)
            if slot is not None:
                slot.release()

    def _record(self, call: _Call, status: int, error_type: str | None) -> None:
        boost = call.boost
        tally = boost.executor if boost is not None else call.tally
        estimated = call.request.usage.estimated
        # An answer (or part of one) is never free for want of usage; a boost whose executor never
        # ran (the planner answered) has nothing to estimate for it.
        if (status == 200 and boost is None) or tally.produced:
            estimated = fill_tally(tally, call.request.body) or estimated
        self.recorder.record(
            GatewayUsageRecord(
                user_id=call.identity.user.id,
                api_key_id=call.identity.api_key_id,
                model=call.request.model[:200],
                upstream=call.route.upstream,
                upstream_model=call.route.model[:200],
                stream=call.request.stream,
                input_tokens=tally.input_tokens,
                output_tokens=tally.output_tokens,
                latency_ms=int((time.perf_counter() - call.started) * 1000),
                first_token_ms=call.first_token_ms,
                status=status,
                error_type=error_type,
                created_at=datetime.now(UTC),
                planner_model=boost.settings.planner.name if boost else None,
                planner_input_tokens=boost.planner.usage.input_tokens if boost else 0,
                planner_output_tokens=boost.planner.usage.output_tokens if boost else 0,
                usage_estimated=estimated,
                planner_usage_estimated=boost.planner.usage.estimated if boost else False,
                boost_loops=boost.report.loops if boost else 0,
                boost_outcome=boost.report.outcome if boost else None,
            )
        )

    # --- POST /v1/messages/count_tokens, GET /v1/models ------------------------------------------

    async def count_tokens(
        self, headers: Mapping[str, str], raw: bytes, *, identity: Identity | None = None
    ) -> JsonReply:
        """`{"input_tokens": n}` for a request body (the upstream counts when it can; else an estimate).
        Counting is under the per-user rate limit, in a budget of its own (`COUNT_TOKENS_BUDGET`)."""
        if identity is None:
            await self.admit_count(headers)
        body = parse_json(raw)
        model = checked_model(body.get("model"))
        check_messages(body)
        route = self.tiers.route(model)
        tokens = await self._upstream(route).count_tokens(body, route.model)
        return JsonReply(200, orjson.dumps({"input_tokens": tokens}))

    async def models(self, headers: Mapping[str, str]) -> JsonReply:
        """The model names the gateway answers to: one per tier (and where it goes)."""
        await self.keys.identity(api_key_from(headers))
        return JsonReply(200, orjson.dumps(self.model_list()))

    def model_list(self) -> dict[str, Any]:
        names = {"BIG_MODEL": "claude-opus-4-6", "MIDDLE_MODEL": "claude-sonnet-4-6", "SMALL_MODEL": "claude-haiku-4-5"}
        data = []
        for tier in TIERS:
            route = self.tiers.route(names[tier])
            boost = " + boost" if self.boost is not None and tier in self.boost.tiers else ""
            data.append(
                {
                    "type": "model",
                    "id": names[tier],
                    "display_name": f"{names[tier]} → {route.upstream}/{route.model}{boost}",
                    "created_at": MODEL_LIST_DATE,
                }
            )
        return {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}

    async def model(self, headers: Mapping[str, str], model_id: str) -> JsonReply:
        """One model of the list; 404 for others."""
        listing = (await self.models(headers), self.model_list())[1]
        for entry in listing["data"]:
            if entry["id"] == model_id:
                return JsonReply(200, orjson.dumps(entry))
        raise GatewayError(404, f"model {model_id!r} is not listed (any name with opus, sonnet or haiku works)")


def limit_error(exc: RateLimited) -> GatewayError:
    """A limit's refusal in Anthropic's shape: 429 `rate_limit_error` with `retry-after`."""
    return GatewayError(429, str(exc), error_type="rate_limit_error", retry_after=str(exc.retry_after_s))


async def _one_by_one(events: AsyncIterator[Event]) -> AsyncIterator[list[Event]]:
    async for event in events:
        yield [event]
