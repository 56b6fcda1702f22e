"""Voyage AI embeddings through the official SDK (``voyageai.AsyncClient``).

Inputs are split into requests within the API's per-request limits — at most 1,000 texts and the model's
total-token budget — using a conservative token estimate computed without network access. Requests that
hit a rate limit (429), a server error (5xx), a timeout or a connection failure are retried up to
`max_retries` times, honouring Retry-After. Every vendor failure becomes an EmbeddingError whose message
never contains the API key or the raw response.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from almanac.rag.embeddings.base import EmbeddingError, Embeddings, InputType, empty_embeddings, l2_normalise

if TYPE_CHECKING:
    import voyageai.error

logger = logging.getLogger(__name__)

MAX_TEXTS_PER_REQUEST = 1_000
BYTES_PER_TOKEN_FLOOR = 2.5
"""Assumed minimum UTF-8 bytes per token (English averages ~4); keeps the token estimate an over-estimate."""
TOKEN_BUDGET_SHARE = 0.9
"""Share of the model's per-request token limit that batches may fill, as a margin on the estimate."""
_MAX_RETRY_AFTER_S = 60.0


@dataclass(frozen=True)
class VoyageModelLimits:
    """What a Voyage embedding model accepts: output size, tokens per text, tokens per request."""

    dimension: int
    context_tokens: int
    request_tokens: int


MODEL_LIMITS: Mapping[str, VoyageModelLimits] = {
    "voyage-3-large": VoyageModelLimits(1024, 32_000, 120_000),
    "voyage-4-large": VoyageModelLimits(1024, 32_000, 120_000),
    "voyage-code-3": VoyageModelLimits(1024, 32_000, 120_000),
    "voyage-finance-2": VoyageModelLimits(1024, 32_000, 120_000),
    "voyage-law-2": VoyageModelLimits(1024, 16_000, 120_000),
    "voyage-3.5": VoyageModelLimits(1024, 32_000, 320_000),
    "voyage-4": VoyageModelLimits(1024, 32_000, 320_000),
    "voyage-2": VoyageModelLimits(1024, 4_000, 320_000),
    "voyage-3.5-lite": VoyageModelLimits(1024, 32_000, 1_000_000),
    "voyage-4-lite": VoyageModelLimits(1024, 32_000, 1_000_000),
}
"""Per-model limits (docs.voyageai.com/reference/embeddings-api); default output dimensions."""


