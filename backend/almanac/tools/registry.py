"""The set of tools a chat can use, by name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from almanac.llm.messages import ToolSpec
from almanac.tools.base import TOOL_NAME, Tool


class ToolRegistrationError(ValueError):
    """A tool cannot be registered (bad name, bad schema, or a duplicate)."""


class ToolRegistry:
    """Tools by name, in registration order."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add a tool; its name must be valid for every vendor and unique, its schema valid."""
        if not TOOL_NAME.match(tool.name):
            raise ToolRegistrationError(f"tool name {tool.name!r} must match {TOOL_NAME.pattern}")
        if tool.name in self._tools:
            raise ToolRegistrationError(f"tool {tool.name!r} is already registered")
        if tool.input_schema.get("type") != "object":
            raise ToolRegistrationError(f"tool {tool.name!r}: input_schema must have type 'object'")
        try:
            Draft202012Validator.check_schema(tool.input_schema)
        except SchemaError as exc:
            raise ToolRegistrationError(f"tool {tool.name!r}: invalid input_schema: {exc.message}") from exc
        self._tools[tool.name] = tool

    def unregister(self, name: str) -> None:
        """Remove a tool if present."""
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools as models see them."""
        return tuple(
            ToolSpec(name=tool.name, description=tool.description, input_schema=tool.input_schema)
            for tool in self._tools.values()
        )
