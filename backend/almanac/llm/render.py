"""One set of tool definitions (`ToolSpec`), rendered for every way a model can be told about tools
(pure).

- `openai_tools` / `anthropic_tools`: the vendors' native `tools` parameters.
- `verbose_manifest`: every tool with its full JSON Schema, as text (what prompt-based tool use
  usually sends; the reference the concise manifest is measured against).
- `concise_manifest`: one line per tool and one per parameter (type, required, description,
  default, allowed values) — the text manifest models without native tool calling get by default.
- `qwen_xml_manifest`: the same facts as XML inside `<tools>`, for models trained on that style.

`text_tool_prompt` adds the instructions that go with a text manifest: how to write a call so that
`almanac.llm.parse` finds it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from almanac.llm.messages import ToolSpec


class ToolFormat(StrEnum):
    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    VERBOSE = "verbose"
    CONCISE = "concise"
    QWEN_XML = "qwen_xml"


TEXT_FORMATS = (ToolFormat.VERBOSE, ToolFormat.CONCISE, ToolFormat.QWEN_XML)


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


def verbose_manifest(specs: Sequence[ToolSpec]) -> str:
    """Each tool's name, description and complete input schema as JSON."""
    if not specs:
        return "Available tools: none."
    entries = [
        f"{spec.name}: {spec.description.strip()}\n"
        f"Input schema: {json.dumps(dict(spec.input_schema), ensure_ascii=False)}"
        for spec in specs
    ]
    return "Available tools:\n\n" + "\n\n".join(entries)


def concise_manifest(specs: Sequence[ToolSpec]) -> str:
    """Each tool as `**name**: description` and one indented line per parameter."""
    if not specs:
        return "Available tools: none."
    entries = []
    for spec in specs:
        lines = [f"**{spec.name}**: {_one_paragraph(spec.description)}"]
        lines += [f"  {line}" for line in parameter_lines(spec.input_schema)]
        entries.append("\n".join(lines))
    return "Available tools:\n\n" + "\n\n".join(entries)


def qwen_xml_manifest(specs: Sequence[ToolSpec]) -> str:
    """The tools as `<tools><tool name=…><description/><parameters/></tool></tools>`."""
    entries = []
    for spec in specs:
        params = []
        for name, prop, required in _properties(spec.input_schema):
            attributes = f"name={quoteattr(name)} type={quoteattr(type_label(prop))}"
            if required:
                attributes += ' required="true"'
            params.append(f"    <parameter {attributes}>{escape(_param_details(prop))}</parameter>")
        body = "\n".join(params)
        entries.append(
            f"<tool name={quoteattr(spec.name)}>\n"
            f"  <description>{escape(_one_paragraph(spec.description))}</description>\n"
            f"  <parameters>\n{body}\n  </parameters>\n</tool>"
            if params
            else f"<tool name={quoteattr(spec.name)}>\n"
            f"  <description>{escape(_one_paragraph(spec.description))}</description>\n</tool>"
        )
    return "<tools>\n" + "\n".join(entries) + "\n</tools>"


def render(specs: Sequence[ToolSpec], fmt: ToolFormat) -> list[dict[str, Any]] | str:
    """The tools in `fmt`: a list for the native formats, text for the others."""
    if fmt is ToolFormat.OPENAI:
        return openai_tools(specs)
    if fmt is ToolFormat.ANTHROPIC:
        return anthropic_tools(specs)
    if fmt is ToolFormat.VERBOSE:
        return verbose_manifest(specs)
    if fmt is ToolFormat.QWEN_XML:
        return qwen_xml_manifest(specs)
    return concise_manifest(specs)


_FENCED_CALL = (
    "To call a tool, write a fenced block tagged `tool` holding one JSON object, one block per call:\n"
    "```tool\n"
    '{"name": "<tool name>", "arguments": {"<parameter>": <value>}}\n'
    "```\n"
)
_XML_CALL = (
    "To call a tool, write its call as JSON inside <tool_call></tool_call> tags, one pair per call:\n"
    "<tool_call>\n"
    '{"name": "<tool name>", "arguments": {"<parameter>": <value>}}\n'
    "</tool_call>\n"
)
_AFTER_CALLS = (
    "You may make several calls in one answer. After your calls, stop and wait: the results come "
    "back in the next message. Never write a tool's result yourself. When you need no tool, answer "
    "normally without any call block."
)


def text_tool_prompt(specs: Sequence[ToolSpec], fmt: ToolFormat = ToolFormat.CONCISE) -> str:
    """A system-prompt section for a model without native tool calling: the manifest in `fmt`
    (a text format) and how to write calls that `almanac.llm.parse` recognises."""
    if fmt not in TEXT_FORMATS:
        raise ValueError(f"{fmt} is not a text format")
    manifest = render(specs, fmt)
    assert isinstance(manifest, str)
    how = _XML_CALL if fmt is ToolFormat.QWEN_XML else _FENCED_CALL
    return f"# Tools\n\n{manifest}\n\n{how}{_AFTER_CALLS}"


def call_as_text(name: str, arguments: Mapping[str, Any], fmt: ToolFormat = ToolFormat.CONCISE) -> str:
    """An earlier call written the way `text_tool_prompt` asks the model to write calls."""
    payload = json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False)
    if fmt is ToolFormat.QWEN_XML:
        return f"<tool_call>\n{payload}\n</tool_call>"
    return f"```tool\n{payload}\n```"


def parameter_lines(schema: Mapping[str, Any]) -> list[str]:
    """One human-readable line per top-level parameter: `name (type, required): details`."""
    lines = []
    for name, prop, required in _properties(schema):
        label = type_label(prop) + (", required" if required else "")
        details = _param_details(prop)
        lines.append(f"{name} ({label})" + (f": {details}" if details else ""))
    return lines


def type_label(prop: Mapping[str, Any]) -> str:
    """A short type name: `string`, `integer`, `array of string`, `string or null`, `object`…"""
    kind = prop.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array":
        items = prop.get("items")
        return f"array of {type_label(items)}" if isinstance(items, Mapping) and items.get("type") else "array"
    if kind is None:
        for key in ("anyOf", "oneOf"):
            options = prop.get(key)
            if isinstance(options, list) and options:
                return " or ".join(type_label(o) for o in options if isinstance(o, Mapping))
        if "enum" in prop:
            return "enum"
        return "any"
    return str(kind)


def _properties(schema: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], bool]]:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    return [(name, prop if isinstance(prop, Mapping) else {}, name in required) for name, prop in props.items()]


def _param_details(prop: Mapping[str, Any]) -> str:
    parts = []
    if prop.get("description"):
        parts.append(_one_paragraph(str(prop["description"])).rstrip("."))
    if isinstance(prop.get("enum"), list):
        parts.append("one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in prop["enum"]))
    if "default" in prop:
        parts.append(f"default {json.dumps(prop['default'], ensure_ascii=False)}")
    for key, word in (("minimum", "min"), ("maximum", "max"), ("minLength", "min length"), ("maxLength", "max length")):
        if key in prop:
            parts.append(f"{word} {prop[key]}")
    return "; ".join(parts)


def _one_paragraph(text: str) -> str:
    """The first paragraph of a description, on one line."""
    first = text.strip().split("\n\n", 1)[0]
    return " ".join(first.split())
