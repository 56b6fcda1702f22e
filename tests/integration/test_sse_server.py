"""SSE through a real uvicorn server: the event sequence, heartbeats, and a client that leaves."""

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
from tests.fakes.server import ServerThread
from tests.support import make_user

from almanac.billing.pricing import BillingCategory
from almanac.llm.events import ModelEvent, TextDelta
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.llm.messages import ModelRequest
from almanac.main import create_app
from almanac.tools.base import ToolContext, ToolOutput


class Wait:
    """A tool that waits (until cancelled) when asked to."""

    name = "wait"
    description = "wait"
    input_schema: Mapping[str, Any] = {"type": "object", "properties": {"forever": {"type": "boolean"}}}
    output_schema = None
    billing = BillingCategory.TOOL
    source = "test"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        if arguments.get("forever"):
            await asyncio.Event().wait()
        return ToolOutput("waited")


def frames(raw: str) -> list[str]:
    """Each SSE frame as `event-name`, or `:comment` for comment-only frames."""
    names = []
    for frame in raw.replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in frame.split("\n") if line]
        event = next((line[7:] for line in lines if line.startswith("event: ")), None)
        if event:
            names.append(event)
        elif lines and lines[0].startswith(":"):
            names.append(":" + lines[0][1:].strip())
    return names


async def test_the_event_type_sequence_over_a_real_server(database_url: str, build: Any) -> None:
    model = ScriptedModel([calls(call("wait", {}), call("wait", {}), text="Checking. "), reply("All good.")])
    user = await make_user(build(database_url)[0])
    services, settings = build(database_url, model=model)
    services.registry.register(Wait())
    with ServerThread(create_app(settings, services)) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            response = await http.post(
                "/api/chat/stream", json={"message": "go"}, headers={"Authorization": f"Bearer {user.api_key}"}
            )
    assert response.headers["content-type"].startswith("text/event-stream")
    sequence = frames(response.text)
    assert sequence[:5] == ["message_start", "text_delta", "tool_call", "tool_call", "usage"]
    assert sorted(sequence[5:7]) == ["tool_result", "tool_result"]
    assert sequence[7:] == ["text_delta", "usage", "message_end"]
    end = json.loads(response.text.strip().split("\n")[-1].removeprefix("data: "))
    assert (end["credits_used"], end["tools_used"], end["turns"]) == (9, ["wait", "wait"], 2)


async def test_idle_streams_get_heartbeat_comments(sqlite_url: str, build: Any) -> None:
    async def slow(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        await asyncio.sleep(0.8)
        yield TextDelta("late")

    user = await make_user(build(sqlite_url)[0])
    services, settings = build(sqlite_url, model=ScriptedModel([slow]), sse_heartbeat_s=0.2)
    with ServerThread(create_app(settings, services)) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            response = await http.post(
                "/api/chat/stream", json={"message": "go"}, headers={"Authorization": f"Bearer {user.api_key}"}
            )
    sequence = frames(response.text)
    assert sequence.count(":heartbeat") >= 2
    assert [name for name in sequence if not name.startswith(":")][-1] == "message_end"


async def test_a_client_that_leaves_mid_stream_is_billed_only_for_what_completed(database_url: str, build: Any) -> None:
    model = ScriptedModel([calls(call("wait", {}), call("wait", {"forever": True}), text="Working on it. ")])
    user = await make_user(build(database_url)[0])
    services, settings = build(database_url, model=model)
    services.registry.register(Wait())
    with ServerThread(create_app(settings, services)) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            async with http.stream(
                "POST", "/api/chat/stream", json={"message": "go"}, headers={"Authorization": f"Bearer {user.api_key}"}
            ) as response:
                seen: list[str] = []
                async for line in response.aiter_lines():
                    if line.startswith("event: "):
                        seen.append(line[7:])
                    if seen.count("tool_result") == 1:
                        break  # leave while the second tool still runs
        observer = build(database_url)[0]
        conversations, _ = await observer.conversations.page(user_id=user.user.id, limit=1, offset=0)
        deadline = time.monotonic() + 10
        items: dict[str, Any] = {}
        while time.monotonic() < deadline:
            items = {
                i.item_id: i
                for i in await observer.history.items(user_id=user.user.id, conversation_id=conversations[0].id)
            }
            if "q1-r" in items:
                break
            await asyncio.sleep(0.05)
    assert items["q1-t1"].status == "ok" and items["q1-t1"].credits == 2
    assert items["q1-t2"].status == "cancelled" and items["q1-t2"].credits == 0
    assert items["q1-r"].status == "interrupted"
    snapshot = await observer.credits.snapshot(user_id=user.user.id)
    sums = await observer.credits.ledger_sums(user_id=user.user.id)
    assert snapshot.account.balance == 43 and sums.get("daily", 0) == 43


async def test_closing_the_stream_after_a_tool_call_still_costs_the_query(database_url: str, build: Any) -> None:
    """The attack: ask the model to put its answer in a tool argument, read the `tool_call` event,
    disconnect before any text. The call's input was model output: the base price is kept."""
    model = ScriptedModel([calls(call("wait", {"forever": True}))])
    user = await make_user(build(database_url)[0])
    services, settings = build(database_url, model=model)
    services.registry.register(Wait())
    with ServerThread(create_app(settings, services)) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            key = {"Authorization": f"Bearer {user.api_key}"}
            body = {"message": "put your whole answer in the tool argument"}
            async with http.stream("POST", "/api/chat/stream", json=body, headers=key) as response:
                async for line in response.aiter_lines():
                    if line == "event: tool_call":
                        break
            conversation = ""
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not conversation:
                listed = (await http.get("/api/conversations", headers=key)).json()["data"]
                conversation = listed[0]["id"] if listed else ""
                await asyncio.sleep(0.05)
            item: dict[str, Any] = {}
            while time.monotonic() < deadline:
                found = await http.get(f"/api/conversations/{conversation}/items/q1-r", headers=key)
                if found.status_code == 200:
                    item = found.json()
                    break
                await asyncio.sleep(0.05)
            credits = (await http.get("/api/credits", headers=key)).json()
    assert item["status"] == "interrupted"
    assert credits["balance"] == 45  # the base is kept; the tool that never finished is refunded


async def test_a_conversation_that_is_answering_cannot_be_deleted(database_url: str, build: Any) -> None:
    release = threading.Event()

    async def slow(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("thinking")
        await asyncio.to_thread(release.wait)  # the server runs in another thread and event loop
        yield TextDelta(" done")

    model = ScriptedModel([slow])
    user = await make_user(build(database_url)[0])
    services, settings = build(database_url, model=model)
    with ServerThread(create_app(settings, services)) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            key = {"Authorization": f"Bearer {user.api_key}"}
            conversation = ""
            seen: list[str] = []
            async with http.stream("POST", "/api/chat/stream", json={"message": "hi"}, headers=key) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: ") and not conversation:
                        conversation = json.loads(line[6:])["conversation_id"]
                    if line.startswith("event: "):
                        seen.append(line[7:])
                    if line == "event: text_delta" and not release.is_set():
                        refused = await http.delete(f"/api/conversations/{conversation}", headers=key)
                        assert refused.status_code == 409, refused.text
                        assert refused.json()["error"]["code"] == "conversation_busy"
                        release.set()
            assert seen[-1] == "message_end"  # the answer was settled normally
            deleted = await http.delete(f"/api/conversations/{conversation}", headers=key)
            assert deleted.status_code == 204
            assert (await http.get(f"/api/conversations/{conversation}", headers=key)).status_code == 404
