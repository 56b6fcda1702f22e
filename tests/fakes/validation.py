"""What the real APIs refuse, checked by the fake servers, so an invalid request fails a test instead
of a user. Each function returns the error message the vendor would send, or None for a valid body.

Anthropic Messages (documented behaviour): `model`, `max_tokens` (a positive integer) and a non-empty
`messages` list are required; roles are `user`/`assistant` and the first message is the user's;
`tool_choice` needs `tools`; a request whose messages contain `tool_use` or `tool_result` blocks must
define `tools`; every `tool_result` answers a `tool_use` of the assistant message just before it,
and every `tool_use` of an assistant message gets its `tool_result` in the next message.

OpenAI Chat Completions: `model` and a non-empty `messages` list are required; roles are
`system`/`developer`/`user`/`assistant`/`tool`; `tool_choice` needs `tools`; a `tool` message must
answer a `tool_calls` ID of the assistant message before it, and every such ID gets its answer before
the next non-tool message.
"""

from __future__ import annotations

from typing import Any


def anthropic_problem(body: dict[str, Any]) -> str | None:
    """Why Anthropic would refuse this Messages request (400 invalid_request_error), or None."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return "max_tokens: Field required (a positive integer)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    tools = body.get("tools") or []
    if body.get("tool_choice") is not None and not tools:
        return "tool_choice may only be specified while providing tools."
    uses_tools = False
    pending: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            return f"messages.{index}.role: Input should be 'user' or 'assistant'"
        if index == 0 and role != "user":
            return 'messages: first message must use the "user" role'
        blocks = message["content"] if isinstance(message.get("content"), list) else []
        answered = {b.get("tool_use_id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"}
        if answered:
            uses_tools = True
            if role != "user":
                return f"messages.{index}: tool_result blocks must be in a user message"
            unknown = answered - pending
            if unknown:
                return f"messages.{index}: unexpected `tool_use_id` found in `tool_result` blocks: {sorted(unknown)[0]}"
        if pending - answered:
            return (
                f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{sorted(pending - answered)[0]}"
            )
        pending = {b.get("id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"}
        if pending:
            uses_tools = True
            if role != "assistant":
                return f"messages.{index}: tool_use blocks must be in an assistant message"
    if uses_tools and not tools:
        return "Requests which include `tool_use` or `tool_result` blocks must define tools."
    return None


def openai_problem(body: dict[str, Any]) -> str | None:
    """Why OpenAI would refuse this Chat Completions request (400), or None."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "[] is too short - 'messages'"
    tools = body.get("tools") or []
    if body.get("tool_choice") is not None and not tools:
        return "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
    pending: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'tool'."
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    f"with 'tool_calls' (messages.[{index}])."
                )
            pending.discard(call_id)
            continue
        if pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {sorted(pending)[0]}"
            )
        if role == "assistant":
            pending = {call.get("id") for call in message.get("tool_calls") or []}
    if pending:
        return f"The following tool_call_ids did not have response messages: {sorted(pending)[0]}"
    return None
