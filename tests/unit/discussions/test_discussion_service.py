"""Holding discussions, on SQLite and PostgreSQL: what each speaker sees, how turns that fail or are
cut short are stored and billed, and how a discussion left running by a dead process is settled."""

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support import make_user

from almanac.billing.ledger import ChargeContext
from almanac.chat.events import ErrorEvent
from almanac.discussions.events import DiscussionEnd, DiscussionEvent, TurnEnd, TurnStart
from almanac.discussions.spec import DiscussionRequest, ParticipantRequest
from almanac.llm.base import Model, ModelUnavailable
from almanac.llm.catalog import ModelCatalog
from almanac.llm.events import ModelEvent, TextDelta
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.llm.messages import ModelRequest, ToolResultBlock
from almanac.main import Services
from almanac.storage import discussions as store

GOAL = "Plan the 2.0 release"


def two(first: ScriptedModel, second: ScriptedModel, services: Services, turns: int = 2) -> DiscussionRequest:
    for model in (first, second):
        services.discussions.catalog.add(role="test", model=model)  # type: ignore[union-attr]
    return DiscussionRequest(
        goal=GOAL,
        turns=turns,
        participants=[ParticipantRequest(first.name, "plans"), ParticipantRequest(second.name, "reviews", "Rev")],
    )


async def hold(services: Services, user: Any, request: DiscussionRequest) -> list[DiscussionEvent]:
    run = await services.discussions.start(user=user, request=request)  # type: ignore[union-attr]
    return [event async for event in run.events()]


async def test_each_speaker_sees_the_discussion_so_far_and_can_fetch_a_whole_message(
    database_url: str, build: Any
) -> None:
    services, _ = build(database_url)
    planner = ScriptedModel(
        [reply("Ship on Friday."), calls(call("retrieve_full_context", {"id": "q2-r"})), reply("Agreed.")], name="a"
    )
    reviewer = ScriptedModel([reply("Friday is risky: the migration is untested.")], name="b")
    user = (await make_user(services)).user
    events = await hold(services, user, two(planner, reviewer, services, turns=3))
    seen_by_reviewer = reviewer.requests[0].system
    assert "Ship on Friday." in seen_by_reviewer and "You are Rev (reviews)" in seen_by_reviewer
    third = planner.requests[1]
    assert "Friday is risky" in third.system and "Ship on Friday." in third.system
    assert third.messages[-1].text.endswith("This is the last turn: conclude the discussion.")
    fetched = [b for b in planner.requests[2].messages[-1].content if isinstance(b, ToolResultBlock)]
    assert "Friday is risky: the migration is untested." in fetched[0].content
    ends = [e for e in events if isinstance(e, TurnEnd)]
    assert [(e.turn, e.speaker, e.credits_used) for e in ends] == [(1, 0, 5), (2, 1, 5), (3, 0, 7)]
    assert await services.credits.balance(user_id=user.id) == 33


async def test_a_model_that_fails_at_once_is_refunded_and_ends_the_discussion(database_url: str, build: Any) -> None:
    services, _ = build(database_url)
    user = (await make_user(services)).user
    request = two(
        ScriptedModel([reply("Ship on Friday.")], name="a"),
        ScriptedModel([ModelUnavailable("down")], name="b"),
        services,
    )
    events = await hold(services, user, request)
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert (error.code, error.refunded) == ("model_unavailable", True) and "down" in error.message
    end = events[-1]
    assert isinstance(end, DiscussionEnd)
    assert (end.status, end.stop_reason, end.turns_done, end.credits_used, end.credits_remaining) == (
        "failed",
        "model_error",
        1,
        5,
        45,
    )
    found = await services.discussions.get(user_id=user.id, discussion_id=end.discussion_id)  # type: ignore[union-attr]
    assert found is not None and [e.item.item_id for e in found[1]] == ["q1-r"] and found[0].status == "failed"


