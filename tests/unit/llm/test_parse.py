"""Finding and repairing tool calls written as text (pure, table-driven)."""

import pytest

from almanac.llm.parse import CallSpotter, ParsedCall, call_from_json, parse_reply, repair_json, resolve_name

TOOLS = {"web_search", "read_file", "retrieve_full_context"}


@pytest.mark.parametrize(
    ("text", "calls", "prose"),
    [
        (
            'Let me look.\n```tool\n{"name": "web_search", "arguments": {"query": "asyncio"}}\n```',
            [ParsedCall("web_search", {"query": "asyncio"})],
            "Let me look.",
        ),
        (
            '<tool_call>\n{"name": "read_file", "arguments": {"path": "/a"}}\n</tool_call>',
            [ParsedCall("read_file", {"path": "/a"})],
            "",
        ),
        (
            "<tool_call>\n<function=read_file>\n<parameter=path>\n/etc/hosts\n</parameter>\n</function>\n</tool_call>",
            [ParsedCall("read_file", {"path": "/etc/hosts"})],
            "",
        ),
        ('{"name": "web_search", "arguments": {"query": "x"}}', [ParsedCall("web_search", {"query": "x"})], ""),
        (
            'Sure:\n{"tool": "web_search", "parameters": {"query": "y"}}\nthen I imagine the result',
            [ParsedCall("web_search", {"query": "y"})],
            "Sure:",
        ),
        (
            '```json\n{"function": {"name": "web_search", "arguments": "{\\"query\\": \\"z\\"}"}}\n```',
            [ParsedCall("web_search", {"query": "z"})],
            "",
        ),
        (
            "```tool\n{'name': 'web-search', 'arguments': {'query': 'trailing',},}\n```",
            [ParsedCall("web_search", {"query": "trailing"})],
            "",
        ),
        (
            '```tool\n{"name": "Read_File", "arguments": {"path": "/b"\n```',
            [ParsedCall("read_file", {"path": "/b"})],
            "",
        ),
        (
            '<tool_call>{"name": "web_search", "arguments": {"query": "a"}}</tool_call>\n'
            '<tool_call>{"name": "read_file", "arguments": {"path": "b"}}</tool_call>',
            [ParsedCall("web_search", {"query": "a"}), ParsedCall("read_file", {"path": "b"})],
            "",
        ),
    ],
    ids=[
        "fenced",
        "xml",
        "qwen-function-xml",
        "bare-json",
        "bare-json-aliases-and-imagined-result-dropped",
        "openai-function-with-string-arguments",
        "single-quotes-trailing-commas-kebab-name",
        "unclosed-braces-and-fence-case-insensitive-name",
        "several-calls",
    ],
)
def test_calls_are_found_and_repaired(text: str, calls: list[ParsedCall], prose: str) -> None:
    reply = parse_reply(text, TOOLS)
    assert list(reply.calls) == calls
    assert reply.text == prose


@pytest.mark.parametrize(
    "text",
    [
        "No tools needed: the answer is 42.",
        'Here is some JSON:\n```json\n{"name": "Alice", "age": 3}\n```',
        '```python\nprint({"name": "web_search"})\n```',
        'Config example:\n{"name": "not_a_tool", "arguments": {}}',
    ],
    ids=["prose", "json-that-is-data", "code-block", "unknown-name-in-bare-json"],
)
def test_prose_and_data_are_not_calls(text: str) -> None:
    reply = parse_reply(text, TOOLS)
    assert reply.calls == ()
    assert reply.text == text


@pytest.mark.parametrize(
    ("raw", "name", "error"),
    [
        ('{"arguments": {"q": 1}}', "unnamed_tool_call", 'no "name"'),
        ('{"name": "web_search", "arguments": [1, 2]}', "web_search", "must be a JSON object"),
        ('{"name": "web_search", "arguments": {"query": @@@}}', "web_search", "not valid JSON"),
        ("[1, 2]", "unnamed_tool_call", "must be a JSON object"),
    ],
)
def test_calls_that_cannot_be_understood_carry_a_clear_error(raw: str, name: str, error: str) -> None:
    call = call_from_json(raw, TOOLS)
    assert call.name == name
    assert call.error is not None and error in call.error


def test_a_tool_fence_with_garbage_is_an_error_call_not_prose() -> None:
    reply = parse_reply("```tool\nweb_search please\n```", TOOLS)
    assert len(reply.calls) == 1 and reply.calls[0].error is not None


@pytest.mark.parametrize(
    ("raw", "fixed"),
    [
        ('{"a": 1,}', '{"a": 1}'),
        ("{'a': 'it\\'s'}", '{"a": "it\'s"}'),
        ('{"a": [1, 2,], }', '{"a": [1, 2] }'),
        ('{"a": True, "b": None}', '{"a": true, "b": null}'),
        ('{a: 1, b_c: "x"}', '{"a": 1, "b_c": "x"}'),
        ('{"a": {"b": [1', '{"a": {"b": [1]}}'),
        ('{"a": "unclosed', '{"a": "unclosed"}'),
    ],
)
def test_repair_json(raw: str, fixed: str) -> None:
    assert repair_json(raw) == fixed


@pytest.mark.parametrize(
    ("name", "resolved"),
    [
        ("web_search", "web_search"),
        ("web-search", "web_search"),
        ("WEB_SEARCH", "web_search"),
        ("functions.read_file", "read_file"),
        ("retrieve-full-context", "retrieve_full_context"),
        ("unknown", "unknown"),
    ],
)
def test_names_resolve_to_known_tools(name: str, resolved: str) -> None:
    assert resolve_name(name, TOOLS) == resolved


def test_kebab_tool_names_match_snake_case_calls() -> None:
    assert resolve_name("resolve_library_id", {"resolve-library-id"}) == "resolve-library-id"


def stream(spotter: CallSpotter, pieces: list[str]) -> str:
    return "".join(spotter.feed(piece) for piece in pieces)


def test_spotter_streams_prose_and_holds_back_calls() -> None:
    spotter = CallSpotter(TOOLS)
    pieces = ["I'll search", " now.\n`", "``to", 'ol\n{"name": "web_search", ', '"arguments": {"query": "q"}}\n```']
    shown = stream(spotter, pieces)
    assert shown == "I'll search now.\n"
    reply = spotter.finish()
    assert reply.calls == (ParsedCall("web_search", {"query": "q"}),)


def test_spotter_releases_everything_when_there_is_no_call() -> None:
    spotter = CallSpotter(TOOLS)
    shown = stream(spotter, ["The answer ", "is 42.\n", "  ", "Done."])
    assert shown + spotter.finish().text == "The answer is 42.\n  Done."


def test_spotter_catches_a_bare_json_call_split_across_pieces() -> None:
    spotter = CallSpotter(TOOLS)
    shown = stream(spotter, ["Checking.\n", "  ", '{"name": "read_file", "arguments": {"path": "x"}}'])
    assert shown == "Checking.\n"
    assert spotter.finish().calls == (ParsedCall("read_file", {"path": "x"}),)


def test_spotter_gives_back_code_blocks_that_are_not_calls() -> None:
    spotter = CallSpotter(TOOLS)
    text = "Example:\n```python\nx = {'a': 1}\n```\nThat's all."
    shown = stream(spotter, [text[i : i + 5] for i in range(0, len(text), 5)])
    assert shown + spotter.finish().text == text
