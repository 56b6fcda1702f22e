"""What a model or a tool produces is stored whatever it holds: a lone UTF-16 surrogate in a tool
call's arguments or in the answer, a NUL in a tool's output. On PostgreSQL these used to break the
conversation for good (a tool item silently lost while its credits stayed charged, then every read
a 500 and every new message a 502); now each becomes U+FFFD and the conversation goes on."""

from collections.abc import Mapping
from typing import Any

from tests.support import api_client, make_user

from almanac.billing.pricing import BillingCategory
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.tools.base import ToolContext, ToolOutput

R = "\ufffd"


class NulTool:
    """A tool whose output holds NUL characters (as binary output can)."""

    name = "nul_output"
    description = "Returns text with NUL characters in it."
    input_schema: Mapping[str, Any] = {"type": "object", "properties": {"id": {"type": "string"}}}
    output_schema = None
    billing = BillingCategory.TOOL
    source = "builtin"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        return ToolOutput("binary\x00output\x00end")


async def test_surrogates_and_nul_from_a_model_and_a_tool_are_stored_and_the_conversation_goes_on(
    database_url: str, build: Any
) -> None:
    model = ScriptedModel(
        [
            calls(call("nul_output", {"id": "\ud800"}), text="looking\udfff"),
            reply("answer \ud800 with \x00 in it"),
            reply("the second answer"),
        ]
    )
    services, settings = build(database_url, model=model)
    services.registry.register(NulTool())
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        first = await http.post("/api/chat", json={"message": "look it up"})
        assert first.status_code == 200, first.text
        body = first.json()
        assert body["tool_results"][0]["credits"] == 2 and body["credits_used"] == 7
        conversation = body["conversation_id"]
        items = await http.get(f"/api/conversations/{conversation}/items/q1-t1")
        assert items.status_code == 200, items.text
        stored = items.json()
        assert stored["content"] == f"binary{R}output{R}end"
        assert stored["tool_input"] == {"id": R}
        answer = (await http.get(f"/api/conversations/{conversation}/items/q1-r")).json()
        assert answer["content"] == f"looking{R}answer {R} with {R} in it"
        listing = await http.get(f"/api/conversations/{conversation}")
        assert listing.status_code == 200, listing.text
        second = await http.post("/api/chat", json={"message": "and then?", "conversation_id": conversation})
        assert second.status_code == 200, second.text
        assert second.json()["response"] == "the second answer"


async def test_over_long_tool_names_and_call_ids_from_a_model_are_stored_cut_to_their_columns(
    database_url: str, build: Any
) -> None:
    """Column lengths are a database's business (PostgreSQL enforces them, SQLite does not): a model
    that names a tool or a call with hundreds of characters still gets its items stored."""
    model = ScriptedModel([calls(call("x" * 300, {"a": 1}, call_id="toolu_" + "9" * 300)), reply("done")])
    services, settings = build(database_url, model=model)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        body = (await http.post("/api/chat", json={"message": "go"})).json()
        stored = await http.get(f"/api/conversations/{body['conversation_id']}/items/q1-t1")
        assert stored.status_code == 200, stored.text
        assert stored.json()["tool_name"] == "x" * 128
