"""The composition root: `create_app(settings)` builds every service from `Settings` and wires the
HTTP routes. Nothing below this module reads configuration on its own."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

from fastapi import APIRouter, FastAPI
from pydantic import SecretStr

from almanac import __version__
from almanac.admin.service import AdminService
from almanac.api.admission import Admission
from almanac.api.docs import mount_api_docs
from almanac.api.errors import UnhandledErrors, install_error_handlers
from almanac.api.guards import HostRules, RequestGuard
from almanac.api.rate_limits import LIMITED
from almanac.api.responses import errors
from almanac.api.routes import admin as admin_route
from almanac.api.routes import (
    auth,
    chat,
    conversations,
    credits,
    health,
    integrations,
    keys,
    me,
    server_config,
    tools,
)
from almanac.api.routes import billing as billing_route
from almanac.api.routes import discussions as discussions_route
from almanac.api.routes import gateway as gateway_route
from almanac.api.routes import metrics as metrics_route
from almanac.api.routes import usage as usage_route
from almanac.api.web import SecurityHeaders, mount_web_ui
from almanac.auth.local import LocalSignIn, announce_sign_in_link, ensure_local_user, link_base_url
from almanac.auth.service import AccountService
from almanac.billing.adjustments import CreditAdjustments
from almanac.billing.events import BillingEvents
from almanac.billing.ledger import CreditService
from almanac.billing.payments import StripeConfig, StripePayments
from almanac.billing.service import BillingService
from almanac.chat.run import RunStopped
from almanac.chat.service import ChatLimits, ChatService, Strategies
from almanac.chat.strategies.relevance import relevance_scorer
from almanac.chat.summaries import SummaryJobs
from almanac.chat.turn import LoopLimits
from almanac.config import Settings
from almanac.discussions.assembly import build_catalog, build_collaboration, build_discussions
from almanac.discussions.service import DiscussionService
from almanac.gateway.factory import BoostConfig, GatewayConfig, build_gateway
from almanac.gateway.service import GatewayService
from almanac.integrations import TokenVault
from almanac.integrations.secret_key import SecretKey, resolve_secret_key
from almanac.llm.base import Model
from almanac.llm.providers import ProviderConfig, build_model
from almanac.llm.tokens import context_window
from almanac.mcp_client import McpClient, build_mcp_client, teach
from almanac.memory.context import Window
from almanac.memory.conversations import ConversationService
from almanac.memory.history import HistoryStore
from almanac.memory.summarise import ExtractiveSummariser, ModelSummariser, Summariser
from almanac.ops.http_metrics import HttpMetrics
from almanac.ops.limits import LimitConfig
from almanac.ops.metered import MeteredCredits, chat_observer, gateway_observer, metered
from almanac.ops.operations import Operations, OpsConfig, build_operations
from almanac.ops.request_ids import RequestIds
from almanac.rag.documentation import DocConfig, build_documentation
from almanac.rag.local_index import IndexInputs
from almanac.rag.python_reference import python_docs
from almanac.services import Services
from almanac.startup import describe
from almanac.storage.db import Database
from almanac.tools.assembly import build_builtin_tools
from almanac.tools.builtin.documentation import DocumentationTool
from almanac.tools.builtin.full_context import FullContextTool
from almanac.tools.builtin.offline_rules import teach_tools
from almanac.tools.builtin.web_search import WebSearchTool
from almanac.tools.registry import ToolRegistry
from almanac.usage.service import UsageService

log = logging.getLogger("almanac")


def provider_config(settings: Settings, *, model: str | None = None) -> ProviderConfig:
    """The chat (or, with `model`, the summariser) model's provider configuration."""
    provider = settings.resolved_chat_provider
    if provider == "anthropic":
        key = settings.anthropic_api_key.get_secret_value() if settings.anthropic_api_key else None
        return ProviderConfig(
            "anthropic",
            model or settings.anthropic_model,
            key,
            settings.anthropic_base_url,
            settings.model_timeout_s,
            settings.model_max_retries,
        )
    if provider == "openai":
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        return ProviderConfig(
            "openai",
            model or settings.openai_model,
            key,
            settings.openai_base_url,
            settings.model_timeout_s,
            settings.model_max_retries,
            native_tools=settings.openai_native_tools,
            text_tool_format=settings.text_tool_format,
        )
    return ProviderConfig("offline", "almanac-offline", offline_token_delay_s=settings.offline_token_delay_ms / 1000)


