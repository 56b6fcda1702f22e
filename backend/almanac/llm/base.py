"""The model interface every provider implements, and the errors it may raise.

Errors, by audience:
    ModelError             the model could not answer (shown to the user; the query is refunded
                           if nothing was produced)
      ModelTimeout         no answer within the per-call timeout
      ModelRateLimited     the provider kept answering 429 after our retries
      ModelUnavailable     5xx / connection failures after retries
      ModelAuthError       the provider rejected our credentials (an operator problem)
      ModelBadRequest      the provider rejected the request (4xx other than auth/429)
"""

from __future__ import annotations

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
