"""The questions a new chat suggests on an embedded server are ones the offline model answers:
each documentation question finds its module in the local index built the default way (the Python
standard library is in it), and the answer quotes it — no "I cannot answer" among them."""

from __future__ import annotations

from typing import Any

import httpx
from tests.support import make_user

from almanac.main import create_app
from almanac.rag.local_index import IndexInputs, build_local_index

# What each suggestion is about: the library its passages must come from ("" for the tour).
EXPECTED = {
    "How do I cancel an asyncio task and wait for it to finish?": "asyncio",
    "How do I parse command-line arguments with argparse?": "argparse",
    "Give me a detailed tour of how Almanac works": "",
}


async def test_every_offline_suggestion_gets_a_useful_answer(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url, doc_source="local")
    await build_local_index(services.database, IndexInputs(packages=False, stdlib=True), None)
    await services.documentation.start(services.database)
    user = await make_user(services)
    transport = httpx.ASGITransport(app=create_app(settings, services))
    headers = {"Authorization": f"Bearer {user.api_key}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost", headers=headers) as http:
        suggestions = (await http.get("/api/config")).json()["suggestions"]
        assert set(suggestions) == set(EXPECTED)
        for question in suggestions:
            body = (await http.post("/api/chat", json={"message": question})).json()
            assert body["stop_reason"] == "end_turn", (question, body["response"][:300])
            library = EXPECTED[question]
            if not library:
                assert body["credits_used"] == 5 and "## " in body["response"]
                continue
            [result] = body["tool_results"]
            assert (result["name"], result["credits"], result["is_error"]) == ("retrieve_documentation", 10, False)
            item = (await http.get(f"/api/conversations/{body['conversation_id']}/items/{result['item_id']}")).json()
            assert f"Library: {library}" in item["content"] or f"/{library}" in item["content"], item["content"][:600]
            assert "cannot compose" not in body["response"] and body["credits_used"] == 15
