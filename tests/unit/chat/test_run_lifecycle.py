"""A query's lifecycle on SQLite and PostgreSQL: the answer ends without waiting for summaries, the
lease is short but held while the run lives, a query whose process died is settled, a conversation
cannot be deleted while it answers, and no request outgrows the model's window."""

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.support import make_user

from almanac.billing.ledger import ChargeContext
from almanac.chat.errors import ContextTooLarge, ConversationBusy
from almanac.chat.events import ChatOutcome, MessageEnd, SummaryEvent
from almanac.chat.service import collect
from almanac.llm.base import ModelContextTooLong
from almanac.llm.events import ModelEvent, StreamEnd, TextDelta
from almanac.llm.fake import ScriptedModel, reply
from almanac.llm.messages import ModelRequest
from almanac.main import Services
from almanac.memory.summarise import SummaryRequest
from almanac.storage import conversations as store
from almanac.storage.records import ItemRecord

LONG = "A long answer about retries, backoff and jitter, in many words. " * 30


class SlowSummariser:
    """A summariser that answers only when released (a real one takes seconds)."""

    name = "slow"

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def summarise(self, request: SummaryRequest) -> str:
        await self.release.wait()
        return "summary of " + request.content[:20]


@pytest.fixture
def make(database_url: str, build: Any) -> Any:
    def factory(*steps: Any, summariser: Any = None, **settings: Any) -> tuple[Services, ScriptedModel]:
        model = ScriptedModel(steps)
        services, _ = build(database_url, model=model, **settings)
        if summariser is not None:
            services.summaries.summariser = summariser
        return services, model

    return factory


