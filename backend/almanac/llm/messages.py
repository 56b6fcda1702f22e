"""Vendor-neutral conversation values sent to and received from models."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class TextBlock:
    text: str


@dataclass(frozen=True)
class ToolUseBlock:
    """The model asks for a tool call. `parse_error` is set when its arguments were not valid JSON."""

    id: str
    name: str
    input: Mapping[str, Any]
    parse_error: str | None = None


@dataclass(frozen=True)
class ToolResultBlock:
    tool_use_id: str
    content: str
    is_error: bool = False


Block = TextBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True)
class Message:
    role: Literal["user", "assistant"]
    content: tuple[Block, ...]

    @staticmethod
    def user(text: str) -> Message:
        return Message("user", (TextBlock(text),))

    @staticmethod
    def assistant(text: str) -> Message:
        return Message("assistant", (TextBlock(text),))

    @property
    def text(self) -> str:
        """The concatenated text blocks."""
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a model sees it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class ModelRequest:
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 4096
    tool_choice: Literal["auto", "none"] = "auto"
    purpose: Literal["chat", "summary", "utility"] = "chat"


@dataclass(frozen=True)
class Usage:
    """Tokens a model call used. `estimated`: the server reported none (or not all) of them, so
    they were counted here (`llm/usage.py`); a sum is estimated when any of its parts is."""

    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.estimated or other.estimated,
        )


@dataclass(frozen=True)
class ModelResponse:
    content: tuple[Block, ...]
    stop_reason: str = "end_turn"
    usage: Usage = field(default_factory=Usage)

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))

    @property
    def tool_calls(self) -> tuple[ToolUseBlock, ...]:
        return tuple(block for block in self.content if isinstance(block, ToolUseBlock))
