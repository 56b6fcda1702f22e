"""Discussions over the API, on SQLite and PostgreSQL: two models take turns toward a goal, streamed
as SSE with the speaker on every event, stored (list, read, delete; others' are 404), billed per turn
and per tool call (a turn whose speaker declines to answer is free), refused with 402 before
anything starts, stopped with a clear event when the credits run out, and refused with 422 naming
the field for bad input."""

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.support import api_client, make_user

from almanac.billing.ledger import ChargeContext, CreditService
from almanac.billing.pricing import BillingCategory
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.main import Services
from almanac.storage import usage as usage_store
from almanac.tools.base import ToolContext, ToolOutput

STREAM = {"Accept": "text/event-stream"}
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
GOAL = "Agree on how to cancel asyncio tasks safely"
TWO_OFFLINE = [{"model": "offline", "role": "asks questions", "name": "Ada"}, {"model": "offline", "role": "answers"}]
# Offline speakers whose role asks for a long tour: the offline model gives one (an answer, so charged).
TWO_TOURING = [
    {"model": "offline", "role": "gives a detailed tour"},
    {"model": "offline", "role": "a detailed tour, too"},
]


class Clock:
    name = "clock"
    description = "What time it is."
    input_schema: Mapping[str, Any] = {"type": "object", "properties": {}}
    output_schema = None
    billing = BillingCategory.TOOL
    source = "test"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        return ToolOutput("It is 12:00 UTC.")


def sse_events(body: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for frame in body.replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in frame.split("\n") if line and not line.startswith(":")]
        name = next((line[7:] for line in lines if line.startswith("event: ")), None)
        if name:
            events.append((name, json.loads("\n".join(line[6:] for line in lines if line.startswith("data: ")))))
    return events


async def balance(services: Services, user_id: str) -> int:
    return await services.credits.balance(user_id=user_id)


async def test_two_offline_models_hold_a_discussion_streamed_and_stored(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        response = await http.post(
            "/api/discussions", json={"goal": GOAL, "turns": 3, "participants": TWO_OFFLINE}, headers=STREAM
        )
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response.text)
        names = [name for name, _ in events]
        assert names[0] == "discussion_start" and names[-1] == "discussion_end"
        assert all(data["type"] == name for name, data in events)
        starts = [data for name, data in events if name == "message_start"]
        ends = [data for name, data in events if name == "message_end"]
        assert [(s["turn"], s["speaker"], s["name"]) for s in starts] == [
            (1, 0, "Ada"),
            (2, 1, "Participant 2"),
            (3, 0, "Ada"),
        ]
        for turn in (1, 2, 3):
            said = "".join(d["text"] for n, d in events if n == "text_delta" and d["turn"] == turn)
            assert said == ends[turn - 1]["response"] and "offline model" in said
        assert {d["speaker"] for n, d in events if n == "text_delta" and d["turn"] == 2} == {1}
        usage = [d for n, d in events if n == "usage"]
        assert usage and all(d["model"] == "offline" and d["role"] == "participant" and "step" in d for d in usage)
        end = events[-1][1]
        assert (end["status"], end["stop_reason"], end["turns_done"], end["credits_used"]) == (
            "done",
            "completed",
            3,
            0,
        )
        # Each offline speaker says it cannot answer: a turn that carries nothing is free.
        assert [(e["credits_used"], e["stop_reason"]) for e in ends] == [(0, "declined")] * 3
        assert end["credits_remaining"] == 50

        listed = (await http.get("/api/discussions")).json()
        assert listed["count"] == 1 and listed["data"][0]["id"] == end["discussion_id"]
        detail = (await http.get(f"/api/discussions/{end['discussion_id']}")).json()
        assert (detail["status"], detail["turns_done"], detail["credits_used"], detail["goal"]) == ("done", 3, 0, GOAL)
        assert [p["name"] for p in detail["participants"]] == ["Ada", "Participant 2"]
        messages = [(i["id"], i["turn"], i["speaker"], i["model"]) for i in detail["items"]]
        assert messages == [("q1-r", 1, 0, "offline"), ("q2-r", 2, 1, "offline"), ("q3-r", 3, 0, "offline")]
        assert detail["items"][1]["content"] == ends[1]["response"]
        assert all(item["credits"] == 0 for item in detail["items"])
    assert await balance(services, user.user.id) == 50


