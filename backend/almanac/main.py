"""The composition root: `create_app(settings)` builds every service from `Settings` and wires the
HTTP routes. Nothing below this module reads configuration on its own."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from pydantic import SecretStr

from almanac import __version__
from almanac.api.docs import mount_api_docs
from almanac.api.errors import install_error_handlers
from almanac.api.guards import HostRules, RequestGuard
from almanac.api.limits import BodySizeLimit
from almanac.api.routes import auth, chat, conversations, credits, health, keys, me, tools
from almanac.api.web import SecurityHeaders, mount_web_ui
from almanac.auth.local import LocalSignIn, announce_sign_in_link, ensure_local_user, link_base_url
from almanac.auth.service import AccountService
from almanac.billing.ledger import CreditService
from almanac.chat.service import ChatLimits, ChatService
from almanac.chat.summaries import SummaryJobs
from almanac.chat.turn import LoopLimits
from almanac.config import Settings
from almanac.llm.base import Model
from almanac.llm.providers import ProviderConfig, build_model
from almanac.mcp_client import build_mcp_client, teach
from almanac.memory.conversations import ConversationService
from almanac.memory.history import HistoryStore
from almanac.memory.summarise import ExtractiveSummariser, ModelSummariser, Summariser
from almanac.rag.documentation import DocConfig, build_documentation
from almanac.rag.local_index import IndexInputs
from almanac.services import Services
from almanac.startup import describe
from almanac.storage.db import Database
from almanac.tools.builtin.documentation import DocumentationTool
from almanac.tools.builtin.full_context import FullContextTool
from almanac.tools.registry import ToolRegistry

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
        )
    return ProviderConfig("offline", "almanac-offline", offline_token_delay_s=settings.offline_token_delay_ms / 1000)


def build_services(settings: Settings, *, model: Model | None = None, summariser: Summariser | None = None) -> Services:
    """Construct every service (no I/O happens here). `model` and `summariser` replace the
    configured ones (tests and benchmarks pass scripted fakes)."""
    database = Database(settings.resolved_database_url)
    history = HistoryStore(database)
    credit_service = CreditService(database)
    model = model or build_model(provider_config(settings))
    if summariser is None:
        summariser = ExtractiveSummariser()
        if model.provider in ("anthropic", "openai"):
            summariser = ModelSummariser(build_model(provider_config(settings, model=settings.summariser_model)))
    summaries = SummaryJobs(
        summariser, history, fallback_chars=settings.summary_fallback_chars, timeout_s=settings.model_timeout_s
    )
    documentation = build_documentation(doc_config(settings), database, model)
    registry = ToolRegistry(
        [
            FullContextTool(history),
            DocumentationTool(documentation.pipeline, timeout_s=settings.doc_tool_timeout_s),
        ]
    )
    mcp = build_mcp_client(settings, registry, environ=os.environ, cwd=Path.cwd())
    teach(model, mcp)
    limits = ChatLimits(
        max_message_chars=settings.max_message_chars,
        summary_wait_s=settings.summary_wait_s,
        lease_s=settings.conversation_lease_s,
        loop=LoopLimits(settings.max_turns, settings.tool_timeout_s, settings.max_output_tokens),
    )
    chat_service = ChatService(
        database=database,
        history=history,
        credits=credit_service,
        registry=registry,
        model=model,
        summaries=summaries,
        limits=limits,
    )
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
        local_sign_in=LocalSignIn(data_dir=settings.data_dir, base_url=link_base_url(settings.host, settings.port))
        if settings.local_user
        else None,
    )


def doc_config(settings: Settings) -> DocConfig:
    """Documentation retrieval's configuration."""

    def secret(value: SecretStr | None) -> str | None:
        return value.get_secret_value() if value is not None else None

    return DocConfig(
        source=settings.resolved_doc_source,
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
        top_k=settings.rag_top_k,
        candidates=settings.rag_candidates,
        min_score=settings.rag_min_score,
        inputs=IndexInputs(
            docs_paths=tuple(settings.resolved_docs_paths),
            packages=settings.docs_include_packages,
            stdlib=settings.docs_include_stdlib,
        ),
        auto_index=settings.docs_auto_index,
    )


def create_app(settings: Settings, services: Services | None = None) -> FastAPI:
    """The ASGI application. The database must already be migrated (`almanac db upgrade`)."""
    services = services or build_services(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if settings.local_user:
            await ensure_local_user(services.accounts, email=settings.local_user_email, data_dir=settings.data_dir)
        await services.accounts.purge_expired_sessions()
        await services.documentation.start(services.database)
        if services.mcp is not None:
            await services.mcp.start()
        for line in describe(settings, services):
            log.info(line)
        if services.local_sign_in is not None:
            announce_sign_in_link(services.local_sign_in, email=settings.local_user_email)
        yield
        await services.documentation.stop()
        await services.chat.drain(timeout_s=10)
        await services.summaries.drain(timeout_s=5)
        if services.mcp is not None:
            await services.mcp.stop()
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
    # JSON may spend up to 12 bytes on one character (an escaped surrogate pair).
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_message_chars * 12 + 64_000)
    app.add_middleware(SecurityHeaders)
    # Added last, so it runs first: nothing else sees a request naming a host we do not serve.
    app.add_middleware(RequestGuard, hosts=HostRules.parse(settings.resolved_allowed_hosts))
    install_error_handlers(app)
    for module in (health, auth, me, keys, chat, conversations, credits, tools):
        app.include_router(module.router)
    if settings.api_docs:
        mount_api_docs(app)
    services.web_ui = mount_web_ui(app, settings.frontend_dist)
    return app
