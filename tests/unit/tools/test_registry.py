"""The registry holds tools by name and renders one definition for every vendor."""

from collections.abc import Mapping
from typing import Any

import pytest

from almanac.billing.pricing import BillingCategory
from almanac.llm.render import anthropic_tools, openai_tools
from almanac.tools.base import ToolContext, ToolOutput
from almanac.tools.registry import ToolRegistrationError, ToolRegistry


class Echo:
    description = "Echo the text back."
    input_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }
    output_schema = None
    billing = BillingCategory.TOOL
    source = "test"

    def __init__(self, name: str = "echo", schema: Mapping[str, Any] | None = None) -> None:
        self.name = name
        if schema is not None:
            self.input_schema = schema

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        return ToolOutput(str(arguments["text"]))


def test_tools_are_kept_in_registration_order() -> None:
    registry = ToolRegistry([Echo("b_tool"), Echo("a-tool")])
    assert registry.names == ["b_tool", "a-tool"]
    assert "a-tool" in registry and registry.get("missing") is None
    assert [spec.name for spec in registry.specs()] == ["b_tool", "a-tool"]


@pytest.mark.parametrize("name", ["", "has space", "dot.name", "x" * 65, "slash/name", "ünicode"])
def test_names_must_be_valid_for_every_vendor(name: str) -> None:
    with pytest.raises(ToolRegistrationError):
        ToolRegistry([Echo(name)])


def test_duplicates_and_bad_schemas_are_refused() -> None:
    registry = ToolRegistry([Echo()])
    with pytest.raises(ToolRegistrationError, match="already registered"):
        registry.register(Echo())
    with pytest.raises(ToolRegistrationError, match="type 'object'"):
        registry.register(Echo("other", {"type": "string"}))
    with pytest.raises(ToolRegistrationError, match="invalid input_schema"):
        registry.register(Echo("third", {"type": "object", "properties": {"x": {"type": "no-such-type"}}}))


def test_one_definition_renders_for_anthropic_and_openai() -> None:
    specs = ToolRegistry([Echo()]).specs()
    assert anthropic_tools(specs) == [
        {"name": "echo", "description": "Echo the text back.", "input_schema": dict(Echo.input_schema)}
    ]
    assert openai_tools(specs) == [
        {
            "type": "function",
            "function": {"name": "echo", "description": "Echo the text back.", "parameters": dict(Echo.input_schema)},
        }
    ]