def build_services(settings: Settings, *, model: Model | None = None, summariser: Summariser | None = None) -> Services:
    """Construct every service (no I/O happens here). `model` and `summariser` replace the
    configured ones (tests and benchmarks pass scripted fakes)."""
    database = Database(settings.resolved_database_url)
    history = HistoryStore(database)
    ops = build_operations(ops_config(settings))
    credit_service: CreditService = MeteredCredits(database, metrics=ops.metrics)
    model = model or build_model(provider_config(settings))
    window = Window.for_model(
        context_tokens=settings.model_context_tokens or context_window(model.name),
        max_output_tokens=settings.max_output_tokens,
        tool_result_tokens=settings.tool_result_max_tokens,
    )
    if summariser is None:
        summariser = ExtractiveSummariser(delay_s=settings.offline_summary_delay_ms / 1000)
        if model.provider in ("anthropic", "openai"):
            summariser_config = provider_config(settings, model=settings.summariser_model)
            summariser_model = metered(build_model(summariser_config), ops.metrics, source="summariser")
            # What the summariser reads must fit its own window (about 2.5 characters a token, safely).
            summariser_window = settings.model_context_tokens or context_window(summariser_model.name)
            summariser = ModelSummariser(
                summariser_model, max_input_chars=max(2_000, int(summariser_window * 2.5) - 4_000)
            )
    summaries = SummaryJobs(
        summariser, history, fallback_chars=settings.summary_fallback_chars, timeout_s=settings.model_timeout_s
    )
    documentation = build_documentation(doc_config(settings), database, model)
    registry = ToolRegistry(
        [
            # One part of a long item per call, sized to fit the current results' cap.
            FullContextTool(history, max_chars=window.tool_result_tokens * 3),
            DocumentationTool(documentation.pipeline, timeout_s=settings.doc_tool_timeout_s),
        ]
    )
    builtin = build_builtin_tools(settings, environ=os.environ, cwd=Path.cwd())
    for tool in builtin.tools:
        registry.register(tool)
    vault = token_vault(settings, database)
    mcp = build_mcp_client(settings, registry, environ=os.environ, cwd=Path.cwd(), tokens=vault)
    teach(model, mcp, documentation.library_names)
    teach_tools(model, documentation.library_names)

    def teach_offline(offline: Model) -> None:
        teach(offline, mcp, documentation.library_names)
        teach_tools(offline, documentation.library_names)

    catalog = build_catalog(settings, chat_model=model, teach=teach_offline)
    collaboration, helper = build_collaboration(settings, catalog)
    # The retrieval embedder measures how relevant an answer is (uncached: answers are not documents).
    relevance = relevance_scorer(getattr(documentation.embedder, "inner", documentation.embedder))
    limits = ChatLimits(
        max_message_chars=settings.max_message_chars,
        summary_wait_s=settings.summary_wait_s,
        lease_s=settings.conversation_lease_s,
        credit_limit=settings.max_query_credits,
        window=window,
        loop=LoopLimits(settings.max_turns, settings.tool_timeout_s, settings.max_output_tokens),
    )
    strategies = replace(
        chat_strategies(settings),
        helper=helper,
        collaboration=collaboration,
        relevance=relevance,
        helper_timeout_s=settings.model_timeout_s,
    )
    chat_service = ChatService(
        database=database,
        history=history,
        credits=credit_service,
        registry=registry,
        model=metered(model, ops.metrics),
        summaries=summaries,
        limits=limits,
        strategies=replace(strategies, planner=metered(strategies.planner, ops.metrics, source="planner")),
        observer=chat_observer(ops.metrics),
    )
    web = next((tool for tool in builtin.tools if isinstance(tool, WebSearchTool)), None)
    gateway = build_gateway(
        gateway_config(settings),
        accounts=AccountService(database),
        credits=credit_service,
        database=database,
        offline=build_model(provider_config(settings.model_copy(update={"chat_provider": "offline"}))),
        limiter=ops.limiter,
        search=web.provider if web is not None else None,
        search_count=web.count if web is not None else 5,
    )
    watch(ops, chat_service, gateway, mcp)
    billing, admin, usage = operations(settings, database, credit_service)
    discussions = build_discussions(
        settings,
        database=database,
        credits=credit_service,
        catalog=catalog,
        registry=registry,
        summariser=summariser,
        collaboration=collaboration,
        relevance=relevance,
    )
    ops.shutdown.on_deadline(discussions.stop_all)  # as for chat runs: what completed is kept and billed
    return Services(
        settings,
        database,
        AccountService(database, sessions_per_user=settings.sessions_per_user),
        credit_service,
        history,
        registry,
        model,
        summariser,
        summaries,
        chat_service,
        ConversationService(database),
        documentation,
        mcp=mcp,
        integrations=vault,
        tools=builtin,
        gateway=gateway,
        local_sign_in=LocalSignIn(data_dir=settings.data_dir, base_url=link_base_url(settings.host, settings.port))
        if settings.local_user
        else None,
        billing=billing,
        admin=admin,
        usage=usage,
        ops=ops,
        discussions=discussions,
    )


