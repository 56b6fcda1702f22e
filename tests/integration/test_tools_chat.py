"""The built-in tools in a chat, through the real API and ChatService on the offline model:
"run this Python: print(2**10)" runs in the sandbox and the answer says 1024, billed 5 + 2; the
workspace tools write, list and read a file the code can then use; `GET /api/tools` lists them
as 2-credit tools. (The sandbox part is skipped where bubblewrap cannot run, unless
ALMANAC_REQUIRE_SANDBOX=1.)"""

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support import api_client, make_user

from almanac.main import Services

REQUIRE = os.environ.get("ALMANAC_REQUIRE_SANDBOX", "") == "1"


@pytest.fixture
async def chat(sqlite_url: str, build: Any, tmp_path: Path) -> AsyncIterator[tuple[Services, httpx.AsyncClient]]:
    services, settings = build(sqlite_url, data_dir=tmp_path / "data")
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        yield services, http
    assert services.tools is not None
    services.tools.close()


async def need_sandbox(services: Services) -> None:
    assert services.tools is not None and services.tools.sandbox is not None
    problem = await services.tools.sandbox.check()
    if problem is not None:
        if REQUIRE:
            pytest.fail(f"the sandbox is required (ALMANAC_REQUIRE_SANDBOX=1) but {problem}")
        pytest.skip(f"no sandbox here: {problem}")


async def test_run_this_python_answers_1024_and_costs_seven(chat: tuple[Services, httpx.AsyncClient]) -> None:
    services, http = chat
    await need_sandbox(services)
    reply = await http.post("/api/chat", json={"message": "run this Python: print(2**10)"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["tools_used"] == ["code_execution"]
    [result] = body["tool_results"]
    assert (result["status"], result["credits"], result["item_id"]) == ("ok", 2, "q1-t1")
    assert "1024" in body["response"] and "[q1-t1]" in body["response"]
    assert "<data" not in body["response"]  # the data marker is for the model, not for the reader
    assert (body["credits_used"], body["credits_remaining"]) == (7, 43)
    stored = (await http.get(f"/api/conversations/{body['conversation_id']}/items/q1-t1")).json()
    assert stored["tool_name"] == "code_execution"
    assert stored["tool_input"] == {"language": "python", "code": "print(2**10)"}
    assert "stdout:\n```\n1024\n```" in stored["content"]


async def test_the_workspace_tools_and_the_code_share_the_users_files(
    chat: tuple[Services, httpx.AsyncClient], tmp_path: Path
) -> None:
    services, http = chat
    written = (await http.post("/api/chat", json={"message": "write 'hello from almanac' to notes.txt"})).json()
    assert written["tools_used"] == ["write_file"] and written["credits_used"] == 7
    conversation = written["conversation_id"]
    listed = (
        await http.post("/api/chat", json={"message": "list my workspace files", "conversation_id": conversation})
    ).json()
    assert listed["tools_used"] == ["list_files"] and "notes.txt  18 bytes" in listed["response"]
    read = (await http.post("/api/chat", json={"message": "read notes.txt", "conversation_id": conversation})).json()
    assert read["tools_used"] == ["read_file"] and "hello from almanac" in read["response"]
    missing = (await http.post("/api/chat", json={"message": "read other.txt", "conversation_id": conversation})).json()
    assert missing["tool_results"][0]["credits"] == 0  # nothing found: the tool is free
    # and an answer that only reports the failure is declined: free too
    assert (missing["stop_reason"], missing["credits_used"]) == ("declined", 0)
    [folder] = (tmp_path / "data" / "workspaces").iterdir()  # the user's own, private
    assert (folder / "notes.txt").read_text() == "hello from almanac" and folder.stat().st_mode & 0o777 == 0o700

    await need_sandbox(services)
    code = "run this Python: print(open('/workspace/notes.txt').read().upper())"
    ran = (await http.post("/api/chat", json={"message": code, "conversation_id": conversation})).json()
    assert "HELLO FROM ALMANAC" in ran["response"]


async def test_the_tools_are_listed_as_two_credit_builtin_tools(chat: tuple[Services, httpx.AsyncClient]) -> None:
    _, http = chat
    tools = {tool["name"]: tool for tool in (await http.get("/api/tools")).json()["data"]}
    for name in ("code_execution", "read_file", "write_file", "list_files"):
        assert (tools[name]["source"], tools[name]["billing"], tools[name]["credits"]) == ("builtin", "tool", 2)
    assert "sql_query" not in tools and "web_search" not in tools  # not configured
    assert tools["code_execution"]["input_schema"]["properties"]["language"]["enum"] == ["python", "javascript", "bash"]
