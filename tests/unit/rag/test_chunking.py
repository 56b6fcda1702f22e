"""Specification of rag/chunking.py: where documents are cut and what each chunk carries."""

from __future__ import annotations

import itertools

import pytest

from almanac.rag.chunking import Chunk, chunk_document, detect_format, estimate_tokens, html_to_text

SEP32 = "-" * 32
SEP40 = "-" * 40

CONTEXT7_V2 = f"""### Acquire lock with timeout

Source: https://github.com/tox-dev/filelock/blob/main/docs/api.md

Creates a FileLock with a 1-second timeout and uses the context manager.

```python
lock = FileLock("state.lock", timeout=1)
with lock.acquire():
    pass
```

{SEP32}

### Release a lock

Source: https://github.com/tox-dev/filelock/blob/main/docs/release.md

Releases the lock.

```python
lock.release()
```
"""

CONTEXT7_V1 = f"""========================
CODE SNIPPETS
========================
TITLE: Performing a POST Request
DESCRIPTION: An example of making a POST request to send data to the server.

SOURCE: https://github.com/axios/axios/blob/v1.x/README.md#_snippet_20

LANGUAGE: js
CODE:
```
axios.post('/user', {{ firstName: 'Fred' }});
```

{SEP40}

TITLE: Performing Multiple Concurrent Requests
DESCRIPTION: Demonstrates how to make multiple HTTP requests concurrently using `Promise.all`.

SOURCE: https://github.com/axios/axios/blob/v1.x/README.md#_snippet_21

LANGUAGE: js
CODE:
```
Promise.all([getUserAccount(), getUserPermissions()]);
```
"""


def titles(chunks: list[Chunk]) -> list[str]:
    return [c.title for c in chunks]


def test_context7_v2_snippets_become_chunks_with_title_and_source() -> None:
    chunks = chunk_document(CONTEXT7_V2, library="/tox-dev/filelock")
    assert titles(chunks) == ["Acquire lock with timeout", "Release a lock"]
    assert [c.source_url for c in chunks] == [
        "https://github.com/tox-dev/filelock/blob/main/docs/api.md",
        "https://github.com/tox-dev/filelock/blob/main/docs/release.md",
    ]
    assert all(c.library == "/tox-dev/filelock" for c in chunks)
    assert "lock.release()" in chunks[1].text and SEP32 not in chunks[0].text


def test_context7_legacy_records_split_on_40_hyphens_and_drop_the_banner() -> None:
    chunks = chunk_document(CONTEXT7_V1)
    assert titles(chunks) == ["Performing a POST Request", "Performing Multiple Concurrent Requests"]
    assert chunks[0].source_url == "https://github.com/axios/axios/blob/v1.x/README.md#_snippet_20"
    assert "CODE SNIPPETS" not in chunks[0].text and "=====" not in chunks[0].text
    assert chunks[0].text.startswith("TITLE: Performing a POST Request")


def test_legacy_records_split_even_with_a_short_rule_between_them() -> None:
    text = "TITLE: One\nDESCRIPTION: first\n\n---\n\nTITLE: Two\nDESCRIPTION: second\n"
    chunks = chunk_document(text)
    assert titles(chunks) == ["One", "Two"]
    assert chunks[0].text == "TITLE: One\nDESCRIPTION: first"


@pytest.mark.parametrize(
    ("hyphens", "expected_chunks"),
    [(20, 2), (32, 2), (40, 2), (60, 2), (19, 1)],
)
def test_a_line_of_20_or_more_hyphens_separates_snippets(hyphens: int, expected_chunks: int) -> None:
    text = f"Source: https://x.test/a\n\nalpha text\n\n{'-' * hyphens}\n\nbeta text\n"
    assert len(chunk_document(text)) == expected_chunks


def test_separator_inside_an_unbalanced_fence_still_splits() -> None:
    text = f"### A\n\n```js\nopen fence never closed\n\n{SEP32}\n\n### B\n\nSource: https://x.test/b\n\nbody\n"
    chunks = chunk_document(text)
    assert titles(chunks) == ["A", "B"] and chunks[1].source_url == "https://x.test/b"


def test_rst_underline_of_many_hyphens_is_a_title_not_a_separator() -> None:
    text = "Installation Guide Overview\n" + "-" * 27 + "\n\nRun pip.\n\nUsage\n-----\n\nCall it.\n"
    assert detect_format(text) == "rst"
    assert titles(chunk_document(text)) == ["Installation Guide Overview", "Usage"]


def test_markdown_splits_at_headings_and_keeps_the_heading_trail() -> None:
    text = (
        "Intro paragraph.\n\n# Guide\n\nOverview.\n\n"
        "## Install\n\n```bash\n# not a heading\npip install x\n```\n\n"
        "## Configure\n\nSet options.\n\n# API\n\nReference.\n"
    )
    chunks = chunk_document(text, title="Doc", source_url="https://docs.test/guide")
    assert titles(chunks) == ["Doc", "Guide", "Guide > Install", "Guide > Configure", "API"]
    assert "# not a heading" in chunks[2].text
    assert all(c.source_url == "https://docs.test/guide" for c in chunks)


