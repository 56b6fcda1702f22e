"""The collaborate strategy over the HTTP API, on SQLite and PostgreSQL: the stream shows the
escalation between the tool call and the helped answer; the JSON answer is the helped one."""

import json
from dataclasses import replace
from typing import Any

from tests.support import api_client, make_user

from almanac.llm.fake import ScriptedModel, reply

QUESTION = "How do I read a CSV file and average a column in Python?"
STUCK = "I'm not sure how to read a CSV file and average a column in Python."
ANSWER = "Use `csv.DictReader` and `statistics.mean`."


def sse_events(body: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for frame in body.replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in frame.split("\n") if line and not line.startswith(":")]
        name = next((line[7:] for line in lines if line.startswith("event: ")), None)
        if name:
            events.append((name, json.loads("\n".join(line[6:] for line in lines if line.startswith("data: ")))))
    return events


async def test_the_stream_shows_the_escalation_and_the_helped_answer(database_url: str, build: Any) -> None:
    services, settings = build(database_url, model=ScriptedModel([reply(STUCK), reply(ANSWER)], name="small"))
    helper = ScriptedModel([reply("1. Use csv.DictReader.\n2. Use statistics.mean.")], name="big")
    services.chat.strategies = replace(services.chat.strategies, helper=helper)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        response = await http.post("/api/chat/stream", json={"message": QUESTION, "strategy": "collaborate"})
    events = sse_events(response.text)
    names = [name for name, _ in events if name != "summary"]
    assert names[0] == "message_start" and names[-1] == "message_end"
    [escalation] = [data for name, data in events if name == "escalation"]
    assert escalation == {
        "type": "escalation",
        "reason": "explicit_phrase",
        "from_model": "small",
        "to_model": "big",
        "attempt": 1,
    }
    assert names.index("escalation") < names.index("text_delta")  # nothing of the stuck answer was shown
    text = "".join(data["text"] for name, data in events if name == "text_delta")
    assert text == ANSWER == events[names.index("message_end")][1]["response"]


async def test_the_json_answer_is_the_helped_one(database_url: str, build: Any) -> None:
    services, settings = build(database_url, model=ScriptedModel([reply(STUCK), reply(ANSWER)], name="small"))
    services.chat.strategies = replace(services.chat.strategies, helper=ScriptedModel([reply("1. Do it.")]))
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        body = (await http.post("/api/chat", json={"message": QUESTION, "strategy": "collaborate"})).json()
    assert (body["response"], body["credits_used"], body["error"]) == (ANSWER, 5, None)
