"""How relevant an answer is to its question, for the stuck detector (`stuck.py`): 0 to 1.

With an embedder — the one retrieval uses (local all-MiniLM-L6-v2, or Voyage with a key) — it is
the cosine of the question's and the answer's embeddings, mapped onto 0–1 by `CosineScale`. The
scale was measured with MiniLM on questions and answers written for the purpose: on-topic answers
scored 0.42–0.81, off-topic ones or non-answers (“I'm not sure how to do that.”, an unrelated
sentence) -0.06–0.27, so 0.15 maps to 0 and 0.45 to 1. Another embedder uses the same scale.

Without an embedder (EMBEDDINGS=none), or when it fails, the score falls back to a lexical overlap:
the share of the question's content words that the answer uses (half of them or more counts as
fully relevant). The `method` of each score says which was used, and a failing embedder is logged.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Protocol

from almanac.chat.strategies.stuck import Relevance
from almanac.rag.embeddings.base import Embedder, EmbeddingError

log = logging.getLogger(__name__)
MAX_CHARS = 4_000  # what is embedded of a question or an answer (the models read ~256-512 tokens anyway)
LEXICAL = "lexical overlap (no embedder configured)"
_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset(
    "the a an and or but if then else of to in on at by for with from into about as is are was were be been "
    "being do does did doing have has had having it its this that these those there here what which who whom "
    "whose when where why how can could should would will shall may might must i you he she we they me my your "
    "our their them us not no yes so than too very just also any all some each more most such only own same "
    "please tell show give get make use using want need know like".split()
)


class RelevanceScorer(Protocol):
    async def score(self, prompt: str, answer: str) -> Relevance:
        """How relevant `answer` is to `prompt`; never raises."""
        ...


@dataclass(frozen=True)
class CosineScale:
    """Maps a cosine similarity onto 0–1 (see the module docstring for where the bounds come from)."""

    low: float = 0.15
    high: float = 0.45

    def __call__(self, cosine: float) -> float:
        return min(1.0, max(0.0, (cosine - self.low) / (self.high - self.low)))


class EmbeddingRelevance:
    """Cosine of the retrieval embedder's vectors; lexical overlap if the embedder fails."""

    def __init__(self, embedder: Embedder, scale: CosineScale | None = None) -> None:
        self.embedder = embedder
        self.scale = scale or CosineScale()
        self.method = f"embedding cosine ({embedder.model_id})"

    async def score(self, prompt: str, answer: str) -> Relevance:
        if not answer.strip():
            return Relevance(0.0, self.method)
        try:
            question = await self.embedder.embed([prompt[:MAX_CHARS]], input_type="query")
            reply = await self.embedder.embed([answer[:MAX_CHARS]], input_type="document")
        except EmbeddingError as exc:
            log.warning("relevance: the embedder failed (%s); using lexical overlap", type(exc).__name__)
            return Relevance(lexical_overlap(prompt, answer), "lexical overlap (the embedder failed)")
        return Relevance(self.scale(float(question[0] @ reply[0])), self.method)


class LexicalRelevance:
    """The fallback when no embedder is configured."""

    method = LEXICAL

    async def score(self, prompt: str, answer: str) -> Relevance:
        return Relevance(lexical_overlap(prompt, answer), self.method)


def relevance_scorer(embedder: Embedder | None) -> RelevanceScorer:
    """Embedding relevance with the retrieval embedder, or lexical overlap without one."""
    return EmbeddingRelevance(embedder) if embedder is not None else LexicalRelevance()


def content_words(text: str) -> set[str]:
    """Lower-case words of three or more letters that are not stop words, crudely stemmed."""
    return {_stem(word) for word in _WORD.findall(text.lower()) if len(word) >= 3 and word not in _STOP}


def lexical_overlap(prompt: str, answer: str) -> float:
    """The share of the question's content words found in the answer, doubled and capped at 1."""
    asked = content_words(prompt)
    if not asked:
        return 1.0 if answer.strip() else 0.0  # nothing to compare: do not call a greeting off-topic
    found = len(asked & content_words(answer)) / len(asked)
    return min(1.0, 2 * found)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
