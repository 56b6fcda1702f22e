"""Assembling documentation retrieval from plain configuration, and the local index's lifecycle: loaded
at startup; when it never was built (and auto-indexing is on), built in the background — BM25 first, then,
where a whole-index vector search runs (LOCAL_DENSE=both or fuse), embeddings library by library,
most-asked first — with each stage served as soon as it is usable. With LOCAL_DENSE=reorder (the default)
no whole-index vectors are searched, so none are computed: the reorder embeds each question's candidates
as it needs them (cached), and a first start spends no background CPU on embedding some 77,000 passages."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Literal

from almanac.llm.base import Model
from almanac.rag.embeddings.base import Embedder, EmbeddingError
from almanac.rag.embeddings.cache import CachedEmbedder
from almanac.rag.hybrid import HybridConfig
from almanac.rag.index_state import LocalIndexState, describe_index
from almanac.rag.local_index import IndexInputs, build_local_index
from almanac.rag.local_search import load_local_index
from almanac.rag.pipeline import DocumentationPipeline
from almanac.rag.priority import MOST_ASKED
from almanac.rag.query import ModelQueryParser, QueryParser, RuleQueryParser
from almanac.rag.rerank import FUSED_WEIGHT, DenseReorder, FusedOrder, ModelReranker, Reranker, VoyageReranker
from almanac.rag.select import LibrarySelector, ModelSelector, RuleSelector
from almanac.rag.sources.auto import AutoSource
from almanac.rag.sources.base import DocSource
from almanac.rag.sources.context7 import Context7Source
from almanac.rag.sources.local import LocalSource
from almanac.storage.db import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DocConfig:
    """Plain values the composition root reads from Settings."""

    source: Literal["auto", "context7", "local"] = "local"
    recheck_s: float = 300.0  # auto: how often Context7 is checked
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
    rerank_timeout_s: float = 15.0
    rerank_max_candidates: int = 20
    rerank_passage_chars: int = 600
    rerank_fused_weight: float = FUSED_WEIGHT
    top_k: int = 6
    candidates: int = 40
    synonyms: bool = True  # the documentation's words for the question's are searched too (`synonyms.py`)
    min_score: float | None = None
    fusion: Literal["gated", "zscore", "rrf"] = "gated"
    rrf_k: float = 60.0
    # `reorder` (the default): lexical search, then the question's embedding reorders the candidates; `both`:
    # the seed's hybrid search (BM25 and a whole-index vector search fused by `fusion`) where the vectors are
    # ready, then the reorder; `fuse`: the hybrid search alone (docs/retrieval.md has the measurements)
    local_dense: Literal["both", "reorder", "fuse"] = "reorder"
    inputs: IndexInputs = field(default_factory=IndexInputs)
    auto_index: bool = True
    index_wait_s: float = 60.0  # how long a question waits for a first index still being built

    def hybrid(self) -> HybridConfig:
        """The fusion settings for every hybrid search."""
        return HybridConfig(method=self.fusion, rrf_k=self.rrf_k)

    @property
    def embeds_index(self) -> bool:
        """Whether the local index's passages are all embedded: only a whole-index vector search (LOCAL_DENSE
        both or fuse) needs that; the reorder embeds the candidates it reorders."""
        return self.local_dense in ("both", "fuse")


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
        # The chat model is not used unless asked for (RERANKER=model): bench/rerank_llm.py finds it pays when
        # the model judges passages right ~70% of the time or better, for ~1,570 tokens and a call per question;
        # no capable real model was measured (a 135M local one could not judge).
        kind = "voyage" if config.voyage_api_key else "none"
    if kind == "voyage" and config.voyage_api_key:
        return VoyageReranker(
            api_key=config.voyage_api_key, model=config.voyage_rerank_model, base_url=config.voyage_base_url
        )
    if kind == "model" and _is_language_model(chat_model):
        return ModelReranker(
            chat_model,
            passage_chars=config.rerank_passage_chars,
            max_candidates=config.rerank_max_candidates,
            timeout_s=config.rerank_timeout_s,
            fused_weight=config.rerank_fused_weight,
        )
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

    def library_names(self) -> list[str]:
        """The libraries a question may name: the local index's, and the libraries developers most ask about."""
        return [*MOST_ASKED, *self.local.names()]

    def describe(self) -> tuple[str, str]:
        """(doc source, embeddings) for the startup table."""
        if isinstance(self.source, AutoSource):
            source = self.source.describe()
        elif self.source is self.local:
            source = "local"
        else:
            source = f"{self.source.name} (falls back to local)"
        embeddings = self.embedder.model_id if self.embedder else "none (BM25 only)"
        runtime = getattr(getattr(self.embedder, "inner", None), "runtime_name", None)
        if runtime:
            embeddings += f" on {runtime}"
        if self.embedder and self.config.local_dense != "fuse":
            embeddings += f" (LOCAL_DENSE={self.config.local_dense}: the embeddings reorder the local candidates)"
        return f"{source}; local index: {self.state.status}", embeddings

    def off(self) -> list[str]:
        """Documentation features that are off, each with the reason (for the startup table)."""
        if self.config.source == "local":
            return ["Context7 (DOC_SOURCE=local)"]
        if isinstance(self.source, AutoSource) and not self.source.up:
            return [
                f"Context7 ({self.source.detail}; the local index answers, rechecked every {self.config.recheck_s:g} s)"
            ]
        return []

    async def start(self, database: Database) -> None:
        """Load the local index; with auto-indexing on, build what is missing in the background (see the
        module docstring; a restart resumes, as embeddings are cached). With DOC_SOURCE=auto, check
        whether Context7 answers (briefly waiting for the first answer) and keep checking."""
        index = await load_local_index(database)
        if index is not None:
            self.state.publish(index)
        if isinstance(self.source, AutoSource):
            await self.source.start(wait_s=min(3.0, self.config.context7_timeout_s))
        embedder = self.embedder if self.config.embeds_index else None
        needs_vectors = embedder is not None and (index is None or index.model_id != embedder.model_id)
        if not self.config.auto_index:
            if index is None:
                self.state.set_status("not built (run `almanac docs index`)")
            return
        if index is None or needs_vectors:
            self.state.set_status("being built: starting")
            self.state.task = asyncio.create_task(self._build(database, embedder, store_lexical=index is None))

    async def _build(self, database: Database, embedder: Embedder | None, *, store_lexical: bool) -> None:
        def progress(stage: str, done: int, total: int) -> None:
            prefix = f"{describe_index(self.state.index)}; " if self.state.index else ""
            self.state.set_status(f"{prefix}being built: {stage}" + (f" {done:,}/{total:,}" if total else ""))

        try:
            await build_local_index(
                database,
                self.config.inputs,
                embedder,
                progress=progress,
                publish=self.state.publish,
                store_lexical=store_lexical,
                priority=self.state.priority,
            )
            if self.state.index is not None:
                self.state.set_status(describe_index(self.state.index))
                log.info("local documentation index ready: %s", self.state.status)
        except Exception:  # boundary: a failed background build must leave the service running
            log.exception("building the local documentation index failed")
            self.state.set_status("build failed (see the log; run `almanac docs index`)")

    async def stop(self) -> None:
        if self.state.task is not None and not self.state.task.done():
            self.state.task.cancel()
        stop = getattr(self.source, "stop", None) or getattr(self.source, "aclose", None)
        if stop is not None:
            await stop()


