"""Choosing how a question is answered, on SQLite and PostgreSQL: a request's `strategy`, else the
user's default, else the server's; boost in the chat service streams `plan` events, runs and bills
tools like any answer, and falls back to the direct path when the planner fails."""

from typing import Any

import pytest
from tests.support import make_user

from almanac.auth.service import AccountService
from almanac.chat.events import ChatOutcome, PlanEvent, ToolCallEvent
from almanac.chat.service import Strategies, collect
from almanac.llm.base import ModelUnavailable
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.main import Services

PLAN = (
    "ANALYSIS:\nThe user wants the first message quoted exactly; it is in q1.\n\n"
    "GUIDANCE:\n1. Call retrieve_full_context with id q1.\n2. Quote it."
)


@pytest.fixture
def make(database_url: str, build: Any) -> Any:
    def factory(
        executor: list[Any], planner: list[Any] | None = None, **settings: Any
    ) -> tuple[Services, ScriptedModel]:
        model = ScriptedModel(executor)
        services, _ = build(database_url, model=model, **settings)
        planner_model = ScriptedModel(planner or [], name="planner")
        services.chat.strategies = Strategies(default=services.chat.strategies.default, planner=planner_model)
        return services, planner_model

    return factory


async def ask(services: Services, user: Any, message: str, **options: Any) -> tuple[ChatOutcome, list[Any]]:
    events = await collect(await services.chat.start(user=user, message=message, conversation_id=None, **options))
    return ChatOutcome.of(events), events


async def test_boost_plans_then_the_executor_follows_with_real_tools(make: Any) -> None:
    services, planner = make([calls(call("retrieve_full_context", {"id": "q1"})), reply("Quoted.")], [reply(PLAN)])
    user = (await make_user(services)).user
    outcome, events = await ask(services, user, "quote my first message", strategy="boost")
    plans = [e for e in events if isinstance(e, PlanEvent)]
    assert len(plans) == 1 and plans[0].loop == 0 and plans[0].model == "planner"
    assert "retrieve_full_context" in plans[0].guidance and "q1" in plans[0].analysis
    first_call = next(i for i, e in enumerate(events) if isinstance(e, ToolCallEvent))
    assert events.index(plans[0]) < first_call
    assert planner.requests[0].tools == ()  # the planner sees the tools only as text
    assert "retrieve_full_context" in planner.requests[0].messages[0].text
    assert outcome.end is not None and outcome.end.response == "Quoted." and outcome.end.credits_used == 7


async def test_a_planner_that_fails_falls_back_to_the_direct_path(make: Any) -> None:
    services, _ = make([reply("Answered directly.")], [ModelUnavailable("planner down")])
    user = (await make_user(services)).user
    outcome, events = await ask(services, user, "hello", strategy="boost")
    assert outcome.error is None and outcome.end is not None and outcome.end.response == "Answered directly."
    assert not any(isinstance(e, PlanEvent) for e in events)


async def test_the_users_default_applies_unless_the_request_says_otherwise(make: Any) -> None:
    services, planner = make([reply("boosted"), reply("direct")], [reply("SUMMARY:\nboosted")])
    user = (await make_user(services)).user
    user = await AccountService(services.database).set_default_strategy(user_id=user.id, strategy="boost")
    assert user.default_strategy == "boost"
    boosted, _ = await ask(services, user, "one")
    assert boosted.end is not None and boosted.end.response == "boosted" and len(planner.requests) == 1
    direct, _ = await ask(services, user, "two", strategy="direct")
    assert direct.end is not None and len(planner.requests) == 1


async def test_each_models_tokens_are_recorded_under_its_role(make: Any) -> None:
    from datetime import UTC, datetime, timedelta

    from almanac.storage import usage as usage_store

    services, _ = make(
        [calls(call("retrieve_full_context", {"id": "q1"})), reply("Quoted."), reply("plain")], [reply(PLAN)]
    )
    user = (await make_user(services)).user
    await ask(services, user, "quote my first message", strategy="boost")
    await ask(services, user, "and now plainly", strategy="direct")
    now = datetime.now(UTC)
    async with services.database.session() as session:
        found = await usage_store.model_tokens(
            session, user_id=user.id, since=now - timedelta(hours=1), until=now + timedelta(hours=1)
        )
    by_role = {(row.role, row.model): row for row in found}
    assert by_role[("chat", "scripted")].calls == 3 and by_role[("chat", "scripted")].input_tokens == 30
    assert by_role[("planner", "planner")].calls == 1
