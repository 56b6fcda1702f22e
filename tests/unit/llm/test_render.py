"""One set of tool definitions rendered five ways (native and text), pure."""

import json

import pytest

from almanac.llm.messages import ToolSpec
from almanac.llm.render import (
    ToolFormat,
    call_as_text,
    concise_manifest,
    parameter_lines,
    qwen_xml_manifest,
    render,
    text_tool_prompt,
    type_label,
    verbose_manifest,
)

SEARCH = ToolSpec(
    "web_search",
    "Search the web for current information.\n\nLonger notes that the concise form leaves out.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Search query", "minLength": 2},
            "max_results": {"type": "integer", "description": "How many results", "default": 5},
            "mode": {"type": "string", "enum": ["fast", "deep"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["query"],
    },
)
READ = ToolSpec(
    "read_file", "Read a file & show it <raw>.", {"type": "object", "properties": {"path": {"type": "string"}}}
)


def test_native_formats_carry_the_schema_unchanged() -> None:
    openai = render([SEARCH], ToolFormat.OPENAI)
    anthropic = render([SEARCH], ToolFormat.ANTHROPIC)
    assert openai == [
        {
            "type": "function",
            "function": {"name": "web_search", "description": SEARCH.description, "parameters": SEARCH.input_schema},
        }
    ]
    assert anthropic == [{"name": "web_search", "description": SEARCH.description, "input_schema": SEARCH.input_schema}]


def test_verbose_manifest_embeds_the_full_json_schema() -> None:
    text = verbose_manifest([SEARCH, READ])
    assert text.startswith("Available tools:")
    assert json.dumps(dict(SEARCH.input_schema)) in text
    assert "Longer notes" in text


@pytest.mark.parametrize(
    ("prop", "label"),
    [
        ({"type": "string"}, "string"),
        ({"type": "array", "items": {"type": "integer"}}, "array of integer"),
        ({"type": ["string", "null"]}, "string or null"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "string or integer"),
        ({"enum": ["a"]}, "enum"),
        ({}, "any"),
    ],
)
def test_type_labels(prop: dict[str, object], label: str) -> None:
    assert type_label(prop) == label


def test_concise_manifest_lists_one_line_per_parameter() -> None:
    assert parameter_lines(SEARCH.input_schema) == [
        "query (string, required): Search query; min length 2",
        "max_results (integer): How many results; default 5",
        'mode (string): one of "fast", "deep"',
        "tags (array of string)",
    ]
    text = concise_manifest([SEARCH])
    assert "**web_search**: Search the web for current information." in text
    assert "Longer notes" not in text


def test_concise_manifest_is_smaller_than_verbose() -> None:
    assert len(concise_manifest([SEARCH, READ])) < len(verbose_manifest([SEARCH, READ]))


def test_qwen_xml_escapes_and_marks_required_parameters() -> None:
    text = qwen_xml_manifest([SEARCH, READ])
    assert text.startswith("<tools>\n") and text.endswith("\n</tools>")
    assert '<parameter name="query" type="string" required="true">Search query; min length 2</parameter>' in text
    assert "Read a file &amp; show it &lt;raw&gt;." in text


def test_empty_tool_lists_say_so() -> None:
    assert verbose_manifest([]) == concise_manifest([]) == "Available tools: none."


@pytest.mark.parametrize(
    ("fmt", "marker"),
    [(ToolFormat.CONCISE, "```tool"), (ToolFormat.VERBOSE, "```tool"), (ToolFormat.QWEN_XML, "<tool_call>")],
)
def test_text_prompt_explains_the_call_syntax_of_its_format(fmt: ToolFormat, marker: str) -> None:
    prompt = text_tool_prompt([SEARCH], fmt)
    assert marker in prompt and "web_search" in prompt
    assert marker in call_as_text("web_search", {"query": "x"}, fmt)


def test_text_prompt_refuses_native_formats() -> None:
    with pytest.raises(ValueError):
        text_tool_prompt([SEARCH], ToolFormat.OPENAI)
