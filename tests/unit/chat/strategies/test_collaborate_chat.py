"""The collaborate strategy through the chat service, on SQLite and PostgreSQL: a stuck chat model
escalates to its helper, retries with the plan and the tool results it already paid for, and the
answer, its items and its bill are those of one ordinary query."""

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest
from tests.support import make_user

from almanac.auth.service import AccountService
from almanac.billing.pricing import BillingCategory
from almanac.chat.events import ChatOutcome, EscalationEvent, MessageEnd, TextDeltaEvent, ToolResultEvent
from almanac.chat.service import collect
from almanac.chat.strategies.pairs import Collaboration
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.llm.messages import ToolResultBlock
from almanac.main import Services
from almanac.storage import conversations as store
from almanac.tools.base import ToolContext, ToolOutput

QUESTION = "How do I read a CSV file and average a column in Python?"
STUCK = "I'm not sure how to read a CSV file and average a column in Python."
ANSWER = "Read it with `csv.DictReader` and average the column with `statistics.mean`:\n\n```python\n...\n```"
PLAN = "1. Use csv.DictReader.\n2. Average with statistics.mean."


class Lookup:
    name = "lookup"
    description = "Look something up."
    input_schema: Mapping[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}
    output_schema = None
    billing = BillingCategory.TOOL
    source = "test"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        return ToolOutput(f"csv module docs for {arguments.get('q')}")


@pytest.fixture
def make(database_url: str, build: Any) -> Any:
    def factory(primary: list[Any], helper: list[Any] | None, **settings: Any) -> tuple[Services, ScriptedModel]:
        model = ScriptedModel(primary, name="small")
        services, _ = build(database_url, model=model, **settings)
        services.registry.register(Lookup())
        helper_model = ScriptedModel(helper or [], name="big") if helper is not None else None
        services.chat.strategies = replace(services.chat.strategies, helper=helper_model)
        return services, helper_model or model

    return factory


async def test_a_stuck_chat_model_is_helped_and_its_answer_is_stored_and_billed_once(make: Any) -> None:
    services, helper = make([calls(call("lookup", {"q": "csv"})), reply(STUCK), reply(ANSWER)], [reply(PLAN)])
    user = (await make_user(services)).user
    run = await services.chat.start(user=user, message=QUESTION, conversation_id=None, strategy="collaborate")
    events = await collect(run)
    outcome = ChatOutcome.of(events)
    [escalation] = [e for e in events if isinstance(e, EscalationEvent)]
    assert (escalation.reason, escalation.from_model, escalation.to_model, escalation.attempt) == (
        "explicit_phrase",
        "small",
        "big",
        1,
    )
    result = next(i for i, e in enumerate(events) if isinstance(e, ToolResultEvent))
    assert result < events.index(escalation) < next(i for i, e in enumerate(events) if isinstance(e, TextDeltaEvent))
    end = outcome.end
    assert isinstance(end, MessageEnd) and end.response == ANSWER and STUCK not in outcome.text
    assert (end.credits_used, end.tools_used, end.turns) == (7, ["lookup"], 3)
    async with services.database.session() as session:
        items = await store.list_items(session, user_id=user.id, conversation_id=end.conversation_id)
    assert [i.item_id for i in items] == ["q1", "q1-t1", "q1-t1-sum", "q1-r", "q1-r-sum"]
    assert next(i for i in items if i.item_id == "q1-r").content == ANSWER
    assert "lookup" in helper.requests[0].messages[0].text and QUESTION in helper.requests[0].messages[0].text
    primary = services.chat.model
    retry = primary.requests[-1]  # type: ignore[attr-defined]
    assert PLAN in retry.system
    results = [b for m in retry.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert len(results) == 1 and "csv module docs" in results[0].content  # reused, not called again
    assert await services.credits.balance(user_id=user.id) == 43


async def test_a_good_answer_is_not_escalated(make: Any) -> None:
    services, helper = make([reply(ANSWER)], [])
    user = (await make_user(services)).user
    events = await collect(
        await services.chat.start(user=user, message=QUESTION, conversation_id=None, strategy="collaborate")
    )
    assert not any(isinstance(e, EscalationEvent) for e in events) and helper.requests == []
    assert ChatOutcome.of(events).end.response == ANSWER  # type: ignore[union-attr]


async def test_without_a_helper_the_chat_model_helps_itself(make: Any) -> None:
    services, _ = make([reply(STUCK), reply(PLAN), reply(ANSWER)], None)
    user = (await make_user(services)).user
    events = await collect(
        await services.chat.start(user=user, message=QUESTION, conversation_id=None, strategy="collaborate")
    )
    [escalation] = [e for e in events if isinstance(e, EscalationEvent)]
    assert escalation.from_model == escalation.to_model == "small"
    assert ChatOutcome.of(events).end.response == ANSWER  # type: ignore[union-attr]


async def test_collaboration_switched_off_in_the_config_answers_like_direct(make: Any) -> None:
    services, helper = make([reply(STUCK)], [])
    services.chat.strategies = replace(services.chat.strategies, collaboration=Collaboration(enabled=False))
    user = (await make_user(services)).user
    events = await collect(
        await services.chat.start(user=user, message=QUESTION, conversation_id=None, strategy="collaborate")
    )
    assert not any(isinstance(e, EscalationEvent) for e in events) and helper.requests == []


async def test_the_users_default_strategy_can_be_collaborate(make: Any) -> None:
    services, _ = make([reply(STUCK), reply(ANSWER)], [reply(PLAN)])
    user = (await make_user(services)).user
    user = await AccountService(services.database).set_default_strategy(user_id=user.id, strategy="collaborate")
    events = await collect(await services.chat.start(user=user, message=QUESTION, conversation_id=None))
    assert any(isinstance(e, EscalationEvent) for e in events)


async def test_collaborate_works_on_the_embedded_offline_model(database_url: str, build: Any) -> None:
    services, _ = build(database_url)
    user = (await make_user(services)).user
    events = await collect(
        await services.chat.start(user=user, message="hello there", conversation_id=None, strategy="collaborate")
    )
    outcome = ChatOutcome.of(events)
    assert outcome.error is None and outcome.end is not None and "offline model" in outcome.end.response