async def test_the_json_form_returns_the_stored_discussion(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        body = (
            await http.post("/api/discussions", json={"goal": GOAL, "turns": 2, "participants": TWO_OFFLINE})
        ).json()
    assert body["status"] == "done" and body["error"] is None and len(body["items"]) == 2


async def test_scripted_models_use_tools_and_collaborate_with_every_step_streamed(
    database_url: str, build: Any
) -> None:
    services, settings = build(database_url)
    services.registry.register(Clock())
    asker = ScriptedModel(
        [calls(call("clock")), reply("Thanks. How do we cancel asyncio tasks safely at noon?")], name="asker"
    )
    answerer = ScriptedModel(
        [reply("I'm not sure how to cancel asyncio tasks safely."), reply("Cancel with task.cancel(), then await it.")],
        name="answerer",
    )
    helper = ScriptedModel([reply("1. Call task.cancel().\n2. Await the task and catch CancelledError.")], name="big")
    catalog = services.discussions.catalog
    for model in (asker, answerer, helper):
        catalog.add(role="test", model=model)
    user = await make_user(services)
    request = {
        "goal": GOAL,
        "turns": 2,
        "participants": [{"model": "asker", "role": "asks"}, {"model": "answerer", "role": "answers"}],
        "tools": ["clock"],
        "collaboration": {"enabled": True, "pairs": [{"primary": "answerer", "secondary": "big"}]},
    }
    async with api_client(services, settings, user.api_key) as http:
        events = sse_events((await http.post("/api/discussions", json=request, headers=STREAM)).text)
    [tool_call] = [d for n, d in events if n == "tool_call"]
    [tool_result] = [d for n, d in events if n == "tool_result"]
    assert (tool_call["name"], tool_call["turn"], tool_call["speaker"], tool_call["step"]) == ("clock", 1, 0, 1)
    assert (tool_result["item_id"], tool_result["credits"], tool_result["turn"]) == ("q1-t1", 2, 1)
    [escalation] = [d for n, d in events if n == "escalation"]
    assert (escalation["turn"], escalation["speaker"], escalation["from_model"], escalation["to_model"]) == (
        2,
        1,
        "answerer",
        "big",
    )
    assert escalation["reason"] == "explicit_phrase"
    ends = [d for n, d in events if n == "message_end"]
    assert ends[1]["response"] == "Cancel with task.cancel(), then await it." and ends[1]["escalations"] == 1
    assert [e["credits_used"] for e in ends] == [7, 5]  # a turn, plus the clock for the first
    assert [d["role"] for n, d in events if n == "usage" and d["turn"] == 2] == ["participant", "participant", "helper"]
    assert "How do we cancel asyncio tasks safely at noon?" in answerer.requests[0].system  # the other's message
    assert 'source="q1-r Participant 1"' in answerer.requests[0].system
    async with services.database.session() as session:
        tokens = await usage_store.model_tokens(session, user_id=user.user.id, since=EPOCH, until=datetime.now(UTC))
    assert {(t.role, t.model) for t in tokens} == {
        ("participant", "asker"),
        ("participant", "answerer"),
        ("helper", "big"),
    }


async def test_no_credits_for_the_first_turn_is_a_402_and_nothing_is_stored(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    credits = CreditService(services.database)
    assert await credits.debit(user_id=user.user.id, amount=47, context=ChargeContext("test")) is not None
    async with api_client(services, settings, user.api_key) as http:
        response = await http.post("/api/discussions", json={"goal": GOAL, "turns": 2, "participants": TWO_OFFLINE})
        assert response.status_code == 402
        body = response.json()
        assert body["error"]["code"] == "insufficient_credits" and (body["balance"], body["needed"]) == (3, 5)
        assert (await http.get("/api/discussions")).json()["count"] == 0
    assert await balance(services, user.user.id) == 3


async def test_running_out_of_credits_stops_the_discussion_with_a_clear_event(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    credits = CreditService(services.database)
    assert await credits.debit(user_id=user.user.id, amount=38, context=ChargeContext("test")) is not None  # 12 left
    async with api_client(services, settings, user.api_key) as http:
        response = await http.post(
            "/api/discussions", json={"goal": GOAL, "turns": 4, "participants": TWO_TOURING}, headers=STREAM
        )
        events = sse_events(response.text)
        [error] = [d for n, d in events if n == "error"]
        assert error["code"] == "insufficient_credits" and "Turn 3 needs 5 credits" in error["message"]
        end = events[-1][1]
        assert (end["status"], end["stop_reason"], end["turns_done"], end["credits_remaining"]) == (
            "stopped",
            "credits_exhausted",
            2,
            2,
        )
        assert [d["turn"] for n, d in events if n == "message_end"] == [1, 2]
        detail = (await http.get(f"/api/discussions/{end['discussion_id']}")).json()
        assert (detail["status"], detail["stop_reason"], detail["credits_used"]) == ("stopped", "credits_exhausted", 10)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            {"participants": [{"model": "offline", "role": "x"}, {"model": "gpt-17", "role": "y"}]},
            "participants.1.model",
        ),
        ({"participants": [{"model": "offline", "role": "alone"}]}, "participants"),
        ({"participants": [{"model": "offline", "role": "x"}] * 5}, "participants"),  # DISCUSSION_MAX_PARTICIPANTS=4
        (
            {"participants": [{"model": "offline", "role": "x"}, {"model": "offline", "role": "  "}]},
            "participants.1.role",
        ),
        ({"turns": 0}, "turns"),
        ({"turns": 21}, "turns"),  # DISCUSSION_MAX_TURNS=20
        ({"turns": "2"}, "turns"),
        ({"turns": True}, "turns"),
        ({"turns": 2.5}, "turns"),
        ({"goal": "   "}, "goal"),
        ({"goal": "x" * 4001}, "goal"),
        ({"tools": ["retrieve_full_context", "no_such_tool"]}, "tools.1"),
        (
            {"collaboration": {"pairs": [{"primary": "offline", "secondary": "gpt-17"}]}},
            "collaboration.pairs.0.secondary",
        ),
        ({"tools": "all"}, "tools"),
    ],
)
async def test_bad_input_is_refused_naming_the_field(
    change: dict[str, Any], field: str, database_url: str, build: Any
) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    request = {"goal": GOAL, "turns": 2, "participants": TWO_OFFLINE, **change}
    async with api_client(services, settings, user.api_key) as http:
        response = await http.post("/api/discussions", json=request)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["field"] == field
        assert (await http.get("/api/discussions")).json()["count"] == 0
    assert await balance(services, user.user.id) == 50


