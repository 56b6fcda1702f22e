"""Hybrid search: BM25 and dense retrieval run concurrently, fused into one ranked list.

A :class:`HybridIndex` is built once per document (or corpus) and reused for every query: the BM25
index and the embedding matrix both serialise to bytes for storage. A query runs BM25 in a worker
thread while the query is embedded, then cosine search in a thread, then :func:`fuse` (by default
the semantically gated z-score fusion of :mod:`almanac.rag.fusion`). If there is
no embedder (or it raises ``EmbeddingError``), search degrades to BM25 alone rather than failing.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from almanac.rag.bm25 import DEFAULT_TOKENIZER, BM25Index, TokenizerConfig
from almanac.rag.chunking import EXPORTED_RE, Chunk
from almanac.rag.embeddings.base import Embedder, EmbeddingError
from almanac.rag.fusion import (
    DEFAULT_GATE_TAU,
    DEFAULT_GATE_TOP,
    gated_fusion,
    reciprocal_rank_fusion,
    zscore_fusion,
)
from almanac.rag.retriever import Hit
from almanac.rag.vectors import VectorIndex

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HybridConfig:
    """How the two lists are fused. The defaults are the method ``bench/retrieval.py`` selected."""

    method: Literal["gated", "zscore", "rrf"] = "gated"
    gate_tau: float = DEFAULT_GATE_TAU  # "gated": cosine gap at which BM25's weight falls to 1/e
    gate_top: int = DEFAULT_GATE_TOP  # "gated": BM25 hits judged by the dense scores
    rrf_k: float = 60.0  # "rrf"
    weights: tuple[float, float] | None = None  # (bm25, dense) for "rrf" and "zscore"
    candidates: int = 1000  # hits taken from each retriever before fusion
    limit: int = 30


def fuse(lexical: Sequence[Hit], dense: Sequence[Hit], config: HybridConfig, *, limit: int | None = None) -> list[Hit]:
    """Fuse a BM25 list and a dense list (both best first) into at most ``limit`` hits.

    ``limit`` defaults to ``config.limit``; with no dense list the BM25 order is kept.
    """
    limit = config.limit if limit is None else limit
    if not dense:
        return list(lexical[:limit])
    if config.method == "gated":
        return gated_fusion(lexical, dense, tau=config.gate_tau, top=config.gate_top, limit=limit)
    if config.method == "zscore":
        return zscore_fusion([lexical, dense], weights=config.weights, limit=limit)
    return reciprocal_rank_fusion(
        [[h.index for h in lexical], [h.index for h in dense]],
        k=config.rrf_k,
        weights=config.weights,
        limit=limit,
    )


@dataclass(frozen=True)
class HybridIndex:
    """BM25 index plus (optionally) the chunk embeddings, over the same list of chunk texts."""

    bm25: BM25Index
    vectors: VectorIndex | None
    model_id: str | None

    @classmethod
    async def build(
        cls,
        texts: Sequence[str],
        embedder: Embedder | None,
        *,
        tokenizer: TokenizerConfig = DEFAULT_TOKENIZER,
        batch_size: int = 64,
    ) -> HybridIndex:
        """Index ``texts``: BM25 in a worker thread while the embedder embeds them in batches."""
        bm25_task = asyncio.create_task(asyncio.to_thread(BM25Index.build, list(texts), config=tokenizer))
        vectors = None
        if embedder is not None and texts:
            batches = [
                await embedder.embed(texts[i : i + batch_size], input_type="document")
                for i in range(0, len(texts), batch_size)
            ]
            vectors = VectorIndex(np.vstack(batches))
        return cls(await bm25_task, vectors, embedder.model_id if vectors is not None and embedder else None)


class HybridSearcher:
    """Answers queries against one :class:`HybridIndex`."""

    def __init__(self, index: HybridIndex, embedder: Embedder | None, config: HybridConfig = HybridConfig()) -> None:
        usable = embedder is not None and index.vectors is not None and embedder.model_id == index.model_id
        if embedder is not None and index.vectors is not None and not usable:
            logger.warning("embedder %s does not match index model %s: BM25 only", embedder.model_id, index.model_id)
        self._index = index
        self._embedder = embedder if usable else None
        self._config = config

    async def search(self, query: str, k: int | None = None, *, question: str | None = None) -> list[Hit]:
        """The best ``k`` (default ``config.limit``) chunks for ``query``, best first; the dense side embeds
        ``question`` when given (the request as written), else ``query``."""
        depth = self._config.candidates
        lexical_task = asyncio.create_task(asyncio.to_thread(self._index.bm25.search, query, depth))
        dense: list[Hit] = []
        if self._embedder is not None and self._index.vectors is not None:
            try:
                vector = (await self._embedder.embed([question or query], input_type="query"))[0]
                dense = await asyncio.to_thread(self._index.vectors.search, vector, depth)
            except EmbeddingError:  # a failing embedder must not fail the tool: BM25 still answers
                logger.warning("query embedding failed; BM25 only", exc_info=True)
        return fuse(await lexical_task, dense, self._config, limit=k)


def index_text(chunk: Chunk) -> str:
    """What gets indexed for a chunk: its text, preceded by its section title when a split-off
    part of a long section no longer starts with it (so the part keeps its context), without the note on the name
    users import it by (`EXPORTED_AS`: "Imported as `asyncio.gather`." under `asyncio.tasks.gather`), which is for
    the reader — its words are the heading's again, and counted twice they lifted re-exported APIs for any question
    naming their library (`asyncio.timeouts.timeout` over `anthropic.AsyncAnthropic` for "an anthropic client I can
    await inside an asyncio app")."""
    heading = chunk.title.rsplit(" > ", 1)[-1].strip()
    text = _EXPORTED_LINE.sub("", chunk.text)
    first_line = text.lstrip().split("\n", 1)[0]
    if heading and heading not in first_line:
        return f"{chunk.title}\n{text}"
    return text


_EXPORTED_LINE = re.compile(rf"^(?:{EXPORTED_RE.pattern})\n*", re.MULTILINE)
