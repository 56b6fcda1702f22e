"""Boost mode through the gateway, one test per scenario of boost-model-requirements.md.

Two fake OpenAI-compatible servers speak the real wire format: the executor (OPENAI_BASE_URL, the
tier's upstream) and the boost model (BOOST_BASE_URL), each scripted per test. The client is the
official anthropic SDK."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anthropic
import pytest
from tests.api.gateway_support import Gateway, asgi_stream, claude_code_request, gateway, send_raw, sse
from tests.fakes.openai_server import Failure, FakeOpenAI, Reply
from tests.fakes.server import ServerThread
from tests.support import make_user

from almanac.startup import describe

READ_FILE = {
    "name": "read_file",
    "description": "Read a file from the filesystem",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}
WRITE_FILE = {
    "name": "write_file",
    "description": "Write content to a file",
    "input_schema": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
}
BASH = {
    "name": "bash",
    "description": "Execute bash commands",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
SALES_ANALYSIS = (
    "ANALYSIS:\nThe user requests sales data analysis. Initial context: We need to locate and process sales data "
    "from 2024. First uncertainty: Exact location and format of the sales data file. Potential path: Check common "
    "data directories. Refining thought: Start with '/data/sales_2024.csv' as it's the standard location.\n\n"
    "GUIDANCE:\n1. Call read_file with path: '/data/sales_2024.csv'\n2. Create a visualization using the data\n"
    "3. Call write_file with path: '/reports/sales_analysis.html' and content: an HTML report with monthly trends"
)
GIT_GUIDANCE = (
    "GUIDANCE:\nExecute these steps: 1) Call bash with command: 'git status' 2) Call bash with command: 'git add .' "
    "3) Call bash with command: 'git commit -m \"Auto commit\"'"
)
CALLS_READ = Reply(text="Reading it.", tool_calls=[("call_r", "read_file", {"path": "/data/sales_2024.csv"})])
DIRECT = Reply(text="I answered without any tool.")


@dataclass
class Boost:
    gw: Gateway
    executor: FakeOpenAI
    planner: FakeOpenAI

    def planner_prompts(self) -> list[str]:
        return [r["body"]["messages"][-1]["content"] for r in self.planner.requests]

    def executor_systems(self) -> list[str]:
        return [r["body"]["messages"][0]["content"] for r in self.executor.requests]

    async def ask(
        self,
        text: str = "analyze market trends from data files",
        *,
        tools: list[Any] | None = None,
        model: str = "claude-sonnet-4-6",
        stream: bool = False,
    ) -> anthropic.types.Message:
        kwargs: dict[str, Any] = {"model": model, "max_tokens": 500, "messages": [{"role": "user", "content": text}]}
        if tools is None:
            kwargs["tools"] = [READ_FILE, WRITE_FILE]
        elif tools:
            kwargs["tools"] = tools
        if stream:
            async with self.gw.client.messages.stream(**kwargs) as events:
                return await events.get_final_message()
        return await self.gw.client.messages.create(**kwargs)


@pytest.fixture
def fakes() -> Iterator[tuple[FakeOpenAI, str, FakeOpenAI, str]]:
    executor, planner = FakeOpenAI(), FakeOpenAI()
    with ServerThread(executor.app) as e, ServerThread(planner.app) as p:
        yield executor, e.url + "/v1", planner, p.url + "/v1"


@asynccontextmanager
async def boosted(url: str, fakes: tuple[FakeOpenAI, str, FakeOpenAI, str], **settings: Any) -> AsyncIterator[Boost]:
    executor, executor_url, planner, planner_url = fakes
    values = {
        "openai_base_url": executor_url,
        "boost_base_url": planner_url,
        "boost_api_key": "sk-boost",
        "boost_model": "planner-1",
        "enable_boost_support": "MIDDLE_MODEL",
        "middle_model": "executor-1",
        **settings,
    }
    async with gateway(url, **values) as gw:
        yield Boost(gw, executor, planner)


# --- Requirement: Boost Model Configuration ------------------------------------------------------


async def test_boost_configuration_is_validated_and_shown_next_to_the_tier_mapping(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        lines = "\n".join(describe(b.gw.services.settings, b.gw.services))
    assert "gateway tiers" in lines and "MIDDLE_MODEL → openai / executor-1 (boost)" in lines
    assert "boost" in lines and "planner-1" in lines and "MIDDLE_MODEL" in lines


async def test_without_boost_configuration_startup_says_boost_is_not_configured(sqlite_url: str) -> None:
    async with gateway(sqlite_url) as gw:
        lines = "\n".join(describe(gw.services.settings, gw.services))
    assert "boost" in lines and "not configured" in lines
    assert gw.services.gateway is not None and gw.services.gateway.boost is None


async def test_a_tier_without_boost_uses_the_direct_path_without_a_loop(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.executor.enqueue(CALLS_READ)
        message = await b.ask(model="claude-haiku-4-5")
        assert message.stop_reason == "tool_use"
        assert b.planner.requests == []
        assert "Plan from the planner" not in b.executor_systems()[0] if b.executor_systems()[0] else True
        rows = await b.gw.usage()
        assert rows[0].boost_loops == 0 and rows[0].planner_model is None


# --- Requirement: Tools-in-Message Construction --------------------------------------------------


async def test_planner_message_has_the_format_instructions_the_tools_as_text_and_the_request(
    sqlite_url: str, fakes: Any
) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="SUMMARY:\nDone."))
        await b.ask("analyze market trends from data files")
    prompt = b.planner_prompts()[0]
    assert "SUMMARY:" in prompt and "ANALYSIS:" in prompt and "GUIDANCE:" in prompt
    assert "**read_file**: Read a file from the filesystem" in prompt and "path (string, required)" in prompt
    assert "analyze market trends from data files" in prompt


async def test_a_request_without_tools_gives_the_planner_an_empty_tools_section(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="ANALYSIS:\nKnowledge suffices.\n\nGUIDANCE:\nExplain it from your knowledge."))
        b.executor.enqueue(Reply(text="Here is the explanation."))
        message = await b.ask("explain event loops", tools=[])
        assert message.content[0].text.strip() == "Here is the explanation."  # type: ignore[union-attr]
    assert "(none: plan from your own knowledge)" in b.planner_prompts()[0]
    assert len(b.planner.requests) == 1  # no tools to call: the executor's answer is accepted


async def test_the_planner_gets_no_tools_parameter(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="SUMMARY:\nok"))
        await b.ask()
    body = b.planner.requests[0]["body"]
    assert "tools" not in body and "tool_choice" not in body and body["model"] == "planner-1"


# --- Requirement: Response Section Parsing (end to end; table-driven cases in tests/unit) ---------


async def test_analysis_and_guidance_are_extracted_and_handed_to_the_executor(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text=SALES_ANALYSIS))
        b.executor.enqueue(CALLS_READ)
        message = await b.ask()
        assert message.stop_reason == "tool_use"
    system = b.executor_systems()[0]
    assert "ANALYSIS:\nThe user requests sales data analysis." in system
    assert "GUIDANCE:\n1. Call read_file with path: '/data/sales_2024.csv'" in system


async def test_guidance_without_analysis_is_handled(sqlite_url: str, fakes: Any) -> None:
    guidance = (
        "GUIDANCE:\nCall search_web with query: 'latest Node.js performance optimizations' then call write_file "
        "with path: '/notes/nodejs_perf.md' and content: Document the key performance tips found"
    )
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text=guidance))
        b.executor.enqueue(Reply(tool_calls=[("c1", "write_file", {"path": "/notes/nodejs_perf.md", "content": "x"})]))
        message = await b.ask("Node.js performance notes")
        assert message.stop_reason == "tool_use"
    system = b.executor_systems()[0]
    assert "ANALYSIS:" not in system and "latest Node.js performance optimizations" in system


async def test_instructions_heading_is_read_as_guidance(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="Instructions:\nCall read_file with path: '/etc/app.conf'"))
        b.executor.enqueue(CALLS_READ)
        message = await b.ask()
        assert message.stop_reason == "tool_use"
    assert "GUIDANCE:\nCall read_file with path: '/etc/app.conf'" in b.executor_systems()[0]


async def test_summary_is_returned_directly_without_the_executor(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="SUMMARY:\nThe answer to your question is 42. No tools needed for this query."))
        message = await b.ask("What is the answer?")
        assert message.content[0].text == "The answer to your question is 42. No tools needed for this query."  # type: ignore[union-attr]
        assert message.stop_reason == "end_turn"
        assert b.executor.requests == []
        rows = await b.gw.usage()
        assert rows[0].boost_outcome == "summary"


async def test_all_three_sections_summary_wins(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="ANALYSIS:\nThink.\n\nGUIDANCE:\nCall read_file.\n\nSUMMARY:\nParis."))
        message = await b.ask("Capital of France?", stream=True)
        assert message.content[0].text == "Paris."  # type: ignore[union-attr]
        assert b.executor.requests == []


VENV_SUMMARY = (
    "To set this up you need a virtualenv.\n\n## Steps\n1. python -m venv .venv\n2. pip install -e .\n\n"
    "### Plan B\n```bash\nGUIDANCE: inside a fence is content\nuv venv\n```\nInstructions: none needed."
)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_summary_holding_markdown_headings_reaches_the_client_whole(
    sqlite_url: str, fakes: Any, stream: bool
) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text=f"SUMMARY:\n{VENV_SUMMARY}"))
        message = await b.ask("how do I set up the project?", stream=stream)
        assert message.content[0].text == VENV_SUMMARY  # type: ignore[union-attr]
        assert b.executor.requests == []


async def test_guidance_reaches_the_executor_verbatim(sqlite_url: str, fakes: Any) -> None:
    guidance = '1. Call bash with command: "git status"\n2. Then call bash with command: "git add ."'
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text=f"GUIDANCE:\n{guidance}"))
        b.executor.enqueue(Reply(tool_calls=[("c1", "bash", {"command": "git status"})]))
        await b.ask("commit my work", tools=[BASH])
    assert f"GUIDANCE:\n{guidance}" in b.executor_systems()[0]


# --- Requirement: Auxiliary Model Request Assembly / Tool Parameter Restoration ---------------------


async def test_executor_request_has_the_original_message_the_plan_and_the_real_tools(
    sqlite_url: str, fakes: Any
) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text=SALES_ANALYSIS))
        b.executor.enqueue(CALLS_READ)
        await b.ask("analyze the 2024 sales")
    body = b.executor.requests[0]["body"]
    assert body["model"] == "executor-1"
    assert body["messages"][-1] == {"role": "user", "content": "analyze the 2024 sales"}
    assert "ANALYSIS:" in body["messages"][0]["content"] and "GUIDANCE:" in body["messages"][0]["content"]
    assert [tool["function"]["name"] for tool in body["tools"]] == ["read_file", "write_file"]


async def test_detailed_guidance_alone_reaches_the_executor(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text=GIT_GUIDANCE))
        b.executor.enqueue(Reply(tool_calls=[("c1", "bash", {"command": "git status"})]))
        message = await b.ask("commit my work", tools=[BASH])
        assert message.content[0].input == {"command": "git status"}  # type: ignore[union-attr]
    assert 'git commit -m "Auto commit"' in b.executor_systems()[0]


async def test_summary_skips_the_executor_request_entirely(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="SUMMARY:\nNo tools needed."))
        await b.ask(stream=True)
        assert b.executor.requests == []


async def test_tools_are_text_for_the_planner_and_a_tools_parameter_for_the_executor(
    sqlite_url: str, fakes: Any
) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="GUIDANCE:\nCall read_file with path: '/a'"))
        b.executor.enqueue(CALLS_READ)
        await b.ask()
    assert "tools" not in b.planner.requests[0]["body"] and "read_file" in b.planner_prompts()[0]
    assert b.executor.requests[0]["body"]["tools"][0]["function"]["parameters"] == READ_FILE["input_schema"]


async def test_only_the_executor_can_execute_tools(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="GUIDANCE:\nCall read_file with path: '/a'"))
        b.executor.enqueue(CALLS_READ)
        message = await b.ask()
    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert all("tool_calls" not in str(r["body"]) for r in b.planner.requests)


# --- Requirement: Boost Model Fallback -------------------------------------------------------------


async def test_a_boost_500_falls_back_to_the_direct_path(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Failure(500, "boost down"))
        b.executor.enqueue(CALLS_READ)
        message = await b.ask()
        assert message.stop_reason == "tool_use"
        assert "Plan from the planner" not in b.executor_systems()[0] if b.executor_systems() else True
        rows = await b.gw.usage()
        assert rows[0].boost_outcome == "direct" and rows[0].boost_loops == 1


async def test_unparseable_boost_replies_fall_back_to_the_direct_path(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="garbage"), Reply(text="more garbage"), Reply(text="¯\\_(ツ)_/¯"))
        b.executor.enqueue(Reply(text="Direct answer."))
        message = await b.ask()
        assert message.content[0].text.strip() == "Direct answer."  # type: ignore[union-attr]
        assert len(b.planner.requests) == 3 and len(b.executor.requests) == 1
        assert (await b.gw.usage())[0].boost_outcome == "direct"


async def test_a_boost_timeout_falls_back_to_the_direct_path(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes, boost_timeout_s=0.5) as b:
        b.planner.enqueue(Reply(text="SUMMARY:\ntoo late", delay_s=5))
        b.executor.enqueue(Reply(text="Direct after timeout."))
        message = await b.ask(stream=True)
        assert message.content[0].text.strip() == "Direct after timeout."  # type: ignore[union-attr]


# --- Requirement: Loop Mechanism -------------------------------------------------------------------


async def test_a_reply_without_sections_is_retried_with_the_previous_reply(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="I think we should look at the files."), Reply(text="SUMMARY:\nDone now."))
        message = await b.ask()
        assert message.content[0].text == "Done now."  # type: ignore[union-attr]
    first, second = b.planner_prompts()
    assert "Attempt (loop): 0 of 3" in first and "Attempt (loop): 1 of 3" in second
    assert "I think we should look at the files." in second and "neither SUMMARY nor GUIDANCE" in second


async def test_an_executor_that_calls_no_tool_triggers_a_retry_saying_so(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(
            Reply(text="GUIDANCE:\nCall read_file with path: '/a'"),
            Reply(text="GUIDANCE:\nYou MUST call read_file('/a')"),
        )
        b.executor.enqueue(DIRECT, CALLS_READ)
        message = await b.ask()
        assert message.stop_reason == "tool_use"
        assert "I answered without any tool" not in str(message.content)
    assert "the executor called no tool" in b.planner_prompts()[1]
    assert "I answered without any tool." in b.planner_prompts()[1]


async def test_after_three_loops_the_best_available_response_is_returned(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="GUIDANCE:\nCall read_file."), Reply(text="garbage"), Reply(text="still garbage"))
        b.executor.enqueue(Reply(text="My best answer without tools."))
        message = await b.ask(stream=True)
        assert message.content[0].text.strip() == "My best answer without tools."  # type: ignore[union-attr]
        assert len(b.planner.requests) == 3 and len(b.executor.requests) == 1
        row = (await b.gw.usage())[0]
        assert (row.boost_loops, row.boost_outcome, row.status) == (3, "best", 200)


async def test_in_the_last_loop_the_executor_answer_is_the_response(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(*[Reply(text=f"GUIDANCE:\nCall read_file (try {n}).") for n in range(3)])
        b.executor.enqueue(DIRECT, DIRECT, Reply(text="Third and final answer."))
        message = await b.ask()
        assert message.content[0].text.strip() == "Third and final answer."  # type: ignore[union-attr]
        assert len(b.planner.requests) == 3


async def test_each_loop_prompt_carries_previous_attempts_and_the_loop_number(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="first: no format"), Reply(text="second: no format"), Reply(text="SUMMARY:\nok"))
        await b.ask()
    prompts = b.planner_prompts()
    assert [f"Attempt (loop): {n} of 3" in p for n, p in enumerate(prompts)] == [True, True, True]
    assert "(none: this is the first attempt)" in prompts[0]
    assert "first: no format" in prompts[2] and "second: no format" in prompts[2]


# --- Requirement: Tool Usage Detection --------------------------------------------------------------


async def test_an_executor_answering_instead_of_calling_read_file_is_detected(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="GUIDANCE:\nCall read_file with path: '/data/x'"), Reply(text="SUMMARY:\nfine"))
        b.executor.enqueue(Reply(text="The file probably contains data."))
        message = await b.ask()
        assert message.content[0].text == "fine"  # type: ignore[union-attr]
        assert (await b.gw.usage())[0].boost_loops == 2


async def test_an_executor_calling_several_tools_ends_the_loop(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text=SALES_ANALYSIS))
        b.executor.enqueue(
            Reply(
                tool_calls=[
                    ("c1", "read_file", {"path": "/data/sales_2024.csv"}),
                    ("c2", "write_file", {"path": "/r", "content": "x"}),
                ]
            )
        )
        message = await b.ask(stream=True)
        assert [block.name for block in message.content if block.type == "tool_use"] == ["read_file", "write_file"]
        assert len(b.planner.requests) == 1
        assert (await b.gw.usage())[0].boost_outcome == "guided"


async def test_tool_use_is_detected_in_the_stream(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="GUIDANCE:\nCall read_file with path: '/a'"))
        b.executor.enqueue(
            Reply(text="Looking now.", tool_calls=[("c1", "read_file", {"path": "/a"})], chunk_delay_s=0.01)
        )
        async with b.gw.client.messages.stream(
            model="claude-sonnet-4-6",
            max_tokens=100,
            messages=[{"role": "user", "content": "read /a"}],
            tools=[READ_FILE],  # type: ignore[list-item]
        ) as events:
            kinds = [event.type async for event in events]
            message = await events.get_final_message()
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        assert message.content[0].text.strip() == "Looking now." and message.content[1].name == "read_file"  # type: ignore[union-attr]


# --- Improvements over the original -----------------------------------------------------------------


async def test_the_planner_sees_the_conversation_and_tool_results(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="SUMMARY:\nThe file says hello."))
        await b.gw.client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=100,
            tools=[READ_FILE],  # type: ignore[list-item]
            messages=[
                {"role": "user", "content": "What does /a say?"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "/a"}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "hello from the file"}],
                },
            ],
        )
    prompt = b.planner_prompts()[0]
    assert "What does /a say?" in prompt
    assert '<data source="tool call">\nread_file with {"path": "/a"}\n</data>' in prompt  # a model's call: data
    assert '<data source="result of read_file">\nhello from the file\n</data>' in prompt


async def test_planner_and_executor_usage_are_recorded_separately(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="GUIDANCE:\nCall read_file.", prompt_tokens=111, completion_tokens=11))
        b.executor.enqueue(
            Reply(tool_calls=[("c", "read_file", {"path": "/a"})], prompt_tokens=222, completion_tokens=22)
        )
        await b.ask(stream=True)
        row = (await b.gw.usage())[0]
    assert (row.planner_model, row.planner_input_tokens, row.planner_output_tokens) == ("planner-1", 111, 11)
    assert (row.upstream_model, row.input_tokens, row.output_tokens) == ("executor-1", 222, 22)


async def test_a_streaming_client_gets_one_valid_stream_across_retries(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="GUIDANCE:\nCall read_file."), Reply(text="GUIDANCE:\nReally call read_file."))
        b.executor.enqueue(Reply(text="Held back, then dropped."), CALLS_READ)
        async with b.gw.client.messages.stream(
            model="claude-sonnet-4-6",
            max_tokens=100,
            messages=[{"role": "user", "content": "go"}],
            tools=[READ_FILE],  # type: ignore[list-item]
        ) as events:
            kinds = [event.type async for event in events]
            message = await events.get_final_message()
    assert kinds.count("message_start") == 1 and kinds.count("message_stop") == 1
    assert "Held back" not in str(message.content)
    assert [block.type for block in message.content] == ["text", "tool_use"]


async def test_a_stream_waiting_on_the_planner_is_kept_alive_with_pings(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        assert b.gw.services.gateway is not None
        b.gw.services.gateway.keepalive_s = 0.05
        b.gw.services.gateway.hold_s = 0.1
        b.planner.enqueue(Reply(text="SUMMARY:\nThe plan took a while.", delay_s=0.6))
        body = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 100,
            "stream": True,
            "messages": [{"role": "user", "content": "go"}],
            "tools": [READ_FILE],
        }
        headers = {"x-api-key": b.gw.key, "anthropic-version": "2023-06-01"}
        async with b.gw.http.stream("POST", "/v1/messages", json=body, headers=headers) as response:
            assert response.status_code == 200
            lines = [line async for line in response.aiter_lines() if line]
        b.planner.enqueue(Reply(text="SUMMARY:\nStill slow.", delay_s=0.3))
        sdk = await b.ask(stream=True)  # the official SDK reads the pinged stream as usual
    # message_start goes out once the hold is over; then pings, as Anthropic's API sends them, until the plan is in.
    events = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
    content = events.index("content_block_start")
    assert events[0] == "message_start" and content > 2 and set(events[1:content]) == {"ping"}
    text = "".join(e["delta"]["text"] for e in sse("\n".join(lines)) if e["type"] == "content_block_delta")
    assert text.strip() == "The plan took a while." and lines[-1].startswith("data: ") and "message_stop" in lines[-1]
    assert sdk.content[0].text == "Still slow."  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("failure", "error", "kind"),
    [
        (Failure(429, "slow down", {"retry-after": "7"}), anthropic.RateLimitError, "rate_limit_error"),
        (Failure(529, "busy", {"retry-after": "3"}), anthropic.OverloadedError, "overloaded_error"),
        (Failure(503, "down"), anthropic.OverloadedError, "overloaded_error"),
        (
            Failure(
                400, "This model's maximum context length is 100 tokens. However, your messages resulted in 900 tokens."
            ),
            anthropic.BadRequestError,
            "invalid_request_error",
        ),
    ],
)
@pytest.mark.parametrize("stream", [True, False])
async def test_a_boosted_request_refused_before_any_output_gets_the_http_status(
    sqlite_url: str, fakes: Any, failure: Failure, error: type[anthropic.APIStatusError], kind: str, stream: bool
) -> None:
    async with boosted(sqlite_url, fakes) as b:
        assert b.gw.services.gateway is not None
        b.gw.services.gateway.keepalive_s = 0.01  # pings would be due many times over while the planner thinks
        b.planner.enqueue(Reply(text="GUIDANCE:\nCall read_file with path: '/a'", delay_s=0.3))
        b.executor.enqueue(failure)
        with pytest.raises(error) as raised:
            await b.ask(stream=stream)
        row = (await b.gw.usage())[0]
    assert raised.value.status_code == (529 if failure.status == 503 else failure.status)
    assert raised.value.body["error"]["type"] == kind  # type: ignore[index]
    if "retry-after" in failure.headers:
        assert raised.value.response.headers["retry-after"] == failure.headers["retry-after"]
    if failure.status == 400:
        assert raised.value.body["error"]["message"] == "prompt is too long: 900 tokens > 100 maximum"  # type: ignore[index]
    assert (row.status, row.error_type) == (raised.value.status_code, kind)


async def test_after_the_hold_a_refusal_can_only_be_an_error_event(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        assert b.gw.services.gateway is not None
        b.gw.services.gateway.hold_s, b.gw.services.gateway.keepalive_s = 0.05, 0.05
        b.planner.enqueue(Reply(text="GUIDANCE:\nCall read_file with path: '/a'", delay_s=0.4))
        b.executor.enqueue(Failure(429, "slow down", {"retry-after": "7"}))
        body = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 100,
            "stream": True,
            "tools": [READ_FILE],
            "messages": [{"role": "user", "content": "go"}],
        }
        headers = {"x-api-key": b.gw.key, "anthropic-version": "2023-06-01"}
        async with b.gw.http.stream("POST", "/v1/messages", json=body, headers=headers) as response:
            assert response.status_code == 200
            lines = [line async for line in response.aiter_lines() if line.startswith("event: ")]
    assert lines[0] == "event: message_start" and "event: ping" in lines and lines[-1] == "event: error"


@pytest.mark.parametrize("stream", [True, False])
async def test_tool_choice_none_on_a_boosted_tier_runs_no_planner_and_lets_no_call_out(
    sqlite_url: str, fakes: Any, stream: bool
) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.executor.enqueue(Reply(text="Answering without tools.", tool_calls=[("c1", "read_file", {"path": "/a"})]))
        kwargs: dict[str, Any] = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "what is in /a?"}],
            "tools": [READ_FILE],
            "tool_choice": {"type": "none"},
        }
        if stream:
            async with b.gw.client.messages.stream(**kwargs) as events:
                message = await events.get_final_message()
        else:
            message = await b.gw.client.messages.create(**kwargs)
        row = (await b.gw.usage())[0]
    assert b.planner.requests == [] and row.boost_loops == 0
    assert [block.type for block in message.content] == ["text"] and message.stop_reason == "end_turn"
    assert b.executor.requests[0]["body"]["tool_choice"] == "none"


async def test_a_summary_streams_to_the_client_as_the_planner_writes_it(sqlite_url: str, fakes: Any) -> None:
    hold = threading.Event()
    words = "Paris is the capital of France and has been for a very long time."
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "stream": True,
        "messages": [{"role": "user", "content": "capital of France?"}],
        "tools": [READ_FILE],
    }

    def seen(chunk: bytes) -> None:
        if b"text_delta" in chunk:
            hold.set()  # the planner goes on only once the client has its first words

    async with boosted(sqlite_url, fakes) as b:
        planner_reply = Reply(text=f"SUMMARY:\n{words}", hold=hold, hold_after=4)
        b.planner.enqueue(planner_reply)
        status, raw = await asgi_stream(b.gw, body, seen)
    assert status == 200 and planner_reply.released == [True]
    events = sse(raw.decode())
    assert "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta").strip() == words


# --- Plan reuse: a turn's plan for its tool round trips (Claude Code's own request shapes) ---------

READ_PLAN = "ANALYSIS:\nThe user wants notes.txt.\n\nGUIDANCE:\n1. Call Read with file_path: /tmp/gw-cc/work/notes.txt"
CALLS_CC_READ = Reply(text="Reading.", tool_calls=[("toolu_0001", "Read", {"file_path": "/tmp/gw-cc/work/notes.txt"})])


async def _claude_code_turn(b: Boost, *, stream: bool, continuation: dict[str, Any] | None = None) -> list[Any]:
    headers, first = claude_code_request("main_first", model="claude-sonnet-4-6", stream=stream)
    _, later = claude_code_request("main_continuation", model="claude-sonnet-4-6", stream=stream)
    answers = []
    for body in (first, continuation or later):
        response = await send_raw(b.gw, headers, body)
        assert response.status_code == 200, response.text
        answers.append(response)
    return answers


@pytest.mark.parametrize("stream", [True, False])
async def test_a_continuation_of_the_turn_reuses_its_plan_without_the_planner(
    sqlite_url: str, fakes: Any, stream: bool
) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text=READ_PLAN))
        b.executor.enqueue(CALLS_CC_READ, Reply(text="The file says: the answer is 42."))
        await _claude_code_turn(b, stream=stream)
        rows = await b.gw.usage()
    assert len(b.planner.requests) == 1 and len(b.executor.requests) == 2
    assert "GUIDANCE:\n1. Call Read with file_path: /tmp/gw-cc/work/notes.txt" in b.executor_systems()[1]
    assert [(r.boost_outcome, r.boost_loops) for r in reversed(rows)] == [("guided", 1), ("reused", 0)]
    assert rows[0].planner_input_tokens == 0


async def test_a_tool_error_in_the_continuation_asks_the_planner_again(sqlite_url: str, fakes: Any) -> None:
    _, later = claude_code_request("main_continuation", model="claude-sonnet-4-6", stream=True)
    result = later["messages"][-1]["content"][0]
    later["messages"][-1] = {**later["messages"][-1], "content": [{**result, "is_error": True, "content": "EACCES"}]}
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text=READ_PLAN), Reply(text="SUMMARY:\nThe file cannot be read: permission denied."))
        b.executor.enqueue(CALLS_CC_READ)
        await _claude_code_turn(b, stream=True, continuation=later)
    assert len(b.planner.requests) == 2 and len(b.executor.requests) == 1
    assert "EACCES" in b.planner_prompts()[1]


async def test_plans_are_not_shared_between_users(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text=READ_PLAN), Reply(text="SUMMARY:\nThe answer is 42."))
        b.executor.enqueue(CALLS_CC_READ)
        headers, first = claude_code_request("main_first", model="claude-sonnet-4-6")
        _, later = claude_code_request("main_continuation", model="claude-sonnet-4-6")
        await send_raw(b.gw, headers, first)
        other = await make_user(b.gw.services)
        response = await b.gw.http.post("/v1/messages", json=later, headers={**headers, "x-api-key": other.api_key})
        assert response.status_code == 200
    assert len(b.planner.requests) == 2


async def test_with_plan_reuse_off_every_request_is_planned(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes, boost_plan_reuse=False) as b:
        b.planner.enqueue(Reply(text=READ_PLAN), Reply(text="SUMMARY:\nThe file says: the answer is 42."))
        b.executor.enqueue(CALLS_CC_READ)
        await _claude_code_turn(b, stream=True)
    assert len(b.planner.requests) == 2 and len(b.executor.requests) == 1


async def test_planner_tokens_are_billed_with_the_executors(sqlite_url: str, fakes: Any) -> None:
    async with boosted(sqlite_url, fakes, gateway_credits_per_1k_tokens=1) as b:
        b.planner.enqueue(Reply(text="GUIDANCE:\nCall read_file.", prompt_tokens=2000, completion_tokens=500))
        b.executor.enqueue(
            Reply(tool_calls=[("c", "read_file", {"path": "/a"})], prompt_tokens=300, completion_tokens=20)
        )
        before = await b.gw.services.credits.balance(user_id=b.gw.user_id)
        await b.ask(stream=True)
        row = (await b.gw.usage())[0]
        after = await b.gw.services.credits.balance(user_id=b.gw.user_id)
    assert before - after == row.credits == 3  # 2,820 tokens at 1 credit per 1,000, rounded up (the executor alone: 1)


async def test_a_structured_output_request_is_answered_by_the_model_given_the_schema(
    sqlite_url: str, fakes: Any
) -> None:
    headers, body = claude_code_request("title", model="claude-sonnet-4-6", stream=True)
    async with boosted(sqlite_url, fakes) as b:
        b.executor.enqueue(Reply(text='{"title": "Read the notes file"}'))
        response = await send_raw(b.gw, headers, body)
    assert response.status_code == 200 and b.planner.requests == []
    assert b.executor.requests[0]["body"]["response_format"]["type"] == "json_schema"


@pytest.mark.parametrize("stream", [True, False])
async def test_a_summary_cut_by_the_planners_token_limit_says_so(sqlite_url: str, fakes: Any, stream: bool) -> None:
    async with boosted(sqlite_url, fakes) as b:
        b.planner.enqueue(Reply(text="SUMMARY:\nThe first part of a long answer", finish_reason="length"))
        message = await b.ask("explain everything", stream=stream)
    assert message.content[0].text.strip() == "The first part of a long answer"  # type: ignore[union-attr]
    assert message.stop_reason == "max_tokens"