def discussion_router(settings: Settings, discussions: DiscussionService) -> APIRouter:
    """The discussion routes; their schema names this server's models and states its limits."""
    names = [name for entry in discussions.catalog.entries() for name in (entry.name, *entry.aliases)]
    limits = discussions.limits.spec
    return discussions_route.build_router(
        models=names, max_turns=limits.max_turns, max_participants=limits.max_participants
    )


def ops_config(settings: Settings) -> OpsConfig:
    """The limits, metrics and shutdown settings."""
    token = settings.metrics_token.get_secret_value() if settings.metrics_token is not None else None
    return OpsConfig(
        limits=LimitConfig(
            per_minute={"free": settings.rate_limit_free_per_min, "pro": settings.rate_limit_pro_per_min},
            max_streams=settings.max_concurrent_streams,
            slot_ttl_s=settings.stream_slot_ttl_s,
        ),
        redis_url=settings.redis_url,
        metrics_token=token,
        shutdown_grace_s=settings.shutdown_grace_s,
    )


def watch(ops: Operations, chat: ChatService, gateway: GatewayService, mcp: McpClient | None) -> None:
    """Connect operations to what they watch: the gateway's usage and the MCP servers' status feed
    the metrics; the end of the shutdown grace period stops the chat runs still answering."""
    gateway.recorder.observers.append(gateway_observer(ops.metrics))
    if mcp is not None:
        ops.metrics.watch_mcp(lambda: [(status.name, status.state, status.tools) for status in mcp.statuses()])
    stopping = RunStopped("the server is shutting down (restarting); what was answered so far is kept: ask again")
    ops.shutdown.on_deadline(lambda: chat.stop_all(stopping))


def stripe_config(settings: Settings) -> StripeConfig | None:
    """Stripe's configuration, or None when payments are off (no STRIPE_SECRET_KEY)."""
    if settings.stripe_secret_key is None or settings.stripe_webhook_secret is None:
        return None
    return StripeConfig(
        secret_key=settings.stripe_secret_key.get_secret_value(),
        webhook_secret=settings.stripe_webhook_secret.get_secret_value(),
        price_pro=settings.stripe_price_pro,
        price_pack=settings.stripe_price_pack,
        api_base=settings.stripe_api_base,
    )


def operations(
    settings: Settings, database: Database, credits: CreditService
) -> tuple[BillingService, AdminService, UsageService]:
    """Payments (Stripe when configured), administration and usage reports."""
    adjustments = CreditAdjustments(credits)
    config = stripe_config(settings)
    payments = StripePayments(config) if config is not None else None
    billing = BillingService(database, BillingEvents(database, adjustments), payments)
    return billing, AdminService(database, credits, adjustments), UsageService(database)


def token_vault(settings: Settings, database: Database) -> TokenVault:
    """Users' own integration tokens, encrypted with SECRET_KEY (or, on a local run, a generated
    key in the data folder); the key is resolved when the vault starts, not here."""
    secret = settings.secret_key.get_secret_value() if settings.secret_key is not None else None

    def load_key() -> SecretKey:
        return resolve_secret_key(secret, data_dir=settings.data_dir, local=settings.local_user)

    return TokenVault(database, load_key=load_key)


