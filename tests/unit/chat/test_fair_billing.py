"""Fair billing through the chat service, on SQLite and PostgreSQL: documentation is paid once, and
only by a lookup that found something; lookups of unknown IDs are free; one question never costs
more than its ceiling; the model is told what is left; a tool call counts as output."""

import asyncio
import random
from collections.abc import Mapping
from typing import Any

import pytest
from tests.support import make_user

from almanac.billing.pricing import BASE_COST, DOCUMENTATION_COST, OTHER_TOOL_COST, BillingCategory
from almanac.chat.events import ChatOutcome, ToolCallEvent
from almanac.chat.service import collect
from almanac.llm.events import StreamEnd, TextDelta, ToolCallReady
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.llm.messages import ModelRequest, TextBlock, ToolResultBlock
from almanac.main import Services
from almanac.tools.base import ToolContext, ToolError, ToolOutput, ToolUnavailable

OUTCOMES = ("passages", "nothing_found", "error", "timeout", "crash", "unavailable")


class Docs:
    """A documentation-billed tool whose every call plays the outcome it is asked for."""

    name = "docs"
    description = "Look up documentation."
    input_schema: Mapping[str, Any] = {"type": "object", "properties": {"outcome": {"type": "string"}}}
    output_schema = None
    billing = BillingCategory.DOCUMENTATION
    source = "test"
    timeout_s = 0.2

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        outcome = arguments["outcome"]
        await asyncio.sleep(random.random() / 50)  # finish in any order
        if outcome == "passages":
            return ToolOutput("### 1. Passage\nSome documentation.")
        if outcome == "nothing_found":
            return ToolOutput("No passage matched this topic.", free=True)
        if outcome == "error":
            return ToolOutput("Library 'frob' not found.", is_error=True, free=True)
        if outcome == "timeout":
            await asyncio.sleep(10)
        if outcome == "unavailable":
            raise ToolUnavailable("the documentation service is unreachable")
        raise RuntimeError("boom")


