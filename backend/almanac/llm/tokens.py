"""Counting tokens before a request is sent, and the context window of known models (pure).

No provider ships a tokenizer that works offline for its current models (Anthropic counts only
through its API; OpenAI's `tiktoken` downloads its tables at run time), so the count is a
conservative estimate shaped like a byte-pair tokenizer: a run of ASCII letters costs one token
per 4 characters (at least one), a run of digits one per 3, every other visible ASCII character one
token, every non-ASCII character one token, and a line break one token. On English prose that is
about one token per 3.5 characters, on code one per 2.9 and on JSON one per 1.6 — more than real
tokenizers count, and never fewer than one token per 4 characters of text.

A `TokenCounter` also learns: when a provider reports that a request used more input tokens than
were estimated, later estimates are scaled up to match (never down).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable

from almanac.llm.messages import Message, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock

DEFAULT_CONTEXT_TOKENS = 32_000
# Context windows of known models, matched by substring of the lower-cased model name, first match
# wins (so more specific names come first).
KNOWN_WINDOWS: tuple[tuple[str, int], ...] = (
    ("almanac-offline", 1_000_000),
    ("claude", 200_000),
    ("gpt-4.1", 1_000_000),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-5", 400_000),
    ("o4-mini", 200_000),
    ("o3", 200_000),
    ("o1", 200_000),
    ("gpt-4", 8_192),
    ("gpt-3.5", 16_385),
    ("llama3.1", 128_000),
    ("llama-3.1", 128_000),
    ("llama3.2", 128_000),
    ("llama-3.2", 128_000),
    ("llama3.3", 128_000),
    ("llama3", 8_192),
    ("llama-3", 8_192),
    ("qwen2.5", 32_768),
    ("qwen3", 32_768),
    ("mistral-nemo", 128_000),
    ("mistral", 32_768),
    ("mixtral", 32_768),
    ("gemma3", 128_000),
    ("gemma2", 8_192),
    ("gemma", 8_192),
    ("phi4", 16_384),
    ("phi3", 4_096),
    ("deepseek", 128_000),
)
# Output limits (most tokens one answer may have) of known models, matched like KNOWN_WINDOWS; a
# model listed there but not here may write up to its whole window.
KNOWN_OUTPUT_LIMITS: tuple[tuple[str, int], ...] = (
    ("almanac-offline", 1_000_000),
    ("claude-3-haiku", 4_096),
    ("claude-3-5", 8_192),
    ("claude-opus-4-0", 32_000),
    ("claude-opus-4-1", 32_000),
    ("claude-opus-4-2", 32_000),
    ("claude", 64_000),
    ("gpt-4.1", 32_768),
    ("gpt-4o", 16_384),
    ("gpt-4-turbo", 4_096),
    ("gpt-5", 128_000),
    ("o4-mini", 100_000),
    ("o3", 100_000),
    ("o1-mini", 65_536),
    ("o1", 100_000),
    ("gpt-4", 8_192),
    ("gpt-3.5", 4_096),
    ("deepseek-chat", 8_192),
    ("deepseek-reasoner", 65_536),
)
MESSAGE_OVERHEAD = 4  # role and separators of one message
BLOCK_OVERHEAD = 3  # a tool call or result block's framing
_PIECES = re.compile(r"[A-Za-z]+|[0-9]+|\n+|[ \t]+|.", re.DOTALL)


def context_window(model: str) -> int:
    """The context window (tokens) of a model by name: from the table of known models, else a
    conservative default."""
    name = model.lower()
    for fragment, window in KNOWN_WINDOWS:
        if fragment in name:
            return window
    return DEFAULT_CONTEXT_TOKENS


def output_limit(model: str) -> int | None:
    """The most output tokens a known model may write in one answer (its output limit, else its
    context window); None for a model neither table knows."""
    name = model.lower()
    for fragment, limit in KNOWN_OUTPUT_LIMITS:
        if fragment in name:
            return limit
    for fragment, window in KNOWN_WINDOWS:
        if fragment in name:
            return window
    return None


def estimate_tokens(text: str) -> int:
    """The conservative estimate described in the module docstring."""
    total = 0
    for piece in _PIECES.findall(text):
        first = piece[0]
        if first.isascii() and first.isalpha():
            total += math.ceil(len(piece) / 4)
        elif first.isascii() and first.isdigit():
            total += math.ceil(len(piece) / 3)
        elif first == "\n":
            total += 1
        elif first in " \t":
            total += 1 if len(piece) > 1 else 0  # a single space joins the next word's token
        else:
            total += 1
    return total


class TokenCounter:
    """Estimates tokens for one model, scaled up by what its provider reported."""

    def __init__(self, *, scale: float = 1.0, max_scale: float = 4.0) -> None:
        self.scale = scale
        self._max_scale = max_scale

    def count(self, text: str) -> int:
        """Tokens of `text`."""
        return math.ceil(estimate_tokens(text) * self.scale)

    def count_message(self, message: Message) -> int:
        """Tokens of a message with all its blocks."""
        total = MESSAGE_OVERHEAD
        for block in message.content:
            if isinstance(block, TextBlock):
                total += self.count(block.text)
            elif isinstance(block, ToolUseBlock):
                total += BLOCK_OVERHEAD + self.count(block.name) + self.count(json.dumps(dict(block.input)))
            elif isinstance(block, ToolResultBlock):
                total += BLOCK_OVERHEAD + self.count(block.content)
        return total

    def count_messages(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(message) for message in messages)

    def count_tools(self, tools: Iterable[ToolSpec]) -> int:
        """Tokens the tool definitions take in a request."""
        return sum(
            BLOCK_OVERHEAD
            + self.count(spec.name)
            + self.count(spec.description)
            + self.count(json.dumps(dict(spec.input_schema)))
            for spec in tools
        )

    def cut(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` (at a line or word break where possible) within `max_tokens`."""
        if max_tokens <= 0:
            return ""
        if self.count(text) <= max_tokens:
            return text
        # No piece is cheaper than 5 characters a token, so nothing longer than this can fit.
        low, high = 0, min(len(text), 5 * max_tokens + 8)
        while low < high:  # binary search on the prefix length
            middle = (low + high + 1) // 2
            if self.count(text[:middle]) <= max_tokens:
                low = middle
            else:
                high = middle - 1
        prefix = text[:low]
        for separator in ("\n", " "):
            position = prefix.rfind(separator)
            if position > low * 0.8:
                return prefix[:position]
        return prefix

    def observe(self, *, estimated: int, actual: int) -> None:
        """A provider counted `actual` input tokens where `estimated` were expected: scale future
        estimates up if it counted more (with 5 % to spare)."""
        if estimated > 0 and actual > estimated:
            self.scale = min(self._max_scale, max(self.scale, self.scale * actual / estimated * 1.05))
