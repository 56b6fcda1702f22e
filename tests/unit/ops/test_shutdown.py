"""Graceful shutdown: the grace period, then stopping what still runs — chat runs store and bill what
completed, release their conversation and end with an `error` event; nothing is left half-written."""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import anyio
from tests.support import make_user, services_for

from almanac.chat.events import ErrorEvent, MessageEnd, TextDeltaEvent
from almanac.chat.run import RunStopped
from almanac.llm.events import ModelEvent, StreamEnd, TextDelta, UsageReport
from almanac.llm.fake import ScriptedModel, reply
from almanac.llm.messages import ModelRequest, Usage
from almanac.ops.shutdown import Shutdown
from almanac.storage import conversations as conversation_store

STOPPED = RunStopped("the server is shutting down")


async def test_stoppers_run_when_the_grace_period_ends_not_before() -> None:
    shutdown = Shutdown(grace_s=0.3)
    calls: list[str] = []
    shutdown.on_deadline(lambda: calls.append("chat") or 2)
    shutdown.begin()
    shutdown.begin()  # a second signal does not restart the clock
    await asyncio.sleep(0.1)
    assert calls == [] and shutdown.draining
    await asyncio.sleep(0.4)
    assert calls == ["chat"] and shutdown.stopped == 2
    await shutdown.close()


async def test_an_interruptible_stream_is_cancelled_at_the_deadline_and_only_then() -> None:
    shutdown = Shutdown(grace_s=0.2)
    sent: list[float] = []  # when each piece went out
    loop = asyncio.get_running_loop()

    async def forward() -> bool:
        with shutdown.interruptible() as scope:
            for _ in range(1000):
                sent.append(loop.time())
                await asyncio.sleep(0.01)
        return scope.cancelled_caught

    task = asyncio.create_task(forward())
    await asyncio.sleep(0.05)
    began = loop.time()
    shutdown.begin()
    assert await task is True
    assert len(sent) < 1000  # stopped before it was done
    assert sent[-1] - began >= 0.2 - 0.02  # but only after the grace period: it went on sending until then
    quiet = Shutdown(grace_s=10)
    with quiet.interruptible() as scope:
        await asyncio.sleep(0)
    assert not scope.cancelled_caught and quiet.stop_now() == 0


async def test_a_failing_stopper_does_not_keep_the_others_from_running() -> None:
    shutdown = Shutdown(grace_s=0)
    ran: list[int] = []

    def broken() -> int:
        raise RuntimeError("bug")

    shutdown.on_deadline(broken)
    shutdown.on_deadline(lambda: ran.append(1) or 1)
    assert shutdown.stop_now() == 1 and ran == [1]


def slow_answer(words: int, *, delay_s: float = 0.02) -> Any:
    """A model step that streams `words` words, `delay_s` apart."""

    async def stream(_: ModelRequest) -> AsyncIterator[ModelEvent]:
        for i in range(words):
            await asyncio.sleep(delay_s)
            yield TextDelta(f"word{i} ")
        yield UsageReport(Usage(10, words))
        yield StreamEnd("end_turn")

    return stream


def silent(_: ModelRequest) -> AsyncIterator[ModelEvent]:
    async def stream() -> AsyncIterator[ModelEvent]:
        await anyio.sleep_forever()
        yield StreamEnd("end_turn")

    return stream()


async def ledger_matches(services: Any, user_id: str) -> bool:
    sums = await services.credits.ledger_sums(user_id=user_id)
    return sum(sums.values()) == await services.credits.balance(user_id=user_id)


async def test_a_stopped_answer_keeps_and_bills_what_it_said_and_frees_the_conversation(database_url: str) -> None:
    model = ScriptedModel([slow_answer(500)], default=reply("next"))
    services, _ = services_for(database_url, model=model)
    try:
        user = (await make_user(services)).user
        run = await services.chat.start(user=user, message="explain asyncio", conversation_id=None)
        events = []
        async for event in run.events():
            events.append(event)
            if isinstance(event, TextDeltaEvent) and sum(isinstance(e, TextDeltaEvent) for e in events) == 3:
                assert services.chat.stop_all(STOPPED) == 1
        errors = [e for e in events if isinstance(e, ErrorEvent)]
        ends = [e for e in events if isinstance(e, MessageEnd)]
        assert [(e.code, e.refunded) for e in errors] == [("server_shutting_down", False)]
        assert len(ends) == 1 and ends[0].stop_reason == "error" and ends[0].credits_used == 5
        stored = await services.history.items(user_id=user.id, conversation_id=run.conversation_id)
        answer = next(item for item in stored if item.item_id == "q1-r")
        assert answer.status == "interrupted" and answer.content.startswith("word0 word1 word2")
        assert "shutting down" in answer.content
        assert await services.credits.balance(user_id=user.id) == 45
        assert await ledger_matches(services, user.id)
        # the conversation was released: the next message is answered, not refused as busy
        follow = await services.chat.start(user=user, message="and then?", conversation_id=run.conversation_id)
        assert next(e for e in [e async for e in follow.events()] if isinstance(e, MessageEnd)).query_id == "q2"
        assert services.chat.stop_all(STOPPED) == 0  # nothing is answering any more
    finally:
        await services.chat.drain(timeout_s=5)
        await services.database.dispose()


async def test_a_stopped_answer_that_said_nothing_is_refunded_and_leaves_no_trace(database_url: str) -> None:
    services, _ = services_for(database_url, model=ScriptedModel([silent]))
    try:
        user = (await make_user(services)).user
        run = await services.chat.start(user=user, message="explain asyncio", conversation_id=None)
        events = []
        async for event in run.events():
            events.append(event)
            if len(events) == 1:  # message_start: the loop is running (and waits on the model)
                assert services.chat.stop_all(STOPPED) == 1
        assert [type(e).__name__ for e in events] == ["MessageStart", "ErrorEvent"]
        assert isinstance(events[-1], ErrorEvent) and events[-1].refunded
        assert events[-1].code == "server_shutting_down"
        assert await services.credits.balance(user_id=user.id) == 50
        assert await ledger_matches(services, user.id)
        async with services.database.session() as session:
            assert (
                await conversation_store.get_conversation(session, user_id=user.id, conversation_id=run.conversation_id)
                is None
            )
    finally:
        await services.chat.drain(timeout_s=5)
        await services.database.dispose()
