"""Metering at the seams the composition root already wires: a `Model` that counts its calls and
tokens, a `CreditService` that counts the credits it debits and refunds, and the observers the chat
service (its runs' events: tool calls) and the gateway's usage recorder (its calls) report to.
None changes what it wraps or sees — every answer, error and balance is the wrapped object's own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime
from typing import Any

from almanac.billing.ledger import Charge, ChargeContext, CreditService
from almanac.chat.events import ChatEvent, ToolResultEvent
from almanac.llm.base import Model
from almanac.llm.events import ModelEvent, UsageReport
from almanac.llm.messages import ModelRequest, Usage
from almanac.ops.metrics import Metrics
from almanac.storage.db import Database, Session
from almanac.storage.gateway import GatewayUsageRecord

CANCELLED = 499  # the gateway's status for a request whose caller went away


class MeteredModel:
    """A `Model` whose calls (by outcome) and tokens are counted under `source`. Attributes other
    than `stream` are the wrapped model's, read at each use (a provider may change its own flags)."""

    def __init__(self, inner: Model, metrics: Metrics, *, source: str = "chat") -> None:
        self.inner = inner
        self._metrics = metrics
        self._source = source

    @property
    def provider(self) -> str:
        return self.inner.provider

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def supports_tools(self) -> bool:
        return self.inner.supports_tools

    @property
    def supports_streaming(self) -> bool:
        return self.inner.supports_streaming

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.inner, attribute)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The wrapped model's stream, counted once it ends (however it ends)."""
        usage = Usage()
        outcome = "error"
        events = self.inner.stream(request)
        try:
            async for event in events:
                if isinstance(event, UsageReport):
                    usage = usage + event.usage
                yield event
            outcome = "ok"
        except (asyncio.CancelledError, GeneratorExit):
            outcome = "cancelled"
            raise
        finally:
            self._metrics.model_call(
                source=self._source,
                provider=self.inner.provider,
                model=self.inner.name,
                outcome=outcome,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                estimated=usage.estimated,
            )
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()


def metered(model: Model | None, metrics: Metrics | None, *, source: str = "chat") -> Any:
    """`model` metered (None stays None; without metrics, the model itself)."""
    if model is None or metrics is None:
        return model
    return MeteredModel(model, metrics, source=source)


def credit_source(context: ChargeContext) -> str:
    """Which part of the service a ledger row is for: `gateway` or `chat`."""
    return "gateway" if context.reason.startswith("gateway") else "chat"


class MeteredCredits(CreditService):
    """`CreditService` that also counts what it debits and refunds (after it happened)."""

    def __init__(self, database: Database, *, metrics: Metrics, clock: Callable[[], datetime] | None = None) -> None:
        super().__init__(database, clock=clock)
        self._metrics = metrics

    async def debit_in(
        self, session: Session, *, user_id: str, items: Sequence[tuple[int, ChargeContext]]
    ) -> list[Charge | None]:
        charges = await super().debit_in(session, user_id=user_id, items=items)
        for charge, (_, context) in zip(charges, items, strict=True):
            if charge is not None:
                self._metrics.credits(source=credit_source(context), debited=charge.amount)
        return charges

    async def refund(self, *, user_id: str, charge: Charge, context: ChargeContext, key: str | None = None) -> bool:
        refunded = await super().refund(user_id=user_id, charge=charge, context=context, key=key)
        if refunded:
            self._metrics.credits(source=credit_source(context), refunded=charge.amount)
        return refunded


def chat_observer(metrics: Metrics) -> Callable[[ChatEvent], None]:
    """What the chat service reports each run's events to: tool calls and their errors, by tool."""

    def observe(event: ChatEvent) -> None:
        if isinstance(event, ToolResultEvent):
            metrics.tool_call(tool=event.name, status=event.status, is_error=event.is_error)

    return observe


def gateway_observer(metrics: Metrics) -> Callable[[GatewayUsageRecord], None]:
    """What the gateway's usage recorder reports each request to: the upstream call and its tokens
    (and the boost planner's, when it ran)."""

    def observe(row: GatewayUsageRecord) -> None:
        ok = row.status == 200 and row.error_type is None
        outcome = "ok" if ok else "cancelled" if row.status == CANCELLED else "error"
        metrics.model_call(
            source="gateway",
            provider=row.upstream,
            model=row.upstream_model,
            outcome=outcome,
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            estimated=row.usage_estimated,
        )
        if row.planner_model:
            metrics.model_call(
                source="gateway-planner",
                provider="openai",
                model=row.planner_model,
                outcome=outcome,
                input_tokens=row.planner_input_tokens,
                output_tokens=row.planner_output_tokens,
                estimated=row.planner_usage_estimated,
            )

    return observe
