"""Registry names for MCP tools: `<server>__<tool>`, valid for every vendor, unique, stable."""

import pytest

from almanac.mcp_client.names import sanitise, tool_name
from almanac.tools.base import TOOL_NAME


@pytest.mark.parametrize(
    ("server", "tool", "expected"),
    [
        ("github", "search_repositories", "github__search_repositories"),
        ("git", "git_log", "git__git_log"),
        ("my.server", "resolve-library-id", "my_server__resolve-library-id"),
        ("docs", "tools/list files", "docs__tools_list_files"),
    ],
)
def test_names_are_prefixed_by_the_server_and_sanitised(server: str, tool: str, expected: str) -> None:
    assert tool_name(server, tool) == expected


def test_long_names_are_cut_to_64_with_a_stable_hash() -> None:
    long_tool = "a_really_long_tool_name_that_goes_on_and_on_and_on_forever_and_ever"
    first = tool_name("server", long_tool)
    assert len(first) == 64 and TOOL_NAME.match(first)
    assert first == tool_name("server", long_tool)
    assert first != tool_name("server", long_tool + "2")


def test_a_taken_name_gets_a_hash_suffix() -> None:
    taken = {"my_server__x"}
    other = tool_name("my.server", "x", taken=taken)
    assert other != "my_server__x" and other.startswith("my_server__x_") and TOOL_NAME.match(other)


@pytest.mark.parametrize("text", ["", "é", "a b", "x" * 100])
def test_sanitised_names_only_use_allowed_characters(text: str) -> None:
    assert TOOL_NAME.match(tool_name(text, text))
    assert sanitise(text)
