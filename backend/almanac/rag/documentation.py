"""Assembling documentation retrieval from plain configuration, and the local index's lifecycle
(loaded at startup; built in the background when it never was and auto-indexing is on)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Literal

from almanac.llm.base import Model
from almanac.rag.embeddings.base import Embedder, EmbeddingError
from almanac.rag.embeddings.cache import CachedEmbedder
from almanac.rag.local_index import IndexInputs, LocalIndex, build_local_index, load_local_index
from almanac.rag.pipeline import DocumentationPipeline
from almanac.rag.query import ModelQueryParser, QueryParser, RuleQueryParser
from almanac.rag.rerank import FusedOrder, ModelReranker, Reranker, VoyageReranker
from almanac.rag.select import LibrarySelector, ModelSelector, RuleSelector
from almanac.rag.sources.base import DocSource
from almanac.rag.sources.context7 import Context7Source
from almanac.rag.sources.local import LocalSource
from almanac.storage.db import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DocConfig:
    """Plain values the composition root reads from Settings."""

    source: Literal["context7", "local"] = "local"
    context7_api_key: str | None = None
    context7_api_url: str = "https://context7.com/api"
    context7_timeout_s: float = 30.0
    cache_ttl_s: float = 86_400.0
    embeddings: Literal["auto", "voyage", "local", "none"] = "auto"
    voyage_api_key: str | None = None
    voyage_base_url: str | None = None
    voyage_embed_model: str = "voyage-3-large"
    voyage_rerank_model: str = "rerank-2.5"
    reranker: Literal["auto", "voyage", "model", "none"] = "auto"
    top_k: int = 6
    candidates: int = 30
    min_score: float | None = None
    inputs: IndexInputs = field(default_factory=IndexInputs)
    auto_index: bool = True


class LocalIndexState:
    """The local index as the running service knows it: loaded, being built, or missing."""

    def __init__(self) -> None:
        self.index: LocalIndex | None = None
        self.status = "not built or not loaded yet; run `almanac docs index`"
        self.task: asyncio.Task[None] | None = None

    def get(self) -> LocalIndex | None:
        return self.index

    def missing(self) -> str:
        return self.status


def build_embedder(config: DocConfig, database: Database) -> Embedder | None:
    """The configured embedder behind the database cache, or None (BM25 only)."""
    kind = config.embeddings
    if kind == "auto":
        kind = "voyage" if config.voyage_api_key else "local"
    inner: Embedder
    if kind == "voyage":
        from almanac.rag.embeddings.voyage import VoyageEmbedder

        if not config.voyage_api_key:
            return None
        inner = VoyageEmbedder(
            api_key=config.voyage_api_key, model=config.voyage_embed_model, base_url=config.voyage_base_url
        )
    elif kind == "local":
        from almanac.rag.embeddings.minilm import MiniLMEmbedder, default_model_dir

        try:
            default_model_dir()
        except EmbeddingError as exc:
            log.warning("local embeddings are off: %s", exc)
            return None
        inner = MiniLMEmbedder()
    else:
        return None
    return CachedEmbedder(inner, database)


def build_reranker(config: DocConfig, chat_model: Model) -> Reranker:
    kind = config.reranker
    if kind == "auto":
        kind = "voyage" if config.voyage_api_key else ("model" if _is_language_model(chat_model) else "none")
    if kind == "voyage" and config.voyage_api_key:
        return VoyageReranker(
            api_key=config.voyage_api_key, model=config.voyage_rerank_model, base_url=config.voyage_base_url
        )
    if kind == "model" and _is_language_model(chat_model):
        return ModelReranker(chat_model)
    return FusedOrder()


@dataclass
class Documentation:
    """Everything documentation retrieval needs at run time."""

    pipeline: DocumentationPipeline
    local: LocalSource
    state: LocalIndexState
    embedder: Embedder | None
    source: DocSource
    config: DocConfig

    def describe(self) -> tuple[str, str]:
        """(doc source, embeddings) for the startup table."""
        source = self.source.name if self.source is not self.local else "local"
        if self.source is not self.local:
            source += " (falls back to local)"
        embeddings = self.embedder.model_id if self.embedder else "none (BM25 only)"
        return f"{source}; local index: {self.state.status}", embeddings

    async def start(self, database: Database) -> None:
        """Load the local index. With auto-indexing on, build what is missing in the background:
        first a BM25-only index (usable within a minute), then the embeddings (minutes), after which
        the hybrid index replaces it. A restart resumes the embeddings (they are cached)."""
        self.state.index = await load_local_index(database)
        index = self.state.index
        if index is not None:
            self.state.status = self._ready_status(index)
        needs_vectors = self.embedder is not None and (index is None or index.model_id != self.embedder.model_id)
        if not self.config.auto_index:
            if index is None:
                self.state.status = "not built (run `almanac docs index`)"
            return
        if index is None or needs_vectors:
            self.state.task = asyncio.create_task(self._build(database, lexical_first=index is None))

    def _ready_status(self, index: LocalIndex) -> str:
        kind = "hybrid" if index.vectors is not None else "BM25 only"
        return f"{len(index.chunks):,} chunks, {len(index.libraries):,} libraries ({kind})"

    async def _build(self, database: Database, *, lexical_first: bool) -> None:
        def progress(stage: str, done: int, total: int) -> None:
            prefix = f"{self._ready_status(self.state.index)}; " if self.state.index else ""
            self.state.status = f"{prefix}being built: {stage}" + (f" {done:,}/{total:,}" if total else "")

        try:
            if lexical_first:
                await build_local_index(database, self.config.inputs, None, progress=progress)
                self.state.index = await load_local_index(database)
            if self.embedder is not None:
                await build_local_index(database, self.config.inputs, self.embedder, progress=progress)
                self.state.index = await load_local_index(database)
            if self.state.index is not None:
                self.state.status = self._ready_status(self.state.index)
                log.info("local documentation index ready: %s", self.state.status)
        except Exception:  # boundary: a failed background build must leave the service running
            log.exception("building the local documentation index failed")
            self.state.status = "build failed (see the log; run `almanac docs index`)"

    async def stop(self) -> None:
        if self.state.task is not None and not self.state.task.done():
            self.state.task.cancel()
        aclose = getattr(self.source, "aclose", None)
        if aclose is not None:
            await aclose()


def build_documentation(config: DocConfig, database: Database, chat_model: Model) -> Documentation:
    """Wire the sources, parser, selector and reranker the configuration asks for."""
    embedder = build_embedder(config, database)
    state = LocalIndexState()
    local = LocalSource(index=state.get, embedder=embedder, missing=state.missing)
    source: DocSource = local
    if config.source == "context7":
        source = Context7Source(
            database=database,
            embedder=embedder,
            api_key=config.context7_api_key,
            base_url=config.context7_api_url,
            timeout_s=config.context7_timeout_s,
            cache_ttl_s=config.cache_ttl_s,
        )
    real_model = _is_language_model(chat_model)
    parser: QueryParser = RuleQueryParser(local.names)
    selector: LibrarySelector = RuleSelector()
    if real_model:
        parser = ModelQueryParser(chat_model, RuleQueryParser(local.names))
        selector = ModelSelector(chat_model)
    pipeline = DocumentationPipeline(
        source=source,
        fallback=local if source is not local else None,
        parser=parser,
        selector=selector,
        reranker=build_reranker(config, chat_model),
        top_k=config.top_k,
        candidates=config.candidates,
        min_score=config.min_score,
    )
    return Documentation(pipeline, local, state, embedder, source, config)


def _is_language_model(model: Model) -> bool:
    """Whether the chat model can follow prompts (a vendor model), as opposed to rule-based stand-ins."""
    return model.provider in ("anthropic", "openai")
