"""The model interface every provider implements, and the errors it may raise.

Errors, by audience:
    ModelError             the model could not answer (shown to the user; the query is refunded
                           if nothing was produced)
      ModelTimeout         no answer within the per-call timeout
      ModelRateLimited     the provider kept answering 429 after our retries
      ModelUnavailable     5xx / connection failures after retries
      ModelAuthError       the provider rejected our credentials (an operator problem)
      ModelBadRequest      the provider rejected the request (4xx other than auth/429)
        ModelContextTooLong  … because the prompt exceeds the model's context window (the turn
                             loop retries once with half the budget)
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from almanac.llm.events import ModelEvent, accumulate
from almanac.llm.messages import ModelRequest, ModelResponse


class ModelError(Exception):
    """A model call failed. The message is safe to show a user (never contains secrets)."""

    code = "model_error"


class ModelTimeout(ModelError):
    code = "model_timeout"


class ModelRateLimited(ModelError):
    code = "model_rate_limited"


class ModelUnavailable(ModelError):
    code = "model_unavailable"


class ModelAuthError(ModelError):
    code = "model_auth_error"


class ModelBadRequest(ModelError):
    code = "model_bad_request"


class ModelContextTooLong(ModelBadRequest):
    code = "model_context_too_long"


_CONTEXT_TOO_LONG = re.compile(
    r"prompt is too long|context[_ ]length[_ ]exceeded|maximum context length|context (?:window|size|length)"
    r"|exceeds? (?:the )?(?:available )?context|too many (?:input )?tokens|input is too long",
    re.IGNORECASE,
)


def says_context_too_long(*details: str | None) -> bool:
    """Whether a provider's error code or message says the prompt did not fit the context window
    (OpenAI `context_length_exceeded`, Anthropic "prompt is too long", vLLM / llama.cpp wording)."""
    return any(detail and _CONTEXT_TOO_LONG.search(detail) for detail in details)


@runtime_checkable
class Model(Protocol):
    """A chat model. `stream` yields events and ends with a `StreamEnd`."""

    provider: str
    name: str
    supports_tools: bool
    supports_streaming: bool

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream the model's answer to `request`; raises `ModelError` on failure."""
        ...


async def complete(model: Model, request: ModelRequest) -> ModelResponse:
    """Run a request to completion and return the accumulated response."""
    return accumulate([event async for event in model.stream(request)])