def boost_template(settings: Settings) -> str | None:
    """BOOST_WRAPPER_TEMPLATE: the template itself, or the file holding it."""
    template = settings.boost_wrapper_template
    if template and "\n" not in template and Path(template).expanduser().is_file():
        template = Path(template).expanduser().read_text(encoding="utf-8")
    return template or None


def chat_strategies(settings: Settings) -> Strategies:
    """What the chat service's boost and collaborate strategies use."""
    planner = None
    if settings.boost_base_url:
        key = settings.boost_api_key.get_secret_value() if settings.boost_api_key else None
        planner = build_model(
            ProviderConfig(
                "openai", settings.boost_model, key, settings.boost_base_url, settings.boost_timeout_s, max_retries=0
            )
        )
    return Strategies(
        default=settings.default_strategy,
        planner=planner,
        planner_template=boost_template(settings),
        planner_timeout_s=settings.boost_timeout_s,
        stream_summary=settings.boost_stream_summary,
    )


def gateway_config(settings: Settings) -> GatewayConfig:
    """The gateway's configuration (upstreams, tiers, billing, boost)."""

    def secret(value: SecretStr | None) -> str | None:
        return value.get_secret_value() if value is not None else None

    boost = None
    if settings.boost_base_url and settings.boost_tiers:
        template = boost_template(settings)
        boost = BoostConfig(
            base_url=settings.boost_base_url,
            api_key=secret(settings.boost_api_key),
            model=settings.boost_model,
            tiers=settings.boost_tiers,  # type: ignore[arg-type]
            template=template or None,
            timeout_s=settings.boost_timeout_s,
            plan_reuse=settings.boost_plan_reuse,
            stream_summary=settings.boost_stream_summary,
        )
    return GatewayConfig(
        default_upstream=settings.resolved_gateway_upstream,
        big_model=settings.big_model,
        middle_model=settings.middle_model,
        small_model=settings.small_model,
        openai_base_url=settings.openai_base_url,
        openai_api_key=secret(settings.openai_api_key),
        anthropic_base_url=settings.anthropic_base_url,
        anthropic_api_key=secret(settings.anthropic_api_key),
        timeout_s=settings.model_timeout_s,
        credits_per_1k_tokens=settings.gateway_credits_per_1k_tokens,
        key_cache_ttl_s=settings.gateway_key_cache_s,
        max_output_tokens=settings.max_output_tokens,
        tier_max_tokens={
            "BIG_MODEL": settings.big_model_max_tokens,
            "MIDDLE_MODEL": settings.middle_model_max_tokens,
            "SMALL_MODEL": settings.small_model_max_tokens,
        },
        system_messages=settings.openai_system_messages,
        stream_hold_s=settings.gateway_stream_hold_s,
        native_tools=settings.openai_native_tools,
        text_tool_format=settings.text_tool_format,
        boost=boost,
    )


def doc_config(settings: Settings) -> DocConfig:
    """Documentation retrieval's configuration."""

    def secret(value: SecretStr | None) -> str | None:
        return value.get_secret_value() if value is not None else None

    return DocConfig(
        source=settings.doc_source,
        recheck_s=settings.doc_source_recheck_s,
        context7_api_key=secret(settings.context7_api_key),
        context7_api_url=settings.context7_api_url,
        context7_timeout_s=settings.context7_timeout_s,
        cache_ttl_s=settings.doc_cache_ttl_s,
        embeddings=settings.embeddings,
        voyage_api_key=secret(settings.voyage_api_key),
        voyage_base_url=settings.voyage_base_url,
        voyage_embed_model=settings.voyage_embed_model,
        voyage_rerank_model=settings.voyage_rerank_model,
        reranker=settings.reranker,
        rerank_timeout_s=settings.rerank_timeout_s,
        rerank_max_candidates=settings.rerank_max_candidates,
        rerank_passage_chars=settings.rerank_passage_chars,
        rerank_fused_weight=settings.rerank_fused_weight,
        top_k=settings.rag_top_k,
        candidates=settings.rag_candidates,
        synonyms=settings.rag_synonyms,
        min_score=settings.rag_min_score,
        fusion=settings.fusion,
        rrf_k=settings.rrf_k,
        local_dense=settings.local_dense,
        inputs=IndexInputs(
            docs_paths=tuple(settings.resolved_docs_paths),
            packages=settings.docs_include_packages,
            stdlib=settings.docs_include_stdlib,
            introspect=settings.docs_introspect,
            python_docs=python_docs(settings.python_docs_dir),
        ),
        auto_index=settings.docs_auto_index,
        # A question asked during the first build waits for it, leaving time for the lookup itself.
        index_wait_s=max(0.0, settings.doc_tool_timeout_s - 15.0),
    )