def estimate_tokens(text: str) -> int:
    """An upper estimate of the tokens Voyage counts for `text` (no network, no tokenizer download)."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN_FLOOR) + 1


def plan_batches(texts: Sequence[str], *, max_texts: int, max_tokens: int) -> Iterator[range]:
    """Split `texts` into consecutive index ranges of ≤ max_texts texts whose estimated tokens total ≤ max_tokens.

    A single text estimated above max_tokens gets a range of its own (the API truncates it).
    """
    start, tokens = 0, 0
    for index, text in enumerate(texts):
        cost = estimate_tokens(text)
        if index > start and (index - start >= max_texts or tokens + cost > max_tokens):
            yield range(start, index)
            start, tokens = index, 0
        tokens += cost
    if start < len(texts):
        yield range(start, len(texts))


class VoyageEmbedder:
    """A Voyage AI embedding model (default voyage-3-large) reached over HTTPS."""

    max_texts_per_request: int = MAX_TEXTS_PER_REQUEST

    def __init__(
        self,
        *,
        api_key: str,
        model: str = "voyage-3-large",
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        retry_base_delay: float = 1.0,
    ) -> None:
        """Configure the client; nothing is sent until `embed`. Unknown models and empty keys are a ValueError."""
        if not api_key:
            raise ValueError("a Voyage API key is required")
        if model not in MODEL_LIMITS:
            raise ValueError(f"unknown Voyage model {model!r}; known: {', '.join(sorted(MODEL_LIMITS))}")
        self.model = model
        self.limits = MODEL_LIMITS[model]
        self.model_id = f"voyage/{model}"
        self.dimension = self.limits.dimension
        self.max_tokens = self.limits.context_tokens
        self._api_key = api_key
        self._timeout = timeout
        self._max_retries = max_retries
        self._retry_base_delay = retry_base_delay
        import voyageai  # imported on use: the SDK takes most of a second to import

        # The SDK's own retries ignore Retry-After and wait 1–16 s; ours (below) replace them.
        self._client = voyageai.AsyncClient(api_key=api_key, max_retries=0, timeout=timeout, base_url=base_url)

    async def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        """Embed `texts` in order: float32 (len(texts), dimension), unit rows; EmbeddingError on any failure."""
        if len(texts) == 0:
            return empty_embeddings(self.dimension)
        texts = list(texts)
        budget = int(self.limits.request_tokens * TOKEN_BUDGET_SHARE)
        result = np.empty((len(texts), self.dimension), dtype=np.float32)
        for batch in plan_batches(texts, max_texts=self.max_texts_per_request, max_tokens=budget):
            result[batch.start : batch.stop] = await self._embed_batch(texts[batch.start : batch.stop], input_type)
        return result

    async def _embed_batch(self, texts: list[str], input_type: InputType) -> Embeddings:
        from voyageai import error as voyage_errors

        retryable = (
            voyage_errors.RateLimitError,
            voyage_errors.ServiceUnavailableError,
            voyage_errors.ServerError,
            voyage_errors.Timeout,
            voyage_errors.APIConnectionError,
        )
        for attempt in range(self._max_retries + 1):
            try:
                response = await self._client.embed(texts, model=self.model, input_type=input_type, truncation=True)
            except retryable as exc:
                if attempt == self._max_retries:
                    raise self._error(exc) from None
                await asyncio.sleep(self._retry_delay(exc, attempt))
            except voyage_errors.VoyageError as exc:
                raise self._error(exc) from None
            except Exception as exc:  # vendor boundary: the SDK fails on odd responses with arbitrary errors
                logger.warning("Voyage embedding response could not be read: %s", type(exc).__name__)
                raise EmbeddingError("Voyage AI returned an unexpected response.") from None
            else:
                return self._rows(response.embeddings, len(texts))
        raise AssertionError("unreachable")

    def _rows(self, embeddings: object, count: int) -> Embeddings:
        try:
            rows = np.asarray(embeddings, dtype=np.float32)
        except (TypeError, ValueError):
            rows = np.zeros((0,), dtype=np.float32)
        if rows.shape != (count, self.dimension):
            logger.warning("Voyage returned embeddings of shape %s for %d texts", rows.shape, count)
            raise EmbeddingError("Voyage AI returned an unexpected response.")
        return l2_normalise(rows)

    def _retry_delay(self, exc: Exception, attempt: int) -> float:
        headers = getattr(exc, "headers", None) or {}
        retry_after = headers.get("retry-after") or headers.get("Retry-After")
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), _MAX_RETRY_AFTER_S)
            except ValueError:
                pass
        return self._retry_base_delay * 2**attempt * (0.5 + random.random() / 2)

    def _error(self, exc: voyageai.error.VoyageError) -> EmbeddingError:
        """Our error for a vendor error: a fixed message per kind, plus the vendor's reason for a rejected request."""
        from voyageai import error as voyage_errors

        detail = _redact(str(exc.user_message or ""), self._api_key)
        logger.warning("Voyage embedding request failed: %s (HTTP %s): %s", type(exc).__name__, exc.http_status, detail)
        if isinstance(exc, voyage_errors.AuthenticationError):
            return EmbeddingError("Voyage AI rejected the API key.")
        if isinstance(exc, voyage_errors.RateLimitError):
            return EmbeddingError("Voyage AI rate limit reached; try again later.")
        if isinstance(exc, voyage_errors.Timeout):
            return EmbeddingError(f"Voyage AI did not answer within {self._timeout:g} s.")
        if isinstance(exc, voyage_errors.APIConnectionError):
            return EmbeddingError("Could not reach Voyage AI.")
        if isinstance(exc, voyage_errors.InvalidRequestError | voyage_errors.MalformedRequestError):
            return EmbeddingError(f"Voyage AI rejected the embedding request: {detail[:300]}")
        status = f" (HTTP {exc.http_status})" if exc.http_status else ""
        return EmbeddingError(f"Voyage AI failed to embed the texts{status}; try again later.")


def _redact(text: str, secret: str) -> str:
    return text.replace(secret, "[redacted]") if secret else text
