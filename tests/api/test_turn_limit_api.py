"""MAX_TURNS is honoured end to end: a model that keeps calling tools gets exactly MAX_TURNS tool
turns, then one last request — with the tools still defined (providers refuse tool blocks without
them) but `tool_choice: none` — and the answer says it hit the limit."""

from typing import Any

from tests.support import api_client, make_user

from almanac.llm.fake import ScriptedModel, call, calls, reply


async def test_the_turn_limit_comes_from_the_setting(database_url: str, build: Any) -> None:
    model = ScriptedModel(
        [calls(call("retrieve_full_context", {"id": "q1"})) for _ in range(3)] + [reply("best effort")]
    )
    services, settings = build(database_url, model=model, max_turns=3, max_query_credits=0)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        body = (await http.post("/api/chat", json={"message": "keep looking"})).json()
    assert body["stop_reason"] == "turn_limit" and body["turns"] == 4
    assert body["response"] == "best effort"
    assert len(model.requests) == 4
    final = model.requests[-1]
    assert final.tool_choice == "none" and [spec.name for spec in final.tools] == [
        spec.name for spec in model.requests[0].tools
    ]
    assert all(request.tool_choice == "auto" for request in model.requests[:3])
