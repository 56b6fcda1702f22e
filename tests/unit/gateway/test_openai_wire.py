"""Anthropic Messages ⇄ OpenAI Chat Completions: requests and non-streaming responses (pure)."""

from typing import Any

import pytest

from almanac.gateway.openai_wire import WireOptions, anthropic_message, anthropic_usage, openai_request


def body(**extra: Any) -> dict[str, Any]:
    return {"model": "claude-x", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}], **extra}


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, None),
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "t"}, {"type": "function", "function": {"name": "t"}}),
    ],
)
def test_tool_choice(choice: dict[str, Any], expected: object) -> None:
    tools = [{"name": "t", "input_schema": {"type": "object"}}]
    params = openai_request(body(tools=tools, tool_choice=choice), "m", stream=False)
    assert params.get("tool_choice") == expected


def test_streaming_asks_for_usage_and_drops_top_k() -> None:
    params = openai_request(body(stream=True, top_k=3, temperature=0.5, top_p=0.9), "gpt", stream=True)
    assert params["stream"] is True and params["stream_options"] == {"include_usage": True}
    assert "top_k" not in params and params["temperature"] == 0.5 and params["top_p"] == 0.9


def test_server_tools_without_schema_are_left_out() -> None:
    tools = [{"type": "web_search_20250305", "name": "web_search"}, {"name": "t", "input_schema": {"type": "object"}}]
    assert [t["function"]["name"] for t in openai_request(body(tools=tools), "m", stream=False)["tools"]] == ["t"]


def test_tool_results_come_first_and_error_results_are_marked() -> None:
    messages = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and also"},
                {"type": "tool_result", "tool_use_id": "a", "content": "failed", "is_error": True},
            ],
        },
    ]
    converted = openai_request(body(messages=messages), "m", stream=False)["messages"]
    assert converted[1] == {"role": "tool", "tool_call_id": "a", "content": "[tool error] failed"}
    assert converted[2] == {"role": "user", "content": "and also"}


def test_images_inside_tool_results_follow_as_a_user_message() -> None:
    image = {"type": "image", "source": {"type": "url", "url": "https://x/a.png"}}
    messages = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [image]}]}]
    converted = openai_request(body(messages=messages), "m", stream=False)["messages"]
    assert converted[0]["content"] == "[image]"
    assert converted[1]["content"][1] == {"type": "image_url", "image_url": {"url": "https://x/a.png"}}


def test_thinking_blocks_are_dropped() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "a"}],
        },
    ]
    converted = openai_request(body(messages=messages), "m", stream=False)["messages"]
    assert converted[1] == {"role": "assistant", "content": "a"}


def test_response_with_broken_arguments_is_repaired() -> None:
    completion = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [{"id": "c", "function": {"name": "t", "arguments": "{'a': 1,"}}],
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2},
    }
    message = anthropic_message(completion, "claude-x")
    assert message["content"] == [{"type": "tool_use", "id": "c", "name": "t", "input": {"a": 1}}]
    assert message["stop_reason"] == "tool_use" and message["model"] == "claude-x"


@pytest.mark.parametrize(
    ("finish", "stop"), [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal")]
)
def test_finish_reasons(finish: str, stop: str) -> None:
    message = anthropic_message({"choices": [{"message": {"content": "x"}, "finish_reason": finish}]}, "m")
    assert message["stop_reason"] == stop


def test_cached_prompt_tokens_are_reported_apart() -> None:
    usage = {"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 60}}
    assert anthropic_usage(usage) == {"input_tokens": 40, "output_tokens": 5, "cache_read_input_tokens": 60}


@pytest.mark.parametrize(
    ("extra", "effort"),
    [
        ({"output_config": {"effort": "high"}}, "high"),
        ({"output_config": {"effort": "max"}}, "high"),
        ({"output_config": {"effort": "low"}, "thinking": {"type": "adaptive"}}, "low"),
        ({"thinking": {"type": "enabled", "budget_tokens": 1024}}, "low"),
        ({"thinking": {"type": "enabled", "budget_tokens": 32000}}, "high"),
        ({"thinking": {"type": "adaptive"}}, None),
        ({}, None),
    ],
)
def test_effort_and_thinking_budget_become_reasoning_effort(extra: dict[str, Any], effort: str | None) -> None:
    params = openai_request(body(**extra), "m", stream=False)
    assert params.get("reasoning_effort") == effort
    assert "thinking" not in params and "output_config" not in params


def test_options_cap_max_tokens_omit_parameters_and_keep_stop_sequences_back() -> None:
    params = openai_request(
        body(output_config={"effort": "high"}, stop_sequences=["END"]),
        "m",
        stream=False,
        options=WireOptions(max_tokens=50, omit=frozenset({"reasoning_effort"}), send_stop=False),
    )
    assert params["max_tokens"] == 50 and "reasoning_effort" not in params and "stop" not in params


def test_empty_text_blocks_are_left_out() -> None:
    messages = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {}}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}, {"type": "text", "text": ""}],
        },
    ]
    converted = openai_request(body(messages=messages), "m", stream=False)["messages"]
    assert [m["role"] for m in converted] == ["assistant", "tool"]


def test_an_earlier_web_search_is_written_out_for_the_model() -> None:
    search = [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "python 3.14"}},
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [
                {"type": "web_search_result", "url": "https://python.org", "title": "Python", "encrypted_content": "x"}
            ],
        },
        {"type": "text", "text": "It came out in October."},
    ]
    messages = [{"role": "user", "content": "when?"}, {"role": "assistant", "content": search}]
    assistant = openai_request(body(messages=messages), "m", stream=False)["messages"][1]
    assert "python 3.14" in assistant["content"] and "Python <https://python.org>" in assistant["content"]
    assert assistant["content"].endswith("It came out in October.")


def test_a_non_streamed_reply_with_reasoning_and_a_forbidden_call() -> None:
    completion = {
        "choices": [
            {
                "message": {
                    "content": "ok",
                    "reasoning_content": "why",
                    "tool_calls": [{"id": "c", "function": {"name": "t", "arguments": "{}"}}],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    message = anthropic_message(completion, "claude-x", thinking=True, tools=False)
    assert [b["type"] for b in message["content"]] == ["thinking", "text"] and message["stop_reason"] == "end_turn"
