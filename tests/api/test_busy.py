"""A conversation answering one message refuses another with 409 through the API — the JSON and
the streaming route alike, on SQLite and PostgreSQL — charges nothing for the refusal, and takes
messages again once the answer is complete."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from tests.support import api_client, make_user

from almanac.llm.events import ModelEvent
from almanac.llm.fake import ScriptedModel, events_of, reply
from almanac.llm.messages import ModelRequest


async def test_a_busy_conversation_answers_409(database_url: str, build: Any) -> None:
    answering, release = asyncio.Event(), asyncio.Event()

    async def slow(_: ModelRequest) -> AsyncIterator[ModelEvent]:
        answering.set()
        await release.wait()
        for event in events_of(reply("the second answer")):
            yield event

    model = ScriptedModel([reply("the first answer"), slow], default=reply("a later answer"))
    services, settings = build(database_url, model=model)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        cid = (await http.post("/api/chat", json={"message": "first"})).json()["conversation_id"]
        second = asyncio.create_task(http.post("/api/chat", json={"message": "second", "conversation_id": cid}))
        await asyncio.wait_for(answering.wait(), timeout=60)  # a bound on waiting, not on speed
        for route in ("/api/chat", "/api/chat/stream"):
            busy = await http.post(route, json={"message": "third", "conversation_id": cid})
            assert busy.status_code == 409, busy.text
            error = busy.json()["error"]
            assert (error["code"], error["field"]) == ("conversation_busy", "conversation_id")
        release.set()
        assert (await second).json()["response"] == "the second answer"
        again = await http.post("/api/chat", json={"message": "fourth", "conversation_id": cid})
        assert again.status_code == 200 and again.json()["query_id"] == "q3"
        assert (await http.get("/api/credits")).json()["balance"] == 50 - 3 * 5
