"""One discussion being held: turn by turn, each speaker answers with the ordinary turn loop (or the
collaboration loop), and every turn is stored and billed before the next begins.

A turn costs `DISCUSSION_TURN_COST`, debited before the speaker is asked (turn 1 when the discussion
is accepted, so a balance that cannot pay for it is a 402 and nothing starts); its tool calls are
priced, stored and refunded exactly as in a chat (`chat/hooks.py`, the turn's ceiling is
MAX_QUERY_CREDITS). When a later turn cannot be paid, the discussion stops there with an `error`
event (`insufficient_credits`) and `discussion_end` (`credits_exhausted`). A turn that produced
nothing (a model that failed at once, a reader that left) is refunded; one that produced something
keeps its price and is stored with a note saying how it ended. A turn whose speaker declined to
answer (stop reason `declined` or `refusal`) is stored and shown, but its price is refunded.

The run lives in a task of its own, holding a lease on the discussion that it renews; a reader that
leaves early cancels it, and what completed is stored and billed in a finish step that cancellation
cannot interrupt. A discussion whose process died is settled by the service's sweep. The run gets
what it needs from its service as a `DiscussionContext` (`discussions/runtime.py`) and never
imports the service.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import timedelta

import anyio

from almanac.billing.ledger import Charge, ChargeContext, refund_key
from almanac.billing.pricing import DISCUSSION_TURN_COST
from almanac.chat.events import ErrorEvent, EscalationEvent, TextDeltaEvent, UsageEvent
from almanac.chat.hooks import QueryHooks, QueryRef
from almanac.chat.strategies.collaborate import CollaborateLoop, collaborate_turn_loop
from almanac.chat.strategies.relevance import LexicalRelevance
from almanac.chat.strategies.setup import AnswerLoop
from almanac.chat.turn import NO_ANSWER, TurnLoop
from almanac.discussions.events import DiscussionEnd, DiscussionEvent, DiscussionStart, InTurn, TurnEnd, TurnStart
from almanac.discussions.prompts import Said, fit_transcript, instruction, system_prompt
from almanac.discussions.runtime import DiscussionContext
from almanac.discussions.spec import DiscussionSpec, Participant
from almanac.llm.base import Model, ModelError
from almanac.llm.messages import Usage
from almanac.memory.context import QueryPrompt
from almanac.memory.ids import ItemKind, query_id, response_id
from almanac.storage import discussions as store
from almanac.storage.discussions import DiscussionRecord
from almanac.storage.records import ItemRecord, UserRecord
from almanac.tools.registry import ToolRegistry
from almanac.usage.recording import ModelUse, record_query_usage

log = logging.getLogger(__name__)
FINISH_TIMEOUT_S = 30.0
_DONE = object()


@dataclass
class _Turn:
    """The turn being held: who speaks, what it has said, what it cost."""

    number: int
    speaker: Participant
    model: Model
    charge: Charge
    hooks: QueryHooks
    text: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    estimated_calls: int = 0  # calls whose tokens the server did not report
    escalations: int = 0
    helper: list[ModelUse] = field(default_factory=list)
    helper_name: str = ""  # the catalog name of its collaboration helper


class DiscussionRun:
    """Holds one discussion. Iterate `events()` once."""

    def __init__(
        self,
        context: DiscussionContext,
        *,
        record: DiscussionRecord,
        spec: DiscussionSpec,
        user: UserRecord,
        first_charge: Charge,
        registry: ToolRegistry,
    ) -> None:
        self._context = context
        self.record = record
        self.spec = spec
        self.user = user
        self.registry = registry
        self._first_charge = first_charge
        self._said: list[Said] = []
        self._current: _Turn | None = None
        self._turns_done = 0
        self._credits_used = 0
        self._end = ("done", "completed")
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self._closing: asyncio.Future[bool] | None = None
        self._paying: asyncio.Task[Charge | None] | None = None  # a turn's debit under way
        self._unspent: tuple[int, Charge] | None = None  # paid for, but its speaker was never asked

    @property
    def discussion_id(self) -> str:
        return self.record.id

    def begin(self) -> None:
        """Start now; the discussion runs (and is stored and billed) even if nobody reads it."""
        if self._worker is None:
            self._worker = asyncio.create_task(self._work())
            self._context.keep_alive(self._worker, running=True)

    async def events(self) -> AsyncIterator[DiscussionEvent]:
        """The discussion's events. Leaving early stops it; its finish step still completes."""
        self.begin()
        worker = self._worker
        assert worker is not None
        try:
            while (event := await self._queue.get()) is not _DONE:
                yield event  # type: ignore[misc]
        finally:
            if not worker.done():
                worker.cancel()
            with anyio.CancelScope(shield=True), anyio.move_on_after(FINISH_TIMEOUT_S + 5):
                await asyncio.wait([worker])

    # --- holding the discussion -------------------------------------------------------------------

    async def _work(self) -> None:
        emit: Callable[[object], None] = self._queue.put_nowait
        lease = asyncio.create_task(self._hold_lease())
        failure: Exception | None = None
        cancelled = False
        try:
            await self._discuss(emit)
        except asyncio.CancelledError:
            cancelled = True
        except ModelError as exc:
            failure = exc
        except Exception as exc:  # boundary: a bug ends the discussion with an error, never a hung stream
            log.exception("discussion %s failed", self.discussion_id)
            failure = exc
        finisher = asyncio.create_task(self._finish(emit, failure=failure, cancelled=cancelled, lease=lease))
        self._context.keep_alive(finisher)
        try:
            await asyncio.shield(finisher)
        finally:
            emit(_DONE)

    async def _discuss(self, emit: Callable[[object], None]) -> None:
        spec = self.spec
        emit(DiscussionStart(self.discussion_id, spec.goal, spec.turns, [dict(p.__dict__) for p in spec.participants]))
        for number in range(1, spec.turns + 1):
            charge = self._first_charge if number == 1 else await self._pay(number)
            self._unspent = (number, charge) if charge is not None else None
            if charge is None:
                balance = await self._context.credits.balance(user_id=self.user.id)
                emit(
                    ErrorEvent(
                        "insufficient_credits",
                        f"Turn {number} needs {DISCUSSION_TURN_COST} credits and the balance is {balance}: the "
                        "discussion stops here.",
                    )
                )
                self._end = ("stopped", "credits_exhausted")
                return
            await self._turn(number, charge, emit)
        self._end = ("done", "completed")

    async def _pay(self, number: int) -> Charge | None:
        """Debit a turn, in a task of its own: a run cancelled meanwhile still learns what was taken."""
        context = ChargeContext("discussion turn", self.discussion_id, query_id(number))
        debit = self._context.credits.debit(user_id=self.user.id, amount=DISCUSSION_TURN_COST, context=context)
        self._paying = asyncio.ensure_future(debit)
        charge = await asyncio.shield(self._paying)
        self._paying = None
        return charge

    async def _turn(self, number: int, charge: Charge, emit: Callable[[object], None]) -> None:
        context, spec = self._context, self.spec
        speaker = spec.speaker(number)
        model = context.catalog.get(speaker.model)
        asked = instruction(spec, number)
        hooks = QueryHooks(
            QueryRef(
                self.user.id,
                self.discussion_id,
                number,
                query_id(number),
                asked,
                base_credits=charge.amount,
                credit_limit=context.limits.credit_limit,
            ),
            credits=context.credits,
            history=context.items,
            summaries=context.summaries,
        )
        turn = self._current = _Turn(number, speaker, model, charge, hooks)
        self._unspent = None
        emit(
            TurnStart(
                self.discussion_id, number, speaker.index, speaker.name, speaker.role, speaker.model, model.provider
            )
        )
        loop = self._loop(turn, asked)
        async for event in loop.run():
            if isinstance(event, TextDeltaEvent):
                turn.text.append(event.text)
            extra = {}
            if isinstance(event, UsageEvent):
                turn.usage, turn.calls = turn.usage + Usage(event.input_tokens, event.output_tokens), turn.calls + 1
                turn.estimated_calls += event.estimated
                extra = {"model": speaker.model, "role": "participant"}
            elif isinstance(event, EscalationEvent):  # models by the names the discussion uses
                extra = {"from_model": speaker.model, "to_model": turn.helper_name}
            emit(InTurn(event, number, speaker.index, extra))
        if isinstance(loop, CollaborateLoop):
            turn.escalations = len(loop.escalations)
            turn.helper = [use for use in loop.model_uses() if use.role == "helper"]
            for use in turn.helper:
                usage = UsageEvent(0, use.input_tokens, use.output_tokens, estimated=use.estimated_calls > 0)
                emit(InTurn(usage, number, speaker.index, {"model": turn.helper_name, "role": "helper"}))
        # Closing stores and bills the turn: a reader leaving meanwhile must not cut it in half.
        self._closing = asyncio.ensure_future(self._close(turn, emit, stop_reason=loop.stop_reason or "end_turn"))
        await asyncio.shield(self._closing)

    def _loop(self, turn: _Turn, asked: str) -> AnswerLoop:
        """The speaker's answer: the turn loop, or with collaboration on, the collaboration loop."""
        context, spec, model = self._context, self.spec, turn.model
        window = context.window_for(model)
        transcript = fit_transcript(
            self._said,
            budget=max(200, window.prompt_tokens // 2),
            counter=context.counter,
            retrievable="retrieve_full_context" in self.registry,
        )
        tools = bool(len(self.registry)) and model.supports_tools
        system = system_prompt(spec, turn.number, transcript, tools=tools)
        prompt = QueryPrompt((), turn.number, asked, window, context.counter)
        if not spec.collaboration.enabled:
            limits = context.limits.loop
            return TurnLoop(
                model=model, system=system, prompt=prompt, registry=self.registry, hooks=turn.hooks, limits=limits
            )
        pair = spec.collaboration.pair_for((turn.speaker.model, model.name))
        turn.helper_name = pair.secondary or turn.speaker.model
        return collaborate_turn_loop(
            primary=model,
            helper=context.catalog.get(pair.secondary) if pair.secondary else None,
            pair=pair,
            system=system,
            task=f"{spec.goal}\n\n{asked}",
            prompt=prompt,
            registry=self.registry,
            hooks=turn.hooks,
            limits=context.limits.loop,
            relevance=context.relevance or LexicalRelevance(),
            helper_timeout_s=context.helper_timeout_s,
            where=f"discussion {self.discussion_id}/{query_id(turn.number)}",
            question=spec.goal,
        )

    # --- closing turns and the discussion -----------------------------------------------------------

    async def _close(self, turn: _Turn, emit: Callable[[object], None], *, stop_reason: str, note: str = "") -> bool:
        """Store and bill the turn (refund it if it produced nothing); True if it was kept."""
        context = self._context
        self._current = None
        await turn.hooks.settle()
        tools = turn.hooks.tools
        if note and not turn.text and tools.count == 0:
            await context.credits.refund(
                user_id=self.user.id,
                charge=turn.charge,
                context=ChargeContext("refund: the turn produced nothing", self.discussion_id, query_id(turn.number)),
                key=refund_key(self.discussion_id, query_id(turn.number), None),
            )
            return False
        text = "".join(turn.text) + note
        base = turn.charge.amount
        if not note and stop_reason in NO_ANSWER:  # the speaker said it cannot answer: the turn is free
            await context.credits.refund(
                user_id=self.user.id,
                charge=turn.charge,
                context=ChargeContext("refund: the turn carried nothing", self.discussion_id, query_id(turn.number)),
                key=refund_key(self.discussion_id, query_id(turn.number), None),
            )
            base = 0
        credits = base + tools.credits
        message = ItemRecord(
            item_id=response_id(turn.number),
            query_number=turn.number,
            kind=ItemKind.RESPONSE,
            content=text,
            status="interrupted" if note else "done",
            credits=credits,
        )
        await context.items.add_message(
            discussion_id=self.discussion_id, item=message, speaker=turn.speaker.index, model=turn.speaker.model
        )
        model = turn.model
        uses = [
            ModelUse(
                model.provider,
                model.name,
                turn.usage.input_tokens,
                turn.usage.output_tokens,
                turn.calls,
                "participant",
                turn.estimated_calls,
            )
        ]
        await record_query_usage(
            context.database,
            user_id=self.user.id,
            conversation_id=self.discussion_id,
            query_id=query_id(turn.number),
            uses=[*uses, *turn.helper],
        )
        self._credits_used += credits
        self._turns_done = turn.number
        self._said.append(Said(turn.number, message.item_id, turn.speaker, turn.speaker.model, text))
        await self._progress("running", "", lease=True)
        emit(
            TurnEnd(
                self.discussion_id,
                turn.number,
                turn.speaker.index,
                message.item_id,
                text,
                list(tools.names),
                credits,
                await context.credits.balance(user_id=self.user.id),
                "interrupted" if note else stop_reason,
                turn.escalations,
            )
        )
        return True

    async def _finish(
        self, emit: Callable[[object], None], *, failure: Exception | None, cancelled: bool, lease: asyncio.Task[None]
    ) -> None:
        try:
            async with asyncio.timeout(FINISH_TIMEOUT_S):
                if cancelled:
                    self._end = ("stopped", "cancelled")
                elif failure is not None:
                    self._end = ("failed", "model_error" if isinstance(failure, ModelError) else "internal_error")
                if self._closing is not None:
                    await asyncio.wait([self._closing])  # a turn was being closed when the run stopped
                await self._refund_unspent()
                turn = self._current
                kept = False
                if turn is not None:
                    why = "interrupted" if cancelled else "stopped by an error"
                    kept = await self._close(turn, emit, stop_reason="error", note=f"\n\n[The turn was {why}.]")
                if failure is not None:
                    code = failure.code if isinstance(failure, ModelError) else "internal_error"
                    message = str(failure) if isinstance(failure, ModelError) else "an internal error stopped it"
                    emit(ErrorEvent(code, f"The discussion stopped: {message}", refunded=turn is not None and not kept))
                status, reason = self._end
                await self._progress(status, reason, lease=False)
                emit(
                    DiscussionEnd(
                        self.discussion_id,
                        status,
                        reason,
                        self._turns_done,
                        self._credits_used,
                        await self._context.credits.balance(user_id=self.user.id),
                    )
                )
        finally:
            lease.cancel()

    async def _refund_unspent(self) -> None:
        """Give back a turn that was paid for (or being paid for) when the run stopped, but whose
        speaker was never asked."""
        if self._paying is not None:
            charge = await self._paying
            self._unspent = (self._turns_done + 1, charge) if charge is not None else None
        if self._unspent is None:
            return
        number, charge = self._unspent
        self._unspent = None
        await self._context.credits.refund(
            user_id=self.user.id,
            charge=charge,
            context=ChargeContext("refund: the turn never started", self.discussion_id, query_id(number)),
            key=refund_key(self.discussion_id, query_id(number), None),
        )

    async def _progress(self, status: str, reason: str, *, lease: bool) -> None:
        context = self._context
        until = context.clock() + timedelta(seconds=context.limits.lease_s) if lease else None
        async with context.database.session() as session:
            await store.record_progress(
                session,
                discussion_id=self.discussion_id,
                turns_done=self._turns_done,
                credits_used=self._credits_used,
                status=status,
                stop_reason=reason,
                lease_until=until,
            )

    async def _hold_lease(self) -> None:
        """Renew the discussion's lease every third of its length while it runs."""
        context = self._context
        while True:
            await asyncio.sleep(max(0.05, context.limits.lease_s / 3))
            try:
                async with context.database.session() as session:
                    until = context.clock() + timedelta(seconds=context.limits.lease_s)
                    await store.extend_lease(session, discussion_id=self.discussion_id, lease_until=until)
            except Exception:  # boundary: a failed renewal is retried at the next beat
                log.warning("could not renew the lease of discussion %s", self.discussion_id, exc_info=True)