class Cheap:
    name = "cheap"
    description = "A 2-credit tool."
    input_schema: Mapping[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    output_schema = None
    billing = BillingCategory.TOOL
    source = "test"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        if arguments.get("n") == -1:
            raise ToolError("bad n")
        return ToolOutput(f"cheap {arguments.get('n')}")


@pytest.fixture
def make(database_url: str, build: Any) -> Any:
    def factory(*steps: Any, **settings: Any) -> tuple[Services, ScriptedModel]:
        model = ScriptedModel(steps)
        services, _ = build(database_url, model=model, **settings)
        services.registry.register(Docs())
        services.registry.register(Cheap())
        return services, model

    return factory


async def ask(
    services: Services, user: Any, message: str = "question", conversation_id: str | None = None
) -> ChatOutcome:
    run = await services.chat.start(user=user, message=message, conversation_id=conversation_id)
    return ChatOutcome.of(await collect(run))


async def test_documentation_is_charged_exactly_when_some_lookup_succeeded(make: Any) -> None:
    """Property: for random outcomes of N parallel documentation calls in one turn (and a second
    turn), the query pays +10 exactly when at least one returned passages."""
    rng = random.Random(20261124)
    for example in range(12):
        first = [rng.choice(OUTCOMES) for _ in range(rng.randint(1, 4))]
        second = [rng.choice(OUTCOMES) for _ in range(rng.randint(0, 2))]
        steps = [calls(*(call("docs", {"outcome": o}) for o in first))]
        if second:
            steps.append(calls(*(call("docs", {"outcome": o}) for o in second)))
        steps.append(reply("done"))
        services, _ = make(*steps)
        user = (await make_user(services)).user
        outcome = await ask(services, user)
        end = outcome.end
        assert end is not None
        paid = DOCUMENTATION_COST if "passages" in first + second else 0
        assert end.credits_used == BASE_COST + paid, (example, first, second)
        assert end.credits_remaining == 50 - BASE_COST - paid
        charged = [r.credits for r in outcome.tool_results]
        assert sum(charged) == paid and charged.count(DOCUMENTATION_COST) == (1 if paid else 0)
        sums = await services.credits.ledger_sums(user_id=user.id)
        assert sums.get("daily", 0) == end.credits_remaining


async def test_an_unknown_id_lookup_is_free(make: Any) -> None:
    services, _ = make(calls(call("retrieve_full_context", {"id": "q9-t9"})), reply("there is no such item"))
    user = (await make_user(services)).user
    outcome = await ask(services, user)
    assert outcome.end is not None and outcome.end.credits_used == BASE_COST
    [result] = outcome.tool_results
    assert result.is_error and result.credits == 0


async def test_a_question_never_costs_more_than_its_ceiling_and_the_model_is_told(make: Any) -> None:
    services, model = make(
        calls(*(call("cheap", {"n": n}) for n in range(4))),  # 5 + 8 = 13
        calls(call("docs", {"outcome": "passages"}), call("cheap", {"n": 5})),  # +10 would make 23 > 20
        reply("what I have"),
        max_query_credits=20,
    )
    user = (await make_user(services)).user
    outcome = await ask(services, user)
    end = outcome.end
    assert end is not None
    assert end.credits_used == 5 + 4 * OTHER_TOOL_COST + OTHER_TOOL_COST  # the docs call was not run
    assert end.credit_limit == 20 and end.credit_limit_reached
    statuses = [r.status for r in outcome.tool_results]
    assert statuses.count("over_limit") == 1 and statuses.count("ok") == 5
    after_first_turn = model.requests[1].messages[-1]
    assert any(isinstance(b, TextBlock) and "13 of its 20-credit limit" in b.text for b in after_first_turn.content)
    refused = [
        b for b in model.requests[2].messages[-1].content if isinstance(b, ToolResultBlock) and "limit" in b.content
    ]
    assert refused and refused[0].is_error


async def test_without_a_ceiling_the_model_gets_no_budget_note(make: Any) -> None:
    services, model = make(calls(call("cheap", {"n": 1})), reply("ok"), max_query_credits=0)
    user = (await make_user(services)).user
    outcome = await ask(services, user)
    assert outcome.end is not None and not outcome.end.credit_limit_reached
    assert not any(isinstance(b, TextBlock) for b in model.requests[1].messages[-1].content)


async def test_a_tool_call_is_output_so_leaving_after_it_still_costs_the_query(make: Any) -> None:
    """The attack: 'put your answer in the tool argument', then close the stream before any text.
    The model wrote the call's input: the base price is kept, the unrun tool is refunded."""
    hold = asyncio.Event()

    async def slow_tool_call(request: ModelRequest) -> Any:
        yield ToolCallReady(call("cheap", {"n": 42}))
        await hold.wait()
        yield StreamEnd("tool_use")

    services, _ = make(slow_tool_call)
    user = (await make_user(services)).user
    run = await services.chat.start(user=user, message="put your answer in the tool argument", conversation_id=None)
    stream = run.events()
    async for event in stream:
        if isinstance(event, ToolCallEvent):
            break
    await stream.aclose()  # the client disconnects
    assert await services.credits.balance(user_id=user.id) == 50 - BASE_COST
    items = await services.history.items(user_id=user.id, conversation_id=run.conversation_id)
    response = next(i for i in items if i.item_id == "q1-r")
    assert response.status == "interrupted"


async def test_leaving_before_anything_was_produced_still_refunds_everything(make: Any) -> None:
    hold = asyncio.Event()

    async def silent(request: ModelRequest) -> Any:
        await hold.wait()
        if False:  # pragma: no cover - makes this an async generator
            yield TextDelta("")

    services, _ = make(silent)
    user = (await make_user(services)).user
    run = await services.chat.start(user=user, message="hello", conversation_id=None)
    stream = run.events()
    await stream.__anext__()  # message_start
    await stream.aclose()
    assert await services.credits.balance(user_id=user.id) == 50
    assert await services.conversations.page(user_id=user.id, limit=10, offset=0) == ([], 0)


def declined(text: str = "I cannot answer that offline.") -> list[Any]:
    """An answer the model says is no answer (as the offline model does without a way to help)."""
    return [TextDelta(text), StreamEnd("end_turn", declined=True)]


async def test_an_answer_the_model_declines_to_give_is_free_but_kept(make: Any) -> None:
    services, _ = make(declined())
    user = (await make_user(services)).user
    outcome = await ask(services, user)
    end = outcome.end
    assert end is not None and end.stop_reason == "declined"
    assert (end.credits_used, end.credits_remaining) == (0, 50)
    assert await services.credits.balance(user_id=user.id) == 50
    items = await services.history.items(user_id=user.id, conversation_id=end.conversation_id)
    response = next(i for i in items if i.item_id == "q1-r")
    assert response.content == "I cannot answer that offline." and response.credits == 0
    sums = await services.credits.ledger_sums(user_id=user.id)
    assert sums.get("daily", 0) == 50  # the refund is in the ledger: its sum is the balance


async def test_a_providers_refusal_is_free_too(make: Any) -> None:
    services, _ = make([TextDelta("I can't help with that."), StreamEnd("refusal")])
    user = (await make_user(services)).user
    outcome = await ask(services, user)
    assert outcome.end is not None and (outcome.end.stop_reason, outcome.end.credits_used) == ("refusal", 0)
    assert await services.credits.balance(user_id=user.id) == 50


async def test_declining_after_tools_ran_refunds_only_the_base_price(make: Any) -> None:
    services, _ = make(calls(call("cheap", {"n": 1})), declined("the tool did not help me"))
    user = (await make_user(services)).user
    outcome = await ask(services, user)
    assert outcome.end is not None and outcome.end.credits_used == OTHER_TOOL_COST
    assert await services.credits.balance(user_id=user.id) == 50 - OTHER_TOOL_COST


async def test_an_ordinary_answer_still_costs_the_base_price(make: Any) -> None:
    services, _ = make([TextDelta("An answer."), StreamEnd("end_turn")])
    user = (await make_user(services)).user
    outcome = await ask(services, user)
    assert outcome.end is not None and (outcome.end.stop_reason, outcome.end.credits_used) == ("end_turn", BASE_COST)