async def test_a_model_that_fails_midway_keeps_what_it_said(database_url: str, build: Any) -> None:
    async def half(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("Friday is")
        raise ModelUnavailable("connection lost")

    services, _ = build(database_url)
    user = (await make_user(services)).user
    events = await hold(
        services, user, two(ScriptedModel([reply("Ship.")], name="a"), ScriptedModel([half], name="b"), services)
    )
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.refunded is False
    second = [e for e in events if isinstance(e, TurnEnd)][-1]
    assert second.response == "Friday is\n\n[The turn was stopped by an error.]" and second.stop_reason == "interrupted"
    assert await services.credits.balance(user_id=user.id) == 40


async def test_a_reader_that_leaves_stops_the_discussion_and_refunds_the_unfinished_turn(
    database_url: str, build: Any
) -> None:
    asked = asyncio.Event()

    async def forever(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        asked.set()
        await asyncio.Event().wait()
        yield TextDelta("never")

    services, _ = build(database_url)
    user = (await make_user(services)).user
    request = two(ScriptedModel([reply("Ship.")], name="a"), ScriptedModel([forever], name="b"), services, turns=4)
    run = await services.discussions.start(user=user, request=request)  # type: ignore[union-attr]
    stream = run.events()
    async for event in stream:
        if isinstance(event, TurnStart) and event.turn == 2:
            await asked.wait()
            break
    await stream.aclose()  # the reader leaves: the run stops, and its finish step completes
    found = await services.discussions.get(user_id=user.id, discussion_id=run.discussion_id)  # type: ignore[union-attr]
    assert found is not None
    record, items = found
    assert (record.status, record.stop_reason, record.turns_done, record.credits_used) == ("stopped", "cancelled", 1, 5)
    assert [e.item.item_id for e in items] == ["q1-r"]
    assert await services.credits.balance(user_id=user.id) == 45


async def test_a_discussion_left_running_by_a_dead_process_is_settled(database_url: str, build: Any) -> None:
    services, _ = build(database_url)
    user = (await make_user(services)).user
    past = datetime.now(UTC) - timedelta(minutes=5)
    async with services.database.session() as session:
        record = await store.create_discussion(
            session, user_id=user.id, title=GOAL, goal=GOAL, turns=3, config={}, lease_until=past
        )
    charge = await services.credits.debit(
        user_id=user.id, amount=5, context=ChargeContext("discussion turn", record.id, "q1")
    )
    assert charge is not None and await services.credits.balance(user_id=user.id) == 45
    assert await services.discussions.sweep() == 1  # type: ignore[union-attr]
    assert await services.discussions.sweep() == 0  # type: ignore[union-attr]
    found = await services.discussions.get(user_id=user.id, discussion_id=record.id)  # type: ignore[union-attr]
    assert found is not None and (found[0].status, found[0].stop_reason) == ("interrupted", "interrupted")
    assert await services.credits.balance(user_id=user.id) == 50


async def test_a_running_discussion_is_not_settled_while_its_lease_holds(database_url: str, build: Any) -> None:
    services, _ = build(database_url)
    user = (await make_user(services)).user
    async with services.database.session() as session:
        record = await store.create_discussion(
            session,
            user_id=user.id,
            title=GOAL,
            goal=GOAL,
            turns=3,
            config={},
            lease_until=datetime.now(UTC) + timedelta(minutes=5),
        )
    assert await services.discussions.sweep() == 0  # type: ignore[union-attr]
    assert await services.discussions.delete(user_id=user.id, discussion_id=record.id) == "running"  # type: ignore[union-attr]


class BrokenCatalog(ModelCatalog):
    """A catalog one of whose models cannot be built."""

    def get(self, name: str) -> Model:
        if name == "broken":
            raise RuntimeError("cannot build the model")
        return super().get(name)


async def test_a_turn_paid_for_whose_speaker_is_never_asked_is_refunded(database_url: str, build: Any) -> None:
    services, _ = build(database_url)
    catalog = BrokenCatalog()
    catalog.add(role="test", model=ScriptedModel([reply("Ship.")], name="a"))
    catalog.add(role="test", model=ScriptedModel([], name="broken"))
    services.discussions.catalog = catalog  # type: ignore[union-attr]
    user = (await make_user(services)).user
    request = DiscussionRequest(
        goal=GOAL, turns=3, participants=[ParticipantRequest("a", "plans"), ParticipantRequest("broken", "reviews")]
    )
    events = await hold(services, user, request)
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    end = events[-1]
    assert error.code == "internal_error" and "cannot build" not in error.message  # internals stay in the log
    assert isinstance(end, DiscussionEnd) and (end.status, end.turns_done, end.credits_used) == ("failed", 1, 5)
    assert await services.credits.balance(user_id=user.id) == 45  # turn 2 was paid for, then given back


async def test_at_the_shutdown_deadline_running_discussions_stop_with_what_completed_kept(
    database_url: str, build: Any
) -> None:
    services, _ = build(database_url)
    release = asyncio.Event()

    async def slow(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("Thinking about the migration")
        await release.wait()

    user = (await make_user(services)).user
    request = two(ScriptedModel([reply("Ship on Friday.")], name="a"), ScriptedModel([slow], name="b"), services)
    run = await services.discussions.start(user=user, request=request)  # type: ignore[union-attr]
    events = run.events()
    while not isinstance(event := await events.__anext__(), TurnStart) or event.turn != 2:
        pass
    while (event := await events.__anext__()).type != "text_delta":  # the second speaker has begun
        pass
    assert services.discussions.stop_all() == 1  # type: ignore[union-attr]
    rest = [event async for event in events]
    end = rest[-1]
    assert isinstance(end, DiscussionEnd) and end.status == "stopped"
    assert services.discussions.stop_all() == 0  # type: ignore[union-attr]
    sums = await services.credits.ledger_sums(user_id=user.id)
    assert sums.get("daily", 0) == await services.credits.balance(user_id=user.id)
