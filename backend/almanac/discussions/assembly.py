"""The composition root's part for collaboration and discussions: which models are configured (the
catalog), who helps whom, and the discussion service — all from `Settings`.

Catalog names: the chat model by its model name (alias `chat`), the built-in offline model as
`offline` (alias `almanac-offline`), the summariser (SUMMARISER_MODEL), the boost planner
(BOOST_MODEL at BOOST_BASE_URL), the gateway's tiers (BIG_MODEL, MIDDLE_MODEL, SMALL_MODEL, with
their `anthropic:` / `openai:` / `offline:` prefixes; a tier whose provider has no key is left
out) and the collaboration helper (COLLABORATION_HELPER_MODEL and the pairs' secondaries).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from almanac.billing.ledger import CreditService
from almanac.chat.strategies.pairs import Collaboration, load_collaboration
from almanac.chat.strategies.relevance import RelevanceScorer
from almanac.chat.summaries import SummaryJobs
from almanac.chat.turn import LoopLimits
from almanac.config import ConfigError, Settings
from almanac.discussions.items import DiscussionItems
from almanac.discussions.service import DiscussionLimits, DiscussionService
from almanac.discussions.spec import Limits
from almanac.gateway.tiers import TierMap, split_target
from almanac.llm.base import Model
from almanac.llm.catalog import OFFLINE, ModelCatalog
from almanac.llm.providers import ProviderConfig
from almanac.llm.providers.offline import OfflineModel
from almanac.llm.tokens import context_window
from almanac.memory.context import Window
from almanac.memory.summarise import Summariser
from almanac.storage.db import Database
from almanac.tools.registry import ToolRegistry

_TIER_WORDS = {"BIG_MODEL": "opus", "MIDDLE_MODEL": "sonnet", "SMALL_MODEL": "haiku"}


def provider_for(settings: Settings, provider: str, model: str) -> ProviderConfig | None:
    """How to reach `model` on `provider` with this deployment's keys; None without them."""

    def secret(value: object) -> str | None:
        return value.get_secret_value() if value is not None else None  # type: ignore[attr-defined]

    if provider == "anthropic" and settings.anthropic_api_key is not None:
        return ProviderConfig(
            "anthropic",
            model,
            secret(settings.anthropic_api_key),
            settings.anthropic_base_url,
            settings.model_timeout_s,
            settings.model_max_retries,
        )
    if provider == "openai" and (settings.openai_base_url or settings.openai_api_key):
        return ProviderConfig(
            "openai",
            model,
            secret(settings.openai_api_key),
            settings.openai_base_url,
            settings.model_timeout_s,
            settings.model_max_retries,
            native_tools=settings.openai_native_tools,
            text_tool_format=settings.text_tool_format,
        )
    if provider == "offline":
        delay = settings.offline_token_delay_ms / 1000
        return ProviderConfig("offline", "almanac-offline", offline_token_delay_s=delay)
    return None


def build_catalog(settings: Settings, *, chat_model: Model, teach: Callable[[Model], None]) -> ModelCatalog:
    """Every configured model by name (see the module docstring). `teach` gives a separately built
    offline model the same tool rules as the chat model's."""
    catalog = ModelCatalog()
    catalog.alias("chat", catalog.add(role="chat", model=chat_model))
    offline = chat_model
    if chat_model.provider != "offline":
        offline = OfflineModel(token_delay_s=settings.offline_token_delay_ms / 1000)
        teach(offline)
    catalog.add(role="offline", model=offline)
    catalog.alias("almanac-offline", OFFLINE)
    chat_provider = settings.resolved_chat_provider
    if settings.summariser_model and (config := provider_for(settings, chat_provider, settings.summariser_model)):
        catalog.add(role="summariser", config=config)
    if settings.boost_base_url:
        key = settings.boost_api_key.get_secret_value() if settings.boost_api_key else None
        planner = ProviderConfig(
            "openai", settings.boost_model, key, settings.boost_base_url, settings.boost_timeout_s, max_retries=0
        )
        catalog.add(role="planner", config=planner)
    tiers = TierMap(settings.resolved_gateway_upstream, settings.big_model, settings.middle_model, settings.small_model)
    for tier, word in _TIER_WORDS.items():
        route = tiers.route(word)
        if route.model != word and (config := provider_for(settings, route.upstream, route.model)):
            catalog.add(role=tier, config=config)
    return catalog


def register_spec(catalog: ModelCatalog, settings: Settings, spec: str, *, role: str, setting: str) -> str:
    """The catalog name of a model a setting names: a configured name, `anthropic:<model>`,
    `openai:<model>`, `offline`, or a model on the chat provider; `ConfigError` if it cannot run."""
    spec = spec.strip()
    if spec in catalog:
        return catalog.resolve(spec)
    provider, model = split_target(spec, settings.resolved_chat_provider)
    config = provider_for(settings, provider, model)
    if config is None or (provider != "offline" and not model):
        raise ConfigError(f"{setting}: no configured model is named {spec!r}, and {provider} is not configured")
    return catalog.add(role=role, config=config)


def build_collaboration(settings: Settings, catalog: ModelCatalog) -> tuple[Collaboration, Model | None]:
    """The collaboration configuration (pairs named by catalog names) and the chat model's helper
    (None: the chat model helps itself)."""
    helper = settings.collaboration_helper_model.strip()
    defaults = Collaboration(
        helper=register_spec(catalog, settings, helper, role="helper", setting="COLLABORATION_HELPER_MODEL")
        if helper
        else "",
        threshold=settings.collaboration_threshold,
        max_retries=settings.collaboration_max_retries,
    )
    collaboration = load_collaboration(defaults, settings.collaboration_config)
    pairs = tuple(
        replace(
            pair,
            primary=catalog.resolve(pair.primary) if pair.primary in catalog else pair.primary,
            secondary=register_spec(catalog, settings, pair.secondary, role="helper", setting="COLLABORATION_CONFIG"),
        )
        for pair in collaboration.pairs
    )
    collaboration = replace(collaboration, pairs=pairs)
    chat = collaboration.pair_for(("chat", catalog.resolve("chat")))
    return collaboration, catalog.get(chat.secondary) if chat.secondary else None


def build_discussions(
    settings: Settings,
    *,
    database: Database,
    credits: CreditService,
    catalog: ModelCatalog,
    registry: ToolRegistry,
    summariser: Summariser,
    collaboration: Collaboration,
    relevance: RelevanceScorer | None,
) -> DiscussionService:
    """The discussion service over this deployment's models and tools."""
    items = DiscussionItems(database)

    def window_for(model: Model) -> Window:
        return Window.for_model(
            context_tokens=settings.model_context_tokens or context_window(model.name),
            max_output_tokens=settings.max_output_tokens,
            tool_result_tokens=settings.tool_result_max_tokens,
        )

    return DiscussionService(
        database=database,
        credits=credits,
        catalog=catalog,
        registry=registry,
        items=items,
        summaries=SummaryJobs(
            summariser, items, fallback_chars=settings.summary_fallback_chars, timeout_s=settings.model_timeout_s
        ),
        window_for=window_for,
        limits=DiscussionLimits(
            spec=Limits(settings.discussion_max_turns, settings.discussion_max_participants),
            loop=LoopLimits(settings.max_turns, settings.tool_timeout_s, settings.max_output_tokens),
            credit_limit=settings.max_query_credits,
            lease_s=settings.conversation_lease_s,
        ),
        collaboration=collaboration,
        relevance=relevance,
        helper_timeout_s=settings.model_timeout_s,
    )
