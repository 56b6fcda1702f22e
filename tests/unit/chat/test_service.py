"""ChatService on SQLite and PostgreSQL: what is stored, what is charged, how runs end."""

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from tests.support import make_user

from almanac.billing.pricing import BillingCategory
from almanac.chat.errors import ConversationBusy, ConversationNotFound, InsufficientCredits, MessageTooLarge
from almanac.chat.events import ChatEvent, ChatOutcome, ErrorEvent, MessageEnd, ToolResultEvent
from almanac.chat.service import collect
from almanac.llm.base import ModelUnavailable
from almanac.llm.events import ModelEvent, TextDelta
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.llm.messages import ModelRequest
from almanac.main import Services
from almanac.memory.summarise import SummaryRequest
from almanac.storage import conversations as store
from almanac.tools.base import ToolContext, ToolError, ToolOutput

LONG = "Retry with exponential backoff and jitter. " * 40


class Lookup:
    name = "lookup"
    description = "Look something up."
    input_schema: Mapping[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}
    output_schema = None
    billing = BillingCategory.TOOL
    source = "test"

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        q = arguments.get("q", "")
        if q == "hang":
            self.started.set()
            await asyncio.Event().wait()
        if q == "fail":
            raise ToolError("lookup failed")
        return ToolOutput(LONG if q == "long" else f"short result for {q}")


class BrokenSummariser:
    name = "broken"

    async def summarise(self, request: SummaryRequest) -> str:
        raise RuntimeError("summariser down")


@pytest.fixture
def make(database_url: str, build: Any) -> Any:
    def factory(*steps: Any, **settings: Any) -> tuple[Services, ScriptedModel, Lookup]:
        model = ScriptedModel(steps)
        services, _ = build(database_url, model=model, **settings)
        tool = Lookup()
        services.registry.register(tool)
        return services, model, tool

    return factory


async def ledger_matches(services: Services, user_id: str) -> int:
    snapshot = await services.credits.snapshot(user_id=user_id)
    sums = await services.credits.ledger_sums(user_id=user_id)
    assert sums.get("daily", 0) == snapshot.account.daily_balance
    assert sums.get("pack", 0) == snapshot.account.pack_balance
    return snapshot.account.balance


async def chat(services: Services, user: Any, message: str, conversation_id: str | None = None) -> ChatOutcome:
    run = await services.chat.start(user=user, message=message, conversation_id=conversation_id)
    return ChatOutcome.of(await collect(run))


async def test_a_plain_answer_is_stored_in_both_tracks_and_costs_5(make: Any) -> None:
    services, _, _ = make(reply("Use asyncio.TaskGroup."))
    user = (await make_user(services)).user
    run = await services.chat.start(user=user, message="How do I run tasks?", conversation_id=None)
    events = await collect(run)
    assert [e.type for e in events] == ["message_start", "text_delta", "usage", "message_end"]
    end = events[-1]
    assert isinstance(end, MessageEnd)
    assert (end.query_id, end.message_id, end.summary_id) == ("q1", "q1-r", "q1-r-sum")
    assert (end.response, end.summary, end.credits_used, end.credits_remaining) == (
        "Use asyncio.TaskGroup.",
        "Use asyncio.TaskGroup.",
        5,
        45,
    )
    items = await services.history.items(user_id=user.id, conversation_id=end.conversation_id)
    assert [(i.item_id, i.kind, i.ref) for i in items] == [
        ("q1", "query", None),
        ("q1-r", "response", None),
        ("q1-r-sum", "response_summary", "q1-r"),
    ]
    assert await ledger_matches(services, user.id) == 45


async def test_tool_results_are_stored_summarised_and_billed(make: Any) -> None:
    services, _, _ = make(calls(call("lookup", {"q": "long"}), call("lookup", {"q": "x"})), reply("Done: " + LONG))
    user = (await make_user(services)).user
    outcome = await chat(services, user, "look it up")
    end = outcome.end
    assert end is not None and end.credits_used == 5 + 2 + 2 and end.credits_remaining == 41
    assert [r.item_id for r in outcome.tool_results] == ["q1-t1", "q1-t2"]
    long_result = outcome.tool_results[0]
    assert long_result.summary is None  # summarised in the background, not holding up the loop
    # Summaries ready at the answer's end come with it; later ones follow as `summary` events.
    summaries = {**end.summaries, **outcome.late_summaries}
    assert summaries["q1-t1-sum"].startswith("lookup returned:") and len(summaries["q1-t1-sum"]) < 600
    assert summaries["q1-t2-sum"] == "short result for x"
    answer_summary = end.summary or outcome.late_summaries["q1-r-sum"]
    assert len(answer_summary) < len(end.response)
    items = {i.item_id: i for i in await services.history.items(user_id=user.id, conversation_id=end.conversation_id)}
    assert items["q1-t1"].content == LONG and items["q1-t1"].credits == 2
    assert items["q1-t1-sum"].status == "done" and items["q1-t1-sum"].content == summaries["q1-t1-sum"]
    assert items["q1-r"].content == "Done: " + LONG and items["q1-r-sum"].status == "done"
    await ledger_matches(services, user.id)


