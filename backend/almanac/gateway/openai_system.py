"""System messages after the start of a conversation, for servers that refuse them (pure).

Claude Code 2.1 sends `system` role messages after the user's turn (beta
mid-conversation-system-2026-04-07). OpenAI's API takes them where they stand; many chat templates
of OpenAI-compatible servers refuse any system message that is not the first ("System message
must be at the beginning", "Conversation roles must alternate"). For those the gateway folds them
into the neighbouring user turn, marked as `<system-message>` so the model still tells them apart.
"""

from __future__ import annotations

from typing import Any


def has_mid_system(messages: list[dict[str, Any]]) -> bool:
    """Whether a system message follows a message of another role."""
    seen_other = False
    for message in messages:
        if message["role"] != "system":
            seen_other = True
        elif seen_other:
            return True
    return False


def fold_system_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One leading system message; each later one folded into the user turn beside it: appended to
    the user message before it, else put before the next user message (after any tool results),
    else sent as a user message of its own."""
    lead = 0
    while lead < len(messages) and messages[lead]["role"] == "system":
        lead += 1
    head = [{"role": "system", "content": "\n\n".join(_plain(m) for m in messages[:lead])}] if lead else []
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for message in messages[lead:]:
        if message["role"] == "system":
            note = f"<system-message>\n{_plain(message)}\n</system-message>"
            if out and out[-1]["role"] == "user" and not pending:
                out[-1] = _with_text(out[-1], note, after=True)
            else:
                pending.append(note)
            continue
        if pending and message["role"] == "user":
            message = _with_text(message, "\n\n".join(pending), after=False)
            pending = []
        elif pending and message["role"] == "assistant":
            out.append({"role": "user", "content": "\n\n".join(pending)})
            pending = []
        out.append(message)
    if pending:
        out.append({"role": "user", "content": "\n\n".join(pending)})
    return head + out


def _plain(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", "")) for part in content if part.get("type") == "text")


def _with_text(message: dict[str, Any], text: str, *, after: bool) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, str):
        joined = f"{content}\n\n{text}" if after else f"{text}\n\n{content}"
        return {**message, "content": joined if content else text}
    part = {"type": "text", "text": text}
    return {**message, "content": [*content, part] if after else [part, *content]}