def build_documentation(
    config: DocConfig, database: Database, chat_model: Model, *, embedder: Embedder | None = None
) -> Documentation:
    """Wire the sources, parser, selector and reranker the configuration asks for; `embedder`, when given,
    replaces the configured one (behind the same cache)."""
    embedder = CachedEmbedder(embedder, database) if embedder is not None else build_embedder(config, database)
    state = LocalIndexState()
    local = LocalSource(
        index=state.get,
        embedder=embedder if config.local_dense in ("both", "fuse") else None,
        config=config.hybrid(),
        missing=state.missing,
        wait=state.wait_loaded,
        wait_s=config.index_wait_s,
        asked=state.priority.ask,
    )
    source: DocSource = local
    if config.source in ("context7", "auto"):
        context7 = Context7Source(
            database=database,
            embedder=embedder,
            api_key=config.context7_api_key,
            base_url=config.context7_api_url,
            timeout_s=config.context7_timeout_s,
            cache_ttl_s=config.cache_ttl_s,
            hybrid=config.hybrid(),
        )
        source = context7
        if config.source == "auto":
            source = AutoSource(context7, local, recheck_s=config.recheck_s)
    real_model = _is_language_model(chat_model)
    parser: QueryParser = RuleQueryParser(local.names)
    selector: LibrarySelector = RuleSelector()
    if real_model:
        parser = ModelQueryParser(chat_model, RuleQueryParser(local.names))
        selector = ModelSelector(chat_model)
    reranker = build_reranker(config, chat_model)
    # Voyage's reranker scores every candidate whatever their order: reordering them first would only cost tokens.
    local_reorder = None
    if embedder is not None and config.local_dense != "fuse" and not isinstance(reranker, VoyageReranker):
        local_reorder = DenseReorder(embedder)
    pipeline = DocumentationPipeline(
        source=source,
        fallback=local if source is not local else None,
        parser=parser,
        selector=selector,
        reranker=reranker,
        local_reorder=local_reorder,
        top_k=config.top_k,
        candidates=config.candidates,
        min_score=config.min_score,
        synonyms=config.synonyms,
    )
    return Documentation(pipeline, local, state, embedder, source, config)


def _is_language_model(model: Model) -> bool:
    """Whether the chat model can follow prompts (a vendor model), as opposed to rule-based stand-ins."""
    return model.provider in ("anthropic", "openai")
