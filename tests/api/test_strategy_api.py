"""Choosing a strategy over the API: per request, or as the user's own default (PATCH /api/me)."""

import json
from typing import Any

from tests.support import api_client, make_user

from almanac.chat.service import Strategies
from almanac.llm.fake import ScriptedModel, reply


async def test_a_user_sets_their_default_strategy_and_a_request_can_override_it(database_url: str, build: Any) -> None:
    planner = ScriptedModel([reply("SUMMARY:\nfrom the planner")] * 2, name="planner")
    services, settings = build(database_url, model=ScriptedModel([reply("from the chat model")] * 2))
    services.chat.strategies = Strategies(planner=planner)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        assert (await http.get("/api/me")).json()["default_strategy"] is None
        assert (await http.patch("/api/me", json={"default_strategy": "sideways"})).status_code == 422
        updated = await http.patch("/api/me", json={"default_strategy": "boost"})
        assert updated.status_code == 200 and updated.json()["default_strategy"] == "boost"
        boosted = (await http.post("/api/chat", json={"message": "hi"})).json()
        assert boosted["response"] == "from the planner"  # the planner's SUMMARY answered
        direct = (await http.post("/api/chat", json={"message": "hi", "strategy": "direct"})).json()
        assert direct["response"] == "from the chat model"
        assert (await http.post("/api/chat", json={"message": "hi", "strategy": "bogus"})).status_code == 422
        cleared = await http.patch("/api/me", json={"default_strategy": None})
        assert cleared.json()["default_strategy"] is None
    assert len(planner.requests) == 1


async def test_boost_works_on_the_embedded_defaults(database_url: str, build: Any) -> None:
    """With no planner configured the chat model plans for itself; the offline model writes no plan,
    so the answer comes from the direct path — never an error."""
    services, settings = build(database_url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        answer = await http.post("/api/chat", json={"message": "hello", "strategy": "boost"})
    assert answer.status_code == 200 and answer.json()["error"] is None and answer.json()["response"]


async def test_a_conversation_keeps_its_own_strategy(database_url: str, build: Any) -> None:
    """Request > conversation > user's default > server's: a conversation started with a strategy
    keeps it; PATCH /api/conversations/{id} changes it (null: back to the default)."""
    planner = ScriptedModel([reply("SUMMARY:\nfrom the planner")] * 3, name="planner")
    services, settings = build(database_url, model=ScriptedModel([reply("from the chat model")] * 4))
    services.chat.strategies = Strategies(planner=planner)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        started = (await http.post("/api/chat", json={"message": "hi", "strategy": "boost"})).json()
        conversation = started["conversation_id"]
        assert started["response"] == "from the planner"
        shown = (await http.get(f"/api/conversations/{conversation}")).json()
        assert shown["strategy"] == "boost"
        again = (await http.post("/api/chat", json={"message": "hi", "conversation_id": conversation})).json()
        assert again["response"] == "from the planner"  # the conversation's strategy, not the default
        once = {"message": "hi", "conversation_id": conversation, "strategy": "direct"}
        assert (await http.post("/api/chat", json=once)).json()["response"] == "from the chat model"
        assert (await http.get(f"/api/conversations/{conversation}")).json()["strategy"] == "boost"  # unchanged

        changed = await http.patch(f"/api/conversations/{conversation}", json={"strategy": "direct"})
        assert changed.status_code == 200 and changed.json()["strategy"] == "direct"
        assert changed.json()["title"] == shown["title"]  # only what was sent changes
        after = (await http.post("/api/chat", json={"message": "hi", "conversation_id": conversation})).json()
        assert after["response"] == "from the chat model"
        await http.patch("/api/me", json={"default_strategy": "boost"})
        cleared = await http.patch(f"/api/conversations/{conversation}", json={"strategy": None})
        assert cleared.json()["strategy"] is None
        default = (await http.post("/api/chat", json={"message": "hi", "conversation_id": conversation})).json()
        assert default["response"] == "from the planner"  # the user's default again
        listed = (await http.get("/api/conversations")).json()["data"]
        assert [c["strategy"] for c in listed] == [None]

        for bad, field in (({"strategy": "sideways"}, "strategy"), ({}, "body"), ({"title": None}, "title")):
            refused = await http.patch(f"/api/conversations/{conversation}", json=bad)
            assert (refused.status_code, refused.json()["error"]["field"]) == (422, field), bad
    assert len(planner.requests) == 3


async def test_a_boost_summary_with_markdown_headings_is_answered_and_stored_whole(
    database_url: str, build: Any
) -> None:
    summary = (
        "To set this up you need a virtualenv.\n\n## Steps\n1. python -m venv .venv\n2. pip install -e .\n\n"
        "### Plan B\n```bash\nuv venv\n```\nReasoning: a venv keeps the project's packages apart."
    )
    planner = ScriptedModel([reply(f"SUMMARY:\n{summary}")] * 2, name="planner")
    services, settings = build(database_url, model=ScriptedModel([reply("from the chat model")] * 2))
    services.chat.strategies = Strategies(planner=planner)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        answer = (await http.post("/api/chat", json={"message": "how do I set up?", "strategy": "boost"})).json()
        assert answer["response"] == summary
        stored = (await http.get(f"/api/conversations/{answer['conversation_id']}/items/q1-r")).json()
        assert stored["content"] == summary
        streamed = await http.post(
            "/api/chat/stream",
            json={"message": "again?", "strategy": "boost", "conversation_id": answer["conversation_id"]},
        )
        text = "".join(
            json.loads(line.removeprefix("data: ")).get("text", "")
            for line in streamed.text.replace("\r\n", "\n").split("\n")
            if line.startswith("data: ") and '"text_delta"' in line
        )
        assert text == summary
