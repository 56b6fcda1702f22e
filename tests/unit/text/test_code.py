"""Code in documentation text is fenced and labelled with its language, so it is highlighted."""

from __future__ import annotations

import pytest

from almanac.text.code import guess_language, label_code


@pytest.mark.parametrize(
    ("code", "language"),
    [
        (">>> mean([1, 2, 3])\n2", "python"),
        ("import asyncio\n\nasync def main():\n    await asyncio.sleep(1)", "python"),
        ("client = httpx.AsyncClient(headers={'a': 'b'})", "python"),
        ("pip install httpx\npython -m almanac", "bash"),
        ("$ npm install --save react", "bash"),
        ("const app = express();\napp.get('/', (req, res) => res.send('hi'));", "javascript"),
        ("+-------+------+\n| JSON  | Python |", ""),
        ("", ""),
    ],
)
def test_a_snippets_language_is_guessed_from_its_lines(code: str, language: str) -> None:
    assert guess_language(code) == language


def test_unlabelled_and_text_fences_get_the_guessed_language() -> None:
    text = "Use it:\n\n```\nimport json\njson.dumps({})\n```\n\nor:\n\n```text\npip install httpx\n```"
    assert label_code(text) == (
        "Use it:\n\n```python\nimport json\njson.dumps({})\n```\n\nor:\n\n```bash\npip install httpx\n```"
    )


def test_a_fence_that_names_its_language_is_left_alone() -> None:
    text = "```toml\nname = 'x'\n```"
    assert label_code(text) == text


def test_a_doctest_session_outside_fences_becomes_a_python_block() -> None:
    text = "Return the mean.\n\n    >>> mean([1, 2, 3, 4, 4])\n    2.8\n\nMore prose."
    assert label_code(text) == "Return the mean.\n\n```python\n>>> mean([1, 2, 3, 4, 4])\n2.8\n```\n\nMore prose."


def test_code_inside_a_fence_is_not_wrapped_again() -> None:
    text = "```python\n>>> 1 + 1\n2\n```"
    assert label_code(text) == text
