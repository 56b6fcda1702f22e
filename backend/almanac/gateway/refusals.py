"""What an upstream's refusal means, read from its wording (pure).

OpenAI-compatible servers refuse in their own words; the gateway reads them to adapt and retry
(a smaller `max_tokens`, system messages folded into the user turn, a parameter left out) or to
answer the way Anthropic's API would, so a client can act on it:

- the prompt does not fit the context window → 400 invalid_request_error
  `prompt is too long: N tokens > M maximum` (the wording Claude Code compacts on), with the
  numbers the upstream gave, else counted;
- the prompt fits but prompt + `max_tokens` does not (vLLM, OpenAI) → retry with the room left;
- `max_tokens` above the model's own limit (OpenAI's "supports at most N completion tokens") →
  retry with that limit, remembered for the model;
- system messages after the first message refused (chat templates: "System message must be at
  the beginning", "Conversation roles must alternate", "System role not supported") → fold them
  into the user turn, remembered for the model;
- a parameter the model does not take ("Unsupported parameter: 'reasoning_effort'") → leave it out,
  remembered for the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from almanac.gateway.errors import GatewayError


@dataclass(frozen=True)
class ContextRefusal:
    """The upstream said the request does not fit its context window; the numbers it gave."""

    limit: int | None = None  # the context window
    prompt: int | None = None  # the prompt's tokens
    completion: int | None = None  # the max_tokens asked for

    @property
    def prompt_fits(self) -> bool:
        """The prompt alone fits: a smaller max_tokens would do."""
        return self.limit is not None and self.prompt is not None and self.prompt < self.limit

    def room(self) -> int | None:
        """The max_tokens that fits beside the prompt."""
        return self.limit - self.prompt if self.limit is not None and self.prompt is not None else None


_NUMBER = r"(\d[\d,]*)"
_LIMIT = re.compile(rf"maximum context length is {_NUMBER}", re.I)
_REQUESTED = re.compile(rf"requested {_NUMBER} tokens \({_NUMBER} (?:in|of) the messages?,? {_NUMBER}", re.I)
_RESULTED = re.compile(rf"messages resulted in {_NUMBER} tokens", re.I)
_INPUT_TOKENS = re.compile(rf"request has {_NUMBER} input tokens", re.I)
_TOO_LARGE = re.compile(
    rf"(?:max_tokens|max_completion_tokens)'? (?:or '?max_completion_tokens'? )?is too large: {_NUMBER}", re.I
)
_ANTHROPIC_TOO_LONG = re.compile(rf"prompt is too long[^0-9]*{_NUMBER}\s*tokens?\s*>\s*{_NUMBER}", re.I)
_CONTEXT_WORDS = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|exceeds? (?:the )?(?:available )?context|context size"
    r"|prompt is too long|too many (?:input )?tokens|input is too long|exceed_context_size",
    re.I,
)
_OUTPUT_LIMIT = re.compile(rf"supports at most {_NUMBER} completion tokens", re.I)
_MID_SYSTEM = re.compile(
    r"system (?:message|prompt|role)s? (?:must|should|can only|may only|is only|are only)"
    r"|system (?:message|role|prompt)s? (?:is |are )?not (?:supported|allowed|permitted)"
    r"|only (?:one |a single )?system message|roles must alternate|unexpected role.{0,20}system",
    re.I,
)


def _int(text: str | None) -> int | None:
    return int(text.replace(",", "")) if text else None


def context_refusal(message: str, fields: dict[str, Any] | None = None) -> ContextRefusal | None:
    """The context-window refusal `message` (and the error object's `fields`) describes, or None."""
    fields = fields or {}
    if not (_CONTEXT_WORDS.search(message) or _TOO_LARGE.search(message) or "n_ctx" in fields):
        return None
    if (anthropic := _ANTHROPIC_TOO_LONG.search(message)) is not None:
        return ContextRefusal(limit=_int(anthropic.group(2)), prompt=_int(anthropic.group(1)))
    limit = _int(match.group(1)) if (match := _LIMIT.search(message)) else None
    prompt = completion = None
    if (requested := _REQUESTED.search(message)) is not None:
        prompt, completion = _int(requested.group(2)), _int(requested.group(3))
    elif (resulted := _RESULTED.search(message)) is not None:
        prompt = _int(resulted.group(1))
    elif (inputs := _INPUT_TOKENS.search(message)) is not None:
        prompt = _int(inputs.group(1))
    if (too_large := _TOO_LARGE.search(message)) is not None:
        completion = _int(too_large.group(1))
    # llama.cpp: {"type": "exceed_context_size_error", "n_prompt_tokens": …, "n_ctx": …}
    if isinstance(fields.get("n_ctx"), int):
        limit = fields["n_ctx"]
    if isinstance(fields.get("n_prompt_tokens"), int):
        prompt = fields["n_prompt_tokens"]
    return ContextRefusal(limit=limit, prompt=prompt, completion=completion)


def output_limit(message: str) -> int | None:
    """The model's own output limit, when a refusal of `max_tokens` states it."""
    match = _OUTPUT_LIMIT.search(message)
    return _int(match.group(1)) if match else None


def refuses_mid_system(message: str) -> bool:
    """Whether a refusal is about system messages that do not lead the conversation."""
    return bool(_MID_SYSTEM.search(message))


def refuses_parameter(message: str, name: str) -> bool:
    """Whether a refusal names `name` as a parameter the model does not take."""
    if name.lower() not in message.lower():
        return False
    return bool(
        re.search(
            r"unsupported (?:parameter|value)|unrecognized (?:request )?argument|not supported|unknown (?:field|param)"
            r"|extra (?:fields|inputs) not permitted|not allowed|unexpected",
            message,
            re.I,
        )
    )


def prompt_too_long(prompt: int, limit: int) -> GatewayError:
    """Anthropic's own refusal of a prompt that does not fit (clients such as Claude Code compact
    their conversation on this wording). The prompt is reported above the limit even when a count
    is an estimate that came out lower."""
    return GatewayError(400, f"prompt is too long: {max(prompt, limit + 1)} tokens > {limit} maximum")