def create_app(settings: Settings, services: Services | None = None) -> FastAPI:
    """The ASGI application. The database must already be migrated (`almanac db upgrade`)."""
    services = services or build_services(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if settings.local_user:
            await ensure_local_user(services.accounts, email=settings.local_user_email, data_dir=settings.data_dir)
        await services.accounts.purge_expired_sessions()
        await services.chat.sweep()  # queries left unfinished by a process that died
        if services.discussions is not None:
            await services.discussions.sweep()  # discussions left running by a process that died
        await services.documentation.start(services.database)
        if services.integrations is not None:
            await services.integrations.start()
        if services.mcp is not None:
            await services.mcp.start()
        if services.tools is not None:
            await services.tools.start(services.registry)  # the code sandbox's self-check
        for line in describe(settings, services):
            log.info(line)
        if services.local_sign_in is not None:
            announce_sign_in_link(services.local_sign_in, email=settings.local_user_email)
        yield
        await services.documentation.stop()
        await services.chat.drain(timeout_s=10)
        if services.discussions is not None:
            await services.discussions.drain(timeout_s=5)
        await services.summaries.drain(timeout_s=5)
        if services.mcp is not None:
            await services.mcp.stop()
        if services.tools is not None:
            services.tools.close()
        if services.gateway is not None:
            await services.gateway.close()
        if services.billing is not None:
            await services.billing.close()
        if services.ops is not None:
            await services.ops.close()
        await services.database.dispose()

    app = FastAPI(
        title="Almanac",
        version=__version__,
        summary="A documentation-aware, credit-metered chat API for developers.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.services = services
    # Before a route reads a body: who is calling (401s), and administrators' paths (404 to anyone else).
    app.add_middleware(Admission)
    # Next to innermost: an unexpected exception becomes one log record and a 500 that still gets the headers below.
    app.add_middleware(UnhandledErrors)
    # JSON may spend up to 12 bytes on one character (an escaped surrogate pair). Bodies on /v1/, the
    # gateway, may be as large as GATEWAY_MAX_BODY_MB: agent conversations are big.
    app.add_middleware(
        gateway_route.BodyLimits,
        max_bytes=settings.max_message_chars * 12 + 64_000,
        gateway_bytes=int(settings.gateway_max_body_mb * 1_000_000),
    )
    app.add_middleware(SecurityHeaders)
    # Added late, so it runs early: nothing else sees a request naming a host we do not serve.
    app.add_middleware(RequestGuard, hosts=HostRules.parse(settings.resolved_allowed_hosts))
    if services.ops is not None:  # outermost: every request is counted, and has its ID, refused or not
        app.add_middleware(HttpMetrics, metrics=services.ops.metrics)
    app.add_middleware(RequestIds)
    install_error_handlers(app)
    chat_router = chat.build_router(max_message_chars=settings.max_message_chars)  # its schema states the limit
    # The routes that start work are rate-limited per user (429s); /v1/messages limits itself.
    app.include_router(chat_router, dependencies=LIMITED, responses=errors(429))
    if services.discussions is not None:
        app.include_router(
            discussion_router(settings, services.discussions), dependencies=LIMITED, responses=errors(429)
        )
    for router in (
        health.router,
        auth.router,
        me.router,
        server_config.router,
        keys.router,
        conversations.router,
        credits.router,
        tools.router,
        integrations.router,
        billing_route.router,
        usage_route.router,
        admin_route.router,
    ):
        app.include_router(router)
    app.include_router(gateway_route.router)
    app.include_router(metrics_route.router)
    if settings.api_docs:
        mount_api_docs(app)
    services.web_ui = mount_web_ui(app, settings.frontend_dist)
    return app