def test_rst_sections_with_overlines_and_underlines() -> None:
    text = "=====\nTitle\n=====\n\nPreface.\n\nSection A\n=========\n\nText A.\n\nSub B\n~~~~~\n\nText B.\n"
    chunks = chunk_document(text)
    assert titles(chunks) == ["Title", "Section A", "Sub B"]
    assert chunks[1].text.startswith("Section A\n=========")


def test_plain_text_is_packed_by_paragraph() -> None:
    text = "First paragraph about caching.\n\nSecond paragraph about retries.\n"
    assert detect_format(text) == "text"
    chunks = chunk_document(text, title="notes")
    assert [c.text for c in chunks] == ["First paragraph about caching.\n\nSecond paragraph about retries."]


def test_long_sections_are_split_within_the_limit_with_overlap_and_keep_their_title() -> None:
    sentences = " ".join(f"Sentence number {i} explains option {i}." for i in range(120))
    chunks = chunk_document(f"## Options\n\n{sentences}\n", max_tokens=64, overlap_tokens=8, source_url="u")
    assert len(chunks) > 3
    assert all(c.token_estimate <= 64 for c in chunks)
    assert all(c.title == "Options" and c.source_url == "u" for c in chunks)
    for before, after in itertools.pairwise(chunks):
        assert after.text.split()[0] in before.text  # the next chunk starts with the previous tail


def test_a_code_block_that_fits_is_never_cut() -> None:
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(9)) + "\n```"
    assert 60 < estimate_tokens(code) <= 100
    prose = " ".join(["words"] * 50)
    chunks = chunk_document(f"## Example\n\n{prose}\n\n{code}\n\n{prose}\n", max_tokens=100, overlap_tokens=10)
    holding = [c for c in chunks if "value_0" in c.text]
    assert len(holding) == 1 and code in holding[0].text


def test_an_over_long_code_block_is_cut_at_lines_and_each_piece_is_fenced() -> None:
    code = "```python\n" + "\n".join(f"result_{i} = function_call(argument_{i})" for i in range(200)) + "\n```"
    chunks = chunk_document(f"## Big\n\n{code}\n", max_tokens=80, overlap_tokens=8)
    assert len(chunks) > 2
    for chunk in chunks:
        fence_at = chunk.text.index("```python\n")
        assert chunk.text.endswith("\n```") and chunk.text.count("```") == 2
        assert chunk.text[:fence_at] in ("", "## Big\n\n")
        assert chunk.token_estimate <= 80
    joined = "\n".join(c.text for c in chunks)
    assert all(f"result_{i} = " in joined for i in range(200))


def test_html_is_reduced_to_text_chunks() -> None:
    page = (
        "<!DOCTYPE html><html><head><title>t</title><style>p{}</style></head><body>"
        "<h1>Client</h1><p>Use the <b>client</b> object.</p><pre>client.get('/')\n</pre>"
        "<h2>Timeouts</h2><p>Set a timeout.</p><script>var x=1;</script></body></html>"
    )
    assert detect_format(page) == "html"
    chunks = chunk_document(page)
    assert titles(chunks) == ["Client", "Client > Timeouts"]
    assert "<" not in "".join(c.text for c in chunks).replace("```", "")
    assert "client.get('/')" in chunks[0].text and "var x" not in chunks[0].text
    assert "Use the client object." in html_to_text(page)


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n", SEP32, f"{SEP40}\n\n{SEP40}"])
def test_empty_or_blank_input_gives_no_chunks(text: str) -> None:
    assert chunk_document(text) == []


def test_repeated_snippets_are_kept_once_unless_asked() -> None:
    text = f"{CONTEXT7_V2}\n{SEP32}\n\n{CONTEXT7_V2}"
    assert len(chunk_document(text)) == 2
    assert len(chunk_document(text, drop_duplicates=False)) == 4


def test_ids_are_stable_unique_and_positions_run_in_order() -> None:
    first = chunk_document(CONTEXT7_V2, library="/lib")
    again = chunk_document(CONTEXT7_V2, library="/lib")
    assert [c.id for c in first] == [c.id for c in again]
    assert len({c.id for c in first}) == len(first)
    assert [c.position for c in first] == list(range(len(first)))
    assert chunk_document(CONTEXT7_V2, library="/other")[0].id != first[0].id


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [("", 0, 0), ("hello world", 2, 2), ("def f(x): return x", 8, 9), ("internationalization", 3, 4)],
)
def test_token_estimate_is_a_cheap_approximation(text: str, low: int, high: int) -> None:
    assert low <= estimate_tokens(text) <= high


def test_invalid_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        chunk_document("text", max_tokens=10, overlap_tokens=10)