async def test_later_queries_see_summaries_with_ids(make: Any) -> None:
    services, model, _ = make(reply("First: " + LONG), reply("Second."))
    user = (await make_user(services)).user
    first = await chat(services, user, "first question")
    assert first.end is not None
    await chat(services, user, "second question", first.end.conversation_id)
    messages = model.requests[1].messages
    assert messages[0].text == "[ID:q1] first question"
    assert messages[1].text.startswith("[ID:q1-r-sum, ref:q1-r] ")
    assert LONG not in messages[1].text
    assert messages[2].text == "[ID:q2] second question"


async def test_a_failed_summary_keeps_the_item_verbatim_but_bounded(make: Any, database_url: str, build: Any) -> None:
    model = ScriptedModel([reply("x" * 5000)])
    services, _ = build(database_url, model=model, summary_fallback_chars=300)
    services.summaries.summariser = BrokenSummariser()
    user = (await make_user(services)).user
    outcome = await chat(services, user, "question")
    assert outcome.end is not None
    item = await services.conversations.item(
        user_id=user.id, conversation_id=outcome.end.conversation_id, item_id="q1-r-sum"
    )
    assert item is not None and item.status == "failed"
    assert item.content.startswith("x" * 300) and "5,000 characters in full" in item.content


async def test_a_model_that_fails_outright_leaves_no_trace_and_is_refunded(make: Any) -> None:
    services, _, _ = make(ModelUnavailable("model down"), reply("works now"))
    user = (await make_user(services)).user
    outcome = await chat(services, user, "question")
    assert outcome.end is None and isinstance(outcome.error, ErrorEvent)
    assert (outcome.error.code, outcome.error.refunded) == ("model_unavailable", True)
    assert await ledger_matches(services, user.id) == 50
    _conversations, count = await services.conversations.page(user_id=user.id, limit=10, offset=0)
    assert count == 0
    retry = await chat(services, user, "question")
    assert retry.end is not None and retry.end.query_id == "q1"


async def test_a_failure_in_an_existing_conversation_gives_the_query_number_back(make: Any) -> None:
    services, _, _ = make(reply("one"), ModelUnavailable("down"), reply("two"))
    user = (await make_user(services)).user
    first = await chat(services, user, "one")
    assert first.end is not None
    failed = await chat(services, user, "two", first.end.conversation_id)
    assert failed.error is not None and failed.error.refunded
    again = await chat(services, user, "two", first.end.conversation_id)
    assert again.end is not None and again.end.query_id == "q2"
    assert await ledger_matches(services, user.id) == 40


async def test_a_failure_after_tools_ran_keeps_and_bills_what_completed(make: Any) -> None:
    services, _, _ = make(calls(call("lookup", {"q": "a"})), ModelUnavailable("down"))
    user = (await make_user(services)).user
    outcome = await chat(services, user, "question")
    assert outcome.error is not None and not outcome.error.refunded
    assert outcome.end is not None and outcome.end.stop_reason == "error" and outcome.end.credits_used == 7
    assert "The answer stopped early" in outcome.end.response
    assert await ledger_matches(services, user.id) == 43


async def test_no_credits_means_402_before_any_work(make: Any) -> None:
    services, model, _ = make()
    user = (await make_user(services)).user
    assert (
        await services.credits.debit(
            user_id=user.id,
            amount=48,
            context=__import__("almanac.billing.ledger", fromlist=["ChargeContext"]).ChargeContext("spend"),
        )
        is not None
    )
    with pytest.raises(InsufficientCredits) as refused:
        await services.chat.start(user=user, message="question", conversation_id=None)
    assert (refused.value.balance, refused.value.needed) == (2, 5)
    assert model.requests == []
    assert (await services.conversations.page(user_id=user.id, limit=5, offset=0))[1] == 0
    assert await ledger_matches(services, user.id) == 2


async def test_a_tool_the_balance_cannot_cover_is_not_run(make: Any) -> None:
    from almanac.billing.ledger import ChargeContext

    services, model, _ = make(calls(call("lookup", {"q": "a"})), reply("Answer without the lookup."))
    user = (await make_user(services)).user
    await services.credits.debit(user_id=user.id, amount=44, context=ChargeContext("spend"))  # 6 left
    outcome = await chat(services, user, "question")
    result = outcome.tool_results[0]
    assert (result.status, result.credits, result.is_error) == ("not_run", 0, True)
    told = model.requests[1].messages[-1].content[0]
    assert "costs 2 credits" in told.content and "balance is 1" in told.content  # type: ignore[union-attr]
    assert outcome.end is not None and outcome.end.credits_used == 5 and outcome.end.credits_remaining == 1
    assert await ledger_matches(services, user.id) == 1


