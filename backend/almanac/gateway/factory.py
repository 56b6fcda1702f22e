"""Assembling the gateway from plain configuration values (the composition root reads `Settings`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from almanac.auth.service import AccountService
from almanac.billing.ledger import ChargeContext, CreditService
from almanac.billing.pricing import BillingCategory, tool_call_cost
from almanac.gateway.auth import KeyCache
from almanac.gateway.boost import BoostSettings
from almanac.gateway.errors import GatewayError
from almanac.gateway.http import HttpPool
from almanac.gateway.openai_upstream import SystemMode
from almanac.gateway.plans import PlanCache
from almanac.gateway.server_tools import GatewaySearch
from almanac.gateway.service import GatewayService
from almanac.gateway.tiers import Tier, TierMap, Upstream
from almanac.gateway.upstreams import AnthropicUpstream, ModelUpstream, OpenAIUpstream, TextToolUpstream
from almanac.gateway.upstreams import Upstream as UpstreamClient
from almanac.gateway.usage import UsageRecorder
from almanac.llm.base import Model
from almanac.ops.limits import Limiter
from almanac.storage.db import Database
from almanac.tools.builtin.web_search import SearchProvider


@dataclass(frozen=True)
class BoostConfig:
    base_url: str
    api_key: str | None
    model: str
    tiers: frozenset[Tier]
    template: str | None = None
    timeout_s: float = 60.0
    plan_reuse: bool = True  # BOOST_PLAN_REUSE
    stream_summary: bool = True  # BOOST_STREAM_SUMMARY


@dataclass(frozen=True)
class GatewayConfig:
    default_upstream: Upstream
    big_model: str = ""
    middle_model: str = ""
    small_model: str = ""
    openai_base_url: str | None = None
    openai_api_key: str | None = None
    anthropic_base_url: str | None = None
    anthropic_api_key: str | None = None
    timeout_s: float = 120.0
    credits_per_1k_tokens: float = 0.0
    key_cache_ttl_s: float = 5.0
    max_output_tokens: int = 4096  # the planner's max_tokens (the executor gets the client's, see tier_max_tokens)
    tier_max_tokens: Mapping[Tier, int] = field(default_factory=dict)  # per-tier cap; 0 or absent: the model's limit
    system_messages: SystemMode = "auto"  # OPENAI_SYSTEM_MESSAGES
    stream_hold_s: float = 20.0  # GATEWAY_STREAM_HOLD_S
    native_tools: str = "true"  # OpenAI-compatible upstream: "true", "false" (text protocol), "auto"
    text_tool_format: str = "concise"
    boost: BoostConfig | None = None


def build_gateway(
    config: GatewayConfig,
    *,
    accounts: AccountService,
    credits: CreditService,
    database: Database,
    offline: Model,
    planner: Model | None = None,
    limiter: Limiter | None = None,
    search: SearchProvider | None = None,
    search_count: int = 5,
) -> GatewayService:
    """The gateway `config` describes. `offline` answers when no upstream is configured; `planner`
    replaces the boost model built from `config.boost` (tests pass their own); `limiter` limits
    each user's requests and open streams; `search` runs web search server tools (billed like the
    chat's `web_search` tool when gateway billing is on)."""
    http = HttpPool(read_timeout_s=config.timeout_s)
    upstreams: dict[Upstream, UpstreamClient] = {"offline": ModelUpstream(offline)}
    if config.openai_base_url or config.openai_api_key:
        native = OpenAIUpstream(
            http,
            base_url=config.openai_base_url or "https://api.openai.com/v1",
            api_key=config.openai_api_key,
            timeout_s=config.timeout_s,
            system_messages=config.system_messages,
        )
        upstreams["openai"] = (
            native
            if config.native_tools == "true"
            else TextToolUpstream(native, text_tool_model(config), mode=config.native_tools)
        )
    if config.anthropic_api_key:
        upstreams["anthropic"] = AnthropicUpstream(
            http, base_url=config.anthropic_base_url, api_key=config.anthropic_api_key, timeout_s=config.timeout_s
        )
    boost = None
    if config.boost is not None and config.boost.tiers:
        if planner is None:
            from almanac.llm.providers import ProviderConfig, build_model

            planner = build_model(
                ProviderConfig(
                    "openai",
                    config.boost.model,
                    config.boost.api_key,
                    config.boost.base_url,
                    timeout_s=config.boost.timeout_s,
                    max_retries=0,  # a failed plan is not retried: the direct path is the fallback
                )
            )
        boost = BoostSettings(
            planner=planner,
            tiers=config.boost.tiers,
            template=config.boost.template,
            timeout_s=config.boost.timeout_s,
            max_tokens=config.max_output_tokens,
            plans=PlanCache() if config.boost.plan_reuse else None,
            stream_summary=config.boost.stream_summary,
        )
    recorder = UsageRecorder(database, credits=credits, credits_per_1k_tokens=config.credits_per_1k_tokens)
    return GatewayService(
        keys=KeyCache(accounts.identify, ttl_s=config.key_cache_ttl_s),
        tiers=TierMap(config.default_upstream, config.big_model, config.middle_model, config.small_model),
        upstreams=upstreams,
        recorder=recorder,
        http=http,
        boost=boost,
        balance_check=BalanceCheck(credits) if recorder.billing else None,
        limiter=limiter,
        hold_s=config.stream_hold_s,
        search=GatewaySearch(search, search_count, SearchCharge(credits) if recorder.billing else None)
        if search is not None
        else None,
        output_caps={tier: cap for tier, cap in config.tier_max_tokens.items() if cap > 0},
    )


def text_tool_model(config: GatewayConfig) -> Callable[[str], Model]:
    """Builds, for an upstream model name, the OpenAI-compatible model speaking the text tool protocol."""
    from almanac.llm.providers.openai_compat import OpenAICompatModel
    from almanac.llm.render import ToolFormat
    from almanac.llm.text_tools import TextToolModel

    def build(name: str) -> Model:
        inner = OpenAICompatModel(
            model=name,
            api_key=config.openai_api_key,
            base_url=config.openai_base_url or "https://api.openai.com/v1",
            timeout_s=config.timeout_s,
            max_retries=0,  # the caller (an SDK, Claude Code) retries, as with every gateway error
        )
        return TextToolModel(inner, fmt=ToolFormat(config.text_tool_format))

    return build


class SearchCharge:
    """Pays for one web search the gateway runs, at the chat's price for the `web_search` tool."""

    def __init__(self, credits: CreditService) -> None:
        self._credits = credits
        self._cost = tool_call_cost(BillingCategory.TOOL, documentation_charged=False)

    async def __call__(self, user_id: str) -> bool:
        charge = await self._credits.debit(
            user_id=user_id, amount=self._cost, context=ChargeContext("gateway: web search")
        )
        return charge is not None


class BalanceCheck:
    """Refuses (402) a user whose balance is empty; a positive answer is trusted for a few seconds."""

    def __init__(self, credits: CreditService, *, ttl_s: float = 2.0) -> None:
        self._credits = credits
        self._ttl = ttl_s
        self._ok_until: dict[str, float] = {}

    async def __call__(self, user_id: str) -> None:
        now = time.monotonic()
        if self._ok_until.get(user_id, 0.0) > now:
            return
        balance = await self._credits.balance(user_id=user_id)
        if balance <= 0:
            raise GatewayError(
                402, "out of credits: the gateway is billed from the same credits as chat (see GET /api/credits)"
            )
        self._ok_until[user_id] = now + self._ttl