async def test_a_whole_number_of_turns_may_be_written_as_a_json_float(sqlite_url: str, build: Any) -> None:
    """JSON Schema's `integer` (what the OpenAPI schema says `turns` is) admits 2.0."""
    services, settings = build(sqlite_url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        response = await http.post("/api/discussions", json={"goal": GOAL, "turns": 2.0, "participants": TWO_OFFLINE})
        assert response.status_code == 200, response.text
        assert response.json()["turns"] == 2


async def test_others_discussions_are_not_found(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    owner, other = await make_user(services), await make_user(services)
    async with api_client(services, settings, owner.api_key) as http:
        made = (
            await http.post("/api/discussions", json={"goal": GOAL, "turns": 2, "participants": TWO_OFFLINE})
        ).json()
    async with api_client(services, settings, other.api_key) as http:
        assert (await http.get(f"/api/discussions/{made['id']}")).status_code == 404
        assert (await http.delete(f"/api/discussions/{made['id']}")).status_code == 404
        assert (await http.get("/api/discussions")).json() == {"data": [], "count": 0}
    async with api_client(services, settings, owner.api_key) as http:
        assert (await http.delete(f"/api/discussions/{made['id']}")).status_code == 204
        assert (await http.get(f"/api/discussions/{made['id']}")).status_code == 404


async def test_the_models_a_participant_may_be(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        models = (await http.get("/api/models")).json()
    async with api_client(services, settings) as anonymous:
        assert (await anonymous.get("/api/models")).status_code == 401
    [offline] = models["data"]
    assert offline["name"] == "offline" and set(offline["aliases"]) == {"chat", "almanac-offline"}
    assert models["discussions"] == {"turn_credits": 5, "max_turns": 20, "max_participants": 4}