async def test_failed_and_timed_out_tools_are_refunded(make: Any) -> None:
    services, _, _ = make(
        calls(call("lookup", {"q": "fail"}), call("lookup", {"q": "hang"})), reply("ok"), tool_timeout_s=0.05
    )
    user = (await make_user(services)).user
    outcome = await chat(services, user, "question")
    assert [(r.status, r.credits) for r in outcome.tool_results] == [("error", 2), ("timeout", 0)]
    assert outcome.end is not None and outcome.end.credits_used == 7
    assert await ledger_matches(services, user.id) == 43


async def test_limits_and_ownership(make: Any) -> None:
    services, _, _ = make(reply("mine"), max_message_chars=100)
    owner, stranger = (await make_user(services)).user, (await make_user(services)).user
    with pytest.raises(MessageTooLarge):
        await services.chat.start(user=owner, message="x" * 101, conversation_id=None)
    outcome = await chat(services, owner, "hello")
    assert outcome.end is not None
    with pytest.raises(ConversationNotFound):
        await services.chat.start(user=stranger, message="hi", conversation_id=outcome.end.conversation_id)
    with pytest.raises(ConversationNotFound):
        await services.chat.start(user=owner, message="hi", conversation_id="no-such-id")
    assert await ledger_matches(services, stranger.id) == 50


async def test_a_second_query_on_a_busy_conversation_is_refused(make: Any) -> None:
    gate = asyncio.Event()

    async def slow(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("thinking… ")
        await gate.wait()
        for event in [TextDelta("done")]:
            yield event

    services, _, _ = make(reply("first"), slow, reply("third"))
    user = (await make_user(services)).user
    first = await chat(services, user, "one")
    assert first.end is not None
    conversation = first.end.conversation_id
    running = await services.chat.start(user=user, message="two", conversation_id=conversation)
    consumer = asyncio.create_task(collect(running))
    with pytest.raises(ConversationBusy):
        await services.chat.start(user=user, message="three", conversation_id=conversation)
    gate.set()
    assert ChatOutcome.of(await consumer).end is not None
    third = await chat(services, user, "three", conversation)
    assert third.end is not None and third.end.query_id == "q3"
    ids = [i.item_id for i in await services.history.items(user_id=user.id, conversation_id=conversation)]
    assert ids == ["q1", "q1-r", "q1-r-sum", "q2", "q2-r", "q2-r-sum", "q3", "q3-r", "q3-r-sum"]


async def test_leaving_mid_stream_stores_and_bills_what_completed(make: Any) -> None:
    services, _, tool = make(
        calls(call("lookup", {"q": "a"}), call("lookup", {"q": "hang"}), text="Looking. "), reply("next answer")
    )
    user = (await make_user(services)).user
    run = await services.chat.start(user=user, message="question", conversation_id=None)
    seen: list[ChatEvent] = []
    stream = run.events()
    async for event in stream:
        seen.append(event)
        if isinstance(event, ToolResultEvent):  # the quick lookup finished; the other hangs
            break
    await asyncio.wait_for(tool.started.wait(), 5)
    await stream.aclose()  # what a client disconnect does to the SSE generator
    items = {i.item_id: i for i in await services.history.items(user_id=user.id, conversation_id=run.conversation_id)}
    assert items["q1-t1"].status == "ok" and items["q1-t1"].credits == 2
    assert items["q1-t2"].status == "cancelled" and items["q1-t2"].credits == 0
    assert items["q1-r"].status == "interrupted" and items["q1-r"].content.startswith("Looking. ")
    assert await ledger_matches(services, user.id) == 43
    again = await chat(services, user, "next", run.conversation_id)  # the conversation is free again
    assert again.end is not None and again.end.query_id == "q2"


async def test_leaving_before_any_output_undoes_the_query(make: Any) -> None:
    gate = asyncio.Event()

    async def silent(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        await gate.wait()
        yield TextDelta("never")

    services, _, _ = make(silent)
    user = (await make_user(services)).user
    run = await services.chat.start(user=user, message="question", conversation_id=None)
    stream = run.events()
    assert (await anext(stream)).type == "message_start"
    await stream.aclose()
    assert await ledger_matches(services, user.id) == 50
    async with services.database.session() as session:
        assert await store.get_conversation(session, user_id=user.id, conversation_id=run.conversation_id) is None


async def test_text_waiting_for_a_slow_reader_is_merged(make: Any) -> None:
    from almanac.chat.events import TextDeltaEvent

    async def chatty(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        for word in ["one ", "two ", "three ", "four"]:
            yield TextDelta(word)

    services, _, _ = make(chatty)
    user = (await make_user(services)).user
    run = await services.chat.start(user=user, message="q", conversation_id=None)
    await asyncio.sleep(0.2)  # the reader is late: every delta is already waiting
    events = await collect(run)
    deltas = [e.text for e in events if isinstance(e, TextDeltaEvent)]
    assert deltas == ["one two three four"]
    assert events[-1].type == "message_end" and events[-1].response == "one two three four"  # type: ignore[union-attr]
