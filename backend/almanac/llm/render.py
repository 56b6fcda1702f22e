"""One tool definition, rendered for each vendor's `tools` parameter (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from almanac.llm.messages import ToolSpec


def anthropic_tools(specs: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """Anthropic Messages API tool definitions."""
    return [
        {"name": spec.name, "description": spec.description, "input_schema": dict(spec.input_schema)} for spec in specs
    ]


def openai_tools(specs: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """OpenAI Chat Completions function-tool definitions."""
    return [
        {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": dict(spec.input_schema),
            },
        }
        for spec in specs
    ]
