"""What the model reads from an MCP tool result: text, resources with their URI, binaries
described (never dumped), structured content as JSON when there is no text, errors kept errors."""

import base64
import json

import pytest
from mcp import types

from almanac.mcp_client.results import EMPTY, authorization_problem, to_output


def result(*content: types.ContentBlock, structured: object = None, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), structured_content=structured, is_error=is_error)


def test_text_blocks_are_joined() -> None:
    output = to_output(result(types.TextContent(text="first"), types.TextContent(text="second")))
    assert (output.content, output.is_error, output.data) == ("first\n\nsecond", False, None)


def test_is_error_stays_an_error() -> None:
    output = to_output(result(types.TextContent(text="Error executing tool fail: boom"), is_error=True))
    assert output.is_error and output.content == "Error executing tool fail: boom"


def test_an_embedded_text_resource_is_included_with_its_uri() -> None:
    block = types.EmbeddedResource(resource=types.TextResourceContents(uri="file:///a.md", text="# A"))
    assert to_output(result(block)).content == "[resource file:///a.md]\n# A"


def test_binary_content_is_described_not_dumped() -> None:
    data = base64.b64encode(b"x" * 3000).decode()
    output = to_output(
        result(
            types.ImageContent(data=data, mime_type="image/png"),
            types.AudioContent(data=data, mime_type="audio/wav"),
            types.EmbeddedResource(resource=types.BlobResourceContents(uri="file:///b.bin", blob=data)),
            types.ResourceLink(uri="https://x/log", name="log", mime_type="text/plain", size=2048, description="big"),
        )
    )
    assert data not in output.content
    assert output.content.split("\n\n") == [
        "[image: image/png, 3,000 bytes, not shown]",
        "[audio: audio/wav, 3,000 bytes, not shown]",
        "[binary resource file:///b.bin: unknown type, 3,000 bytes, not shown]",
        "[resource link: log <https://x/log> (text/plain, 2,048 bytes)] big",
    ]


def test_structured_content_is_pretty_json_when_there_is_no_text() -> None:
    output = to_output(result(structured={"answer": 42, "items": ["é"]}))
    assert json.loads(output.content) == {"answer": 42, "items": ["é"]}
    assert output.content.startswith('{\n  "answer"') and "é" in output.content
    assert output.data == {"answer": 42, "items": ["é"]}


def test_structured_content_is_not_repeated_when_text_says_it() -> None:
    output = to_output(result(types.TextContent(text='{"a": 1}'), structured={"a": 1}))
    assert output.content == '{"a": 1}' and output.data == {"a": 1}


def test_a_non_object_structured_value_is_kept_as_result() -> None:
    assert to_output(result(structured=[1, 2])).data == {"result": [1, 2]}


def test_an_empty_result_says_so() -> None:
    assert to_output(result()).content == EMPTY


def test_large_results_are_kept_whole() -> None:
    text = "line\n" * 100_000
    assert to_output(result(types.TextContent(text=text))).content == text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("failed to search: GET https://api.github.com/search/repositories?q=x: 401 Bad credentials []", True),
        (
            "failed to get file: GET https://api.github.com/repos/o/r/contents/x: 403 Resource not accessible by "
            "personal access token []",
            True,
        ),
        ("Requires authentication", True),
        ("the token has expired", True),
        ("failed: GET https://api.github.com/x: 403 API rate limit exceeded for user ID 1 []", False),
        ("failed to get issue: GET https://api.github.com/repos/o/r/issues/403: 404 Not Found []", False),
        ("no such repository", False),
    ],
)
def test_authorization_errors_are_recognised(text: str, problem: bool) -> None:
    found = authorization_problem(result(types.TextContent(text=text), is_error=True))
    assert (found is not None) is problem
    if problem:
        assert found == text


def test_only_error_results_are_authorization_errors() -> None:
    assert authorization_problem(result(types.TextContent(text="401 Bad credentials"))) is None
    long = "x: 401 Bad credentials " + "y" * 500
    found = authorization_problem(result(types.TextContent(text=long), is_error=True))
    assert found is not None and len(found) == 200 and found.endswith("…")