def hanging(release: asyncio.Event) -> Any:
    async def stream(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("working on it")
        await release.wait()
        yield StreamEnd("end_turn")

    return stream


async def test_the_answer_ends_and_the_conversation_is_free_before_summaries_are_written(make: Any) -> None:
    summariser = SlowSummariser()
    services, _ = make(reply(LONG), reply("second"), summariser=summariser, summary_wait_s=30)
    user = (await make_user(services)).user
    run = await services.chat.start(user=user, message="explain retries", conversation_id=None)
    stream = run.events()
    events = []
    async for event in stream:
        events.append(event)
        if isinstance(event, MessageEnd):
            break
    end = events[-1]
    assert isinstance(end, MessageEnd) and end.summary is None and end.response == LONG
    # The conversation was released at message_end: the next question is accepted at once.
    second = await services.chat.start(user=user, message="and jitter?", conversation_id=run.conversation_id)
    assert (await collect(second))[-1].type == "message_end"
    summariser.release.set()
    late = [event async for event in stream]
    assert [type(e) for e in late] == [SummaryEvent]
    assert late[0].summary_id == "q1-r-sum" and late[0].item_id == "q1-r" and late[0].status == "done"
    stored = await services.history.item(user_id=user.id, conversation_id=run.conversation_id, item_id="q1-r-sum")
    assert stored is not None and stored.content == late[0].summary and stored.status == "done"


async def test_late_summaries_are_stored_even_when_nobody_waits_for_them(make: Any) -> None:
    summariser = SlowSummariser()
    services, _ = make(reply(LONG), summariser=summariser, summary_wait_s=0)
    user = (await make_user(services)).user
    outcome = ChatOutcome.of(await collect(await services.chat.start(user=user, message="q", conversation_id=None)))
    assert outcome.end is not None and outcome.end.summary is None and not outcome.late_summaries
    summariser.release.set()
    await services.summaries.drain(timeout_s=5)
    stored = await services.history.item(
        user_id=user.id, conversation_id=outcome.end.conversation_id, item_id="q1-r-sum"
    )
    assert stored is not None and stored.status == "done" and stored.content.startswith("summary of")


async def test_the_lease_is_short_but_renewed_while_the_run_lives(make: Any) -> None:
    release = asyncio.Event()
    services, _ = make(hanging(release), conversation_lease_s=1.0)
    user = (await make_user(services)).user
    run = await services.chat.start(user=user, message="slow one", conversation_id=None)
    stream = run.events()
    await stream.__anext__()
    await asyncio.sleep(2.5)  # more than two lease lengths: only renewal keeps it held
    with pytest.raises(ConversationBusy):
        await services.chat.start(user=user, message="meanwhile", conversation_id=run.conversation_id)
    release.set()
    rest = [event async for event in stream]
    assert isinstance(rest[-1], MessageEnd)


async def dead_query(services: Services, user_id: str, conversation_id: str, *, now: datetime) -> None:
    """The state a process leaves when it dies answering q2: lease held, base and one tool paid."""
    async with services.database.session() as session:
        number = await store.begin_query(
            session,
            user_id=user_id,
            conversation_id=conversation_id,
            lock_token="dead-process",
            now=now,
            lease_until=now + timedelta(seconds=30),
        )
        assert number == 2
        await store.add_items(
            session,
            conversation_id=conversation_id,
            items=[
                ItemRecord("q2", 2, "query", "a question the dead process was answering"),
                ItemRecord("q2-t1", 2, "tool_result", "a result", tool_name="cheap", credits=2),
            ],
        )
    paid = await services.credits.debit_many(
        user_id=user_id,
        items=[
            (5, ChargeContext("query", conversation_id, "q2")),
            (2, ChargeContext("tool", conversation_id, "q2", "q2-t1")),
        ],
    )
    assert all(paid)


async def test_a_query_left_by_a_dead_process_is_settled_by_the_next_request(make: Any) -> None:
    services, _ = make(reply("first"), reply("third"))
    user = (await make_user(services)).user
    first = ChatOutcome.of(await collect(await services.chat.start(user=user, message="q1", conversation_id=None)))
    assert first.end is not None
    conversation = first.end.conversation_id
    now = datetime.now(UTC)
    await dead_query(services, user.id, conversation, now=now)
    assert await services.credits.balance(user_id=user.id) == 50 - 5 - 7
    with pytest.raises(ConversationBusy):  # while the lease lasts, the conversation is busy
        await services.chat.start(user=user, message="q3", conversation_id=conversation)
    services.chat.clock = lambda: now + timedelta(seconds=31)
    third = ChatOutcome.of(
        await collect(await services.chat.start(user=user, message="q3", conversation_id=conversation))
    )
    assert third.end is not None and third.end.query_id == "q3"
    assert await services.credits.balance(user_id=user.id) == 50 - 5 - 5  # q2 refunded in full
    interrupted = await services.history.item(user_id=user.id, conversation_id=conversation, item_id="q2-r")
    assert interrupted is not None and interrupted.status == "interrupted" and "Interrupted" in interrupted.content
    assert await services.chat.settle_abandoned(user_id=user.id, conversation_id=conversation) is False
    sums = await services.credits.ledger_sums(user_id=user.id)
    assert sums.get("daily", 0) == 40


async def test_the_startup_sweep_settles_dead_queries_once(make: Any) -> None:
    services, _ = make(reply("first"))
    user = (await make_user(services)).user
    first = ChatOutcome.of(await collect(await services.chat.start(user=user, message="q1", conversation_id=None)))
    assert first.end is not None
    now = datetime.now(UTC)
    await dead_query(services, user.id, first.end.conversation_id, now=now)
    assert await services.chat.sweep() == 0  # the lease has not expired yet
    services.chat.clock = lambda: now + timedelta(seconds=31)
    assert await services.chat.sweep() == 1
    assert await services.chat.sweep() == 0
    assert await services.credits.balance(user_id=user.id) == 45


async def test_a_conversation_cannot_be_deleted_while_it_answers(make: Any) -> None:
    release = asyncio.Event()
    services, _ = make(hanging(release))
    user = (await make_user(services)).user
    run = await services.chat.start(user=user, message="slow", conversation_id=None)
    stream = run.events()
    await stream.__anext__()
    assert await services.conversations.delete(user_id=user.id, conversation_id=run.conversation_id) == "busy"
    release.set()
    events = [event async for event in stream]
    assert isinstance(events[-1], MessageEnd)  # settled normally: stored and billed
    assert await services.credits.balance(user_id=user.id) == 45
    assert await services.conversations.delete(user_id=user.id, conversation_id=run.conversation_id) == "deleted"


async def test_a_message_that_cannot_fit_the_window_is_refused_before_any_charge(make: Any) -> None:
    services, model = make(reply("never"), model_context_tokens=4_000, max_output_tokens=1_000)
    user = (await make_user(services)).user
    with pytest.raises(ContextTooLarge) as refused:
        await services.chat.start(user=user, message="word " * 6_000, conversation_id=None)
    assert refused.value.limit < refused.value.size
    assert await services.credits.balance(user_id=user.id) == 50
    assert model.requests == []
    assert await services.conversations.page(user_id=user.id, limit=5, offset=0) == ([], 0)


async def test_history_gives_way_so_every_request_fits(make: Any) -> None:
    message = "Please review this design note about caching layers and invalidation. " * 80  # ~5,700 chars
    services, model = make(*(reply("Noted: " + message[:1500]) for _ in range(12)), model_context_tokens=8_000)
    user = (await make_user(services)).user
    await services.credits.grant_pack(user_id=user.id, amount=500, reason="test")
    conversation = None
    for _ in range(12):
        outcome = ChatOutcome.of(
            await collect(await services.chat.start(user=user, message=message, conversation_id=conversation))
        )
        assert outcome.end is not None and outcome.error is None
        conversation = outcome.end.conversation_id
    window = services.chat.limits.window
    counter = services.chat.counter
    for request in model.requests:
        used = (
            counter.count(request.system)
            + counter.count_tools(request.tools)
            + counter.count_messages(request.messages)
        )
        assert used <= window.prompt_tokens
    last = model.requests[-1]
    assert "[Memory: earlier queries q1–" in last.messages[0].text
    assert "[ID:q12] Please review" in last.messages[-1].text  # the note may lead it when no history fits
    assert conversation is not None
    for number in range(1, 13):  # nothing is lost: every item is still there by ID
        assert await services.history.item(user_id=user.id, conversation_id=conversation, item_id=f"q{number}")


async def test_a_provider_that_says_too_long_gets_one_retry_with_half_the_window(make: Any) -> None:
    earlier = [reply(f"answer {n}") for n in range(12)]
    services, model = make(
        *earlier, ModelContextTooLong("prompt is too long"), reply("after a retry"), model_context_tokens=16_000
    )
    user = (await make_user(services)).user
    await services.credits.grant_pack(user_id=user.id, amount=500, reason="test")
    conversation = None
    for text in [f"question {n}: " + "detail " * 700 for n in range(12)] + ["the last one"]:
        run = await services.chat.start(user=user, message=text, conversation_id=conversation)
        outcome = ChatOutcome.of(await collect(run))
        conversation = run.conversation_id
    assert outcome.end is not None and outcome.end.response == "after a retry"
    failed, retried = model.requests[12], model.requests[13]
    assert len(retried.messages) < len(failed.messages)  # half the window: older queries gave way
    assert "[Memory: earlier queries" in retried.messages[0].text


async def test_a_second_too_long_fails_the_answer_cleanly(make: Any) -> None:
    services, _ = make(ModelContextTooLong("too long"), ModelContextTooLong("still too long"))
    user = (await make_user(services)).user
    outcome = ChatOutcome.of(await collect(await services.chat.start(user=user, message="hi", conversation_id=None)))
    assert outcome.error is not None and outcome.error.code == "model_context_too_long" and outcome.error.refunded
    assert await services.credits.balance(user_id=user.id) == 50
