"""One query being answered: its lifecycle — start the loop, stream its events, and finish (store the
answer, settle the bill, release the conversation) whatever happened. It gets what it needs from
its service as a `RunContext` (`chat/runtime.py`) and never imports the service. What tool calls cost and how
they are stored is `chat/hooks.py`.

While the run lives it renews its lease on the conversation every third of `lease_s`, so a short
lease is enough and a conversation whose process died is free again within seconds. The answer's
end (`message_end`) is sent, and the conversation released, as soon as the answer is complete;
summaries still being written arrive afterwards as `summary` events (for at most `summary_wait_s`),
and are stored whether anyone is still listening or not.

An answer that carries nothing (stop reason `declined` or `refusal`: the model said it cannot
answer) is stored and shown, but its base price is refunded, as for a query that produced nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio

from almanac.billing.ledger import Charge, ChargeContext, refund_key
from almanac.chat.events import (
    ChatEvent,
    ErrorEvent,
    MessageEnd,
    MessageStart,
    SummaryEvent,
    TextDeltaEvent,
    UsageEvent,
)
from almanac.chat.hooks import QueryHooks, QueryRef
from almanac.chat.runtime import RunContext
from almanac.chat.strategies import Strategy
from almanac.chat.strategies.setup import AnswerLoop, boost_for, collaborate_for
from almanac.chat.summaries import SummaryDone
from almanac.chat.turn import NO_ANSWER, TurnLoop
from almanac.llm.base import ModelError
from almanac.llm.messages import Usage
from almanac.memory.context import QueryPrompt
from almanac.memory.ids import ItemKind, query_id, response_id, summary_id
from almanac.memory.summarise import SummaryRequest, needs_summary
from almanac.storage.records import ItemRecord, UserRecord
from almanac.usage.recording import ModelUse, record_query_usage

log = logging.getLogger(__name__)
FINISH_TIMEOUT_S = 30.0
_DONE = object()


class RunStopped(Exception):
    """A run stopped from outside before its answer was complete (the server is shutting down).
    The message is shown to the user; what completed is stored and billed as after any error."""

    code = "server_shutting_down"


@dataclass(frozen=True)
class RunSetup:
    user: UserRecord
    conversation_id: str
    created: bool
    query_number: int
    lock_token: str
    message: str
    base_charge: Charge
    strategy: Strategy = "direct"


@dataclass
class _RunState:
    text: list[str] = field(default_factory=list)
    turns: int = 0
    stop_reason: str = ""


class ChatRun:
    """Answers one query. Iterate `events()` exactly once."""

    def __init__(self, context: RunContext, setup: RunSetup) -> None:
        self._context = context
        self.setup = setup
        self.query_id = query_id(setup.query_number)
        self._state = _RunState()
        self.hooks = QueryHooks(
            QueryRef(
                setup.user.id,
                setup.conversation_id,
                setup.query_number,
                self.query_id,
                setup.message,
                base_credits=setup.base_charge.amount,
                credit_limit=context.limits.credit_limit,
            ),
            credits=context.credits,
            history=context.history,
            summaries=context.summaries,
        )
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self._late: dict[str, asyncio.Task[SummaryDone]] = {}  # summaries still running at message_end
        self._answering = False  # the loop is running (stopping it now ends the answer early)
        self._answer_loop: AnswerLoop | None = None
        self._usage = Usage()  # the answering model's tokens, from its usage events
        self._calls = 0
        self._estimated_calls = 0  # calls whose tokens the server did not report
        self._stopped: RunStopped | None = None
        self._base_refunded = False  # the answer carried nothing: its base price went back

    def begin(self) -> None:
        """Start answering now. The run completes (and is stored and billed) even if nobody reads
        its events; a reader that leaves early cancels it."""
        if self._worker is None:
            self._worker = asyncio.create_task(self._work(self._queue))
            self._context.keep_alive(self._worker)

    @property
    def conversation_id(self) -> str:
        return self.setup.conversation_id

    def stop(self, reason: RunStopped) -> bool:
        """Stop answering now: the loop is cancelled, what completed is stored and billed (or all of
        it refunded if nothing was produced), and the events end with `reason` as an `error` event.
        False if the answer was already complete."""
        if self._worker is None or not self._answering:
            return False
        self._stopped = reason
        self._worker.cancel()
        return True

    # --- the event stream --------------------------------------------------------------------

    async def events(self) -> AsyncIterator[ChatEvent]:
        """The run's events. Leaving early cancels the run; its finish step still completes.

        When the reader falls behind, text deltas already waiting are merged into one event, so a
        busy server sends fewer, larger deltas instead of falling further behind."""
        self.begin()
        worker = self._worker
        assert worker is not None
        held: object = None
        try:
            while True:
                event = held if held is not None else await self._queue.get()
                held = None
                if event is _DONE:
                    break
                if isinstance(event, TextDeltaEvent):
                    text = [event.text]
                    while not self._queue.empty():
                        held = self._queue.get_nowait()
                        if not isinstance(held, TextDeltaEvent):
                            break
                        text.append(held.text)
                        held = None
                    event = TextDeltaEvent("".join(text)) if len(text) > 1 else event
                yield event  # type: ignore[misc]
        finally:
            if not worker.done():
                worker.cancel()
            with anyio.CancelScope(shield=True), anyio.move_on_after(FINISH_TIMEOUT_S + 5):
                await asyncio.wait([worker])

    async def _work(self, queue: asyncio.Queue[object]) -> None:
        context = self._context
        error: Exception | None = None
        cancelled = False
        lease = asyncio.create_task(self._hold_lease())
        self._answering = True
        try:
            queue.put_nowait(
                MessageStart(self.conversation_id, self.query_id, context.model.name, context.model.provider)
            )
            items = await context.history.items(user_id=self.setup.user.id, conversation_id=self.conversation_id)
            prompt = QueryPrompt(
                items, self.setup.query_number, self.setup.message, context.limits.window, context.counter
            )
            loop = self._answer_loop = self._loop(prompt)
            async for event in loop.run():
                if isinstance(event, TextDeltaEvent):
                    self._state.text.append(event.text)
                elif isinstance(event, UsageEvent):
                    self._usage, self._calls = (
                        self._usage + Usage(event.input_tokens, event.output_tokens),
                        self._calls + 1,
                    )
                    self._estimated_calls += event.estimated
                if context.observer is not None:
                    context.observer(event)
                queue.put_nowait(event)
            self._state.turns, self._state.stop_reason = loop.turns, loop.stop_reason or "end_turn"
        except asyncio.CancelledError:
            cancelled, error = True, self._stopped
        except ModelError as exc:
            error = exc
        except Exception as exc:  # boundary: a bug must end the stream with an error, not hang it
            log.exception("chat run %s/%s failed", self.conversation_id, self.query_id)
            error = exc
        self._answering = False
        finisher = asyncio.create_task(self._finish(error=error, cancelled=cancelled, lease=lease))
        context.keep_alive(finisher)
        try:
            for event in await asyncio.shield(finisher):
                queue.put_nowait(event)
            if not cancelled:
                async for summary in self._late_summaries():
                    queue.put_nowait(summary)
        finally:
            queue.put_nowait(_DONE)

    def _loop(self, prompt: QueryPrompt) -> AnswerLoop:
        """The loop that answers this query, by its strategy."""
        context = self._context

        def turn_loop(system: str) -> TurnLoop:
            return TurnLoop(
                model=context.model,
                system=system,
                prompt=prompt,
                registry=context.registry,
                hooks=self.hooks,
                limits=context.limits.loop,
            )

        if self.setup.strategy == "boost":
            return boost_for(context, prompt, turn_loop)
        if self.setup.strategy == "collaborate":
            return collaborate_for(context, prompt, self.hooks, where=f"{self.conversation_id}/{self.query_id}")
        return turn_loop(context.system_prompt)

    def _model_uses(self) -> list[ModelUse]:
        """Each model's tokens for this query, by role (a strategy with several models says)."""
        loop = self._answer_loop
        if loop is not None and hasattr(loop, "model_uses"):
            uses: list[ModelUse] = loop.model_uses()
            return uses
        model = self._context.model
        used = self._usage
        return [
            ModelUse(
                model.provider,
                model.name,
                used.input_tokens,
                used.output_tokens,
                self._calls,
                estimated_calls=self._estimated_calls,
            )
        ]

    async def _hold_lease(self) -> None:
        """Renew the conversation's lease every third of its length while the run lives."""
        context = self._context
        interval = max(0.05, context.limits.lease_s / 3)
        while True:
            await asyncio.sleep(interval)
            started = time.monotonic()
            try:
                held = await context.leases.extend(
                    conversation_id=self.conversation_id, lock_token=self.setup.lock_token
                )
            except Exception:  # boundary: a failed renewal is retried at the next beat
                log.warning("could not renew the lease of %s", self.conversation_id, exc_info=True)
                continue
            if not held:
                log.warning("the lease of %s/%s was lost", self.conversation_id, self.query_id)
                return
            log.debug("lease of %s renewed in %.1f ms", self.conversation_id, (time.monotonic() - started) * 1000)

    # --- finishing ---------------------------------------------------------------------------

    async def _finish(self, *, error: Exception | None, cancelled: bool, lease: asyncio.Task[None]) -> list[ChatEvent]:
        """Store and bill what completed, release the conversation, and say how it ended."""
        try:
            async with asyncio.timeout(FINISH_TIMEOUT_S):
                return await self._settle(error=error, cancelled=cancelled)
        finally:
            lease.cancel()

    async def _settle(self, *, error: Exception | None, cancelled: bool) -> list[ChatEvent]:
        state, context, setup, tools = self._state, self._context, self.setup, self.hooks.tools
        await self.hooks.wait_pending()
        # The model produced something as soon as it wrote text or asked for a tool: a tool call's
        # input is model output too. Only a query with neither is refunded entirely.
        produced = bool(state.text) or tools.count > 0
        if (error is not None or cancelled) and not produced:
            return await self._undo(error)
        await self.hooks.settle()  # every tool item is stored and its price settled
        response = "".join(state.text)
        stop_reason = state.stop_reason or "end_turn"
        events: list[ChatEvent] = []
        if error is not None:
            message = _error_message(error)
            response += f"\n\n[The answer stopped early: {message}]"
            stop_reason = "error"
            events.append(ErrorEvent(_error_code(error), message, refunded=False))
        elif cancelled:
            response += "\n\n[Stopped: the answer was interrupted before it was complete.]"
            stop_reason = "cancelled"
        elif stop_reason in NO_ANSWER:
            await self._refund_base("refund: the answer carried nothing")
        await self._store_response(
            response, status="done" if stop_reason not in ("error", "cancelled") else "interrupted"
        )
        await context.leases.release(conversation_id=self.conversation_id, lock_token=setup.lock_token)
        await record_query_usage(
            context.database,
            user_id=setup.user.id,
            conversation_id=self.conversation_id,
            query_id=self.query_id,
            uses=self._model_uses(),
        )
        ready: dict[str, str] = {}
        for sum_id, job in tools.summary_jobs.items():
            if job.done() and not job.cancelled() and job.exception() is None:
                ready[sum_id] = job.result().text
            elif not job.done():
                self._late[sum_id] = job
        tools.summaries.update(ready)
        summaries = {sum_id: text for sum_id, text in tools.summaries.items() if sum_id not in self._late}
        balance = await context.credits.balance(user_id=setup.user.id)
        response_sum_id = summary_id(response_id(setup.query_number))
        events.append(
            MessageEnd(
                conversation_id=self.conversation_id,
                query_id=self.query_id,
                message_id=response_id(setup.query_number),
                summary_id=response_sum_id,
                summary=summaries.get(response_sum_id),
                response=response,
                tools_used=list(tools.names),
                credits_used=self.credits_used,
                credits_remaining=balance,
                turns=state.turns,
                stop_reason=stop_reason,
                summaries=summaries,
                credit_limit=context.limits.credit_limit,
                credit_limit_reached=tools.limit_reached,
            )
        )
        return events

    async def _late_summaries(self) -> AsyncIterator[SummaryEvent]:
        """The summaries that finish after `message_end`, as they finish (for a bounded time)."""
        pending = {job: sum_id for sum_id, job in self._late.items()}
        deadline = time.monotonic() + self._context.limits.summary_wait_s
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            done, _ = await asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            for job in done:
                sum_id = pending.pop(job)
                if job.cancelled() or job.exception() is not None:
                    continue
                result = job.result()
                yield SummaryEvent(item_id=result.full_id, summary_id=sum_id, summary=result.text, status=result.status)

    @property
    def credits_used(self) -> int:
        """The base charge (unless it was refunded) plus what the tool calls cost so far."""
        base = 0 if self._base_refunded else self.setup.base_charge.amount
        return base + self.hooks.tools.credits

    async def _refund_base(self, reason: str) -> None:
        """Give the query's base price back (its tool calls keep their prices)."""
        await self._context.credits.refund(
            user_id=self.setup.user.id,
            charge=self.setup.base_charge,
            context=ChargeContext(reason, self.conversation_id, self.query_id),
            key=refund_key(self.conversation_id, self.query_id, None),
        )
        self._base_refunded = True

    async def _store_response(self, response: str, *, status: str) -> None:
        context, number = self._context, self.setup.query_number
        full_id = response_id(number)
        sum_id = summary_id(full_id)
        long = needs_summary(response)
        summary = context.summaries.fallback(response, full_id=full_id) if long else response
        await context.history.add(
            conversation_id=self.conversation_id,
            items=[
                ItemRecord(
                    item_id=full_id,
                    query_number=number,
                    kind=ItemKind.RESPONSE,
                    content=response,
                    status=status,
                    credits=self.credits_used,
                    model=context.model.name,
                ),
                ItemRecord(
                    item_id=sum_id,
                    query_number=number,
                    kind=ItemKind.RESPONSE_SUMMARY,
                    content=summary,
                    ref=full_id,
                    status="pending" if long else "done",
                ),
            ],
        )
        self.hooks.tools.summaries[sum_id] = summary
        if long:
            self.hooks.tools.summary_jobs[sum_id] = context.summaries.schedule(
                conversation_id=self.conversation_id,
                summary_id=sum_id,
                full_id=full_id,
                request=SummaryRequest(ItemKind.RESPONSE, response, None, self.setup.message),
            )

    async def _undo(self, error: Exception | None) -> list[ChatEvent]:
        """The query produced nothing: refund it and remove every trace of it."""
        context, setup = self._context, self.setup
        for item_id, charge in list(self.hooks.charges.items()):
            await context.credits.refund(
                user_id=setup.user.id,
                charge=charge,
                context=ChargeContext("refund: interrupted", self.conversation_id, self.query_id, item_id),
                key=refund_key(self.conversation_id, self.query_id, item_id),
            )
        await self._refund_base("refund: the query produced nothing")
        await context.leases.abandon(
            conversation_id=self.conversation_id,
            lock_token=setup.lock_token,
            created=setup.created,
            query_number=setup.query_number,
        )
        if error is None:
            return []
        return [ErrorEvent(_error_code(error), _error_message(error), refunded=True)]


def _error_code(error: Exception) -> str:
    return error.code if isinstance(error, ModelError | RunStopped) else "internal_error"


def _error_message(error: Exception) -> str:
    if isinstance(error, RunStopped):
        return str(error)
    if isinstance(error, ModelError):
        return str(error) or "the model failed"
    return "an internal error stopped the answer; it has been logged"
