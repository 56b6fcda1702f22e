"""The offline model's documentation answer leads with the best passage, compactly, and links the rest."""

from __future__ import annotations

from almanac.llm.providers.offline_docs import compact_answer, merge_by_symbol, parse_passages

TASK = "https://docs.python.org/3.11/library/asyncio-task.html"
RESULT = f"""Documentation for **asyncio** (`/python/asyncio`) from local: 4 passages on "cancel a task".

### 1. Module `asyncio.tasks` > class `asyncio.tasks.Task(x)` > `asyncio.tasks.Task.cancel(self, msg=None)`
Library: /python/asyncio · Source: {TASK}#asyncio.Task.cancel

### `asyncio.tasks.Task.cancel(self, msg=None)`

Request that this task cancel itself.

This arranges for a CancelledError to be thrown into the wrapped coroutine.

```python
>>> task.cancel()
True
```

### 2. Module `asyncio.tasks` > class `asyncio.tasks.Task(x)` > `asyncio.tasks.Task.cancel(self, msg=None)`
Library: /python/asyncio · Source: {TASK}#asyncio.Task.cancel

Immediately after this method is called, Task.cancelled() will not return True.

### 3. Module `asyncio.tasks` > class `asyncio.tasks.Task(x)` > `asyncio.tasks.Task.cancelling(self)`
Library: /python/asyncio · Source: {TASK}#asyncio.Task.cancelling

### `asyncio.tasks.Task.cancelling(self)`

Return the count of the task's cancellation requests. This count is incremented when .cancel() is called.

### 4. Module `asyncio.tasks` > class `asyncio.tasks.Task(x)` > `asyncio.tasks.Task.cancel(self, msg=None)`
Library: /python/asyncio · Source: {TASK}#asyncio.Task.cancel

Immediately after this method is called, Task.cancelled() will not return True."""


def test_passages_are_read_with_their_titles_libraries_and_links() -> None:
    passages = parse_passages(RESULT)
    assert len(passages) == 4
    assert passages[2].library == "/python/asyncio" and passages[2].url == f"{TASK}#asyncio.Task.cancelling"
    assert passages[2].name == "asyncio.Task.cancelling"  # the public name, from the link's anchor
    assert passages[1].text == "Immediately after this method is called, Task.cancelled() will not return True."


def test_pieces_of_one_symbol_merge_and_repeated_text_shows_once() -> None:
    merged = merge_by_symbol(parse_passages(RESULT))
    assert [p.name for p in merged] == ["asyncio.Task.cancel", "asyncio.Task.cancelling"]
    assert merged[0].text.count("Immediately after") == 1


def test_the_answer_leads_with_the_symbol_its_signature_summary_and_example() -> None:
    answer = compact_answer(RESULT, "q1-t1")
    assert answer is not None
    lead, heading, signature, *rest = answer.split("\n\n")
    assert "[q1-t1]" in lead and "Offline model" in lead
    assert heading == f"**`asyncio.Task.cancel`** — [source]({TASK}#asyncio.Task.cancel)"
    assert signature == "```python\nasyncio.Task.cancel(msg=None)\n```"  # the call as written: no self
    assert rest[0] == "Request that this task cancel itself."
    assert rest[1] == "This arranges for a CancelledError to be thrown into the wrapped coroutine."
    assert "Example from the documentation:" in answer and "```python\n>>> task.cancel()\nTrue\n```" in answer
    assert answer.endswith(
        f"Also relevant:\n- [`asyncio.Task.cancelling`]({TASK}#asyncio.Task.cancelling) — "
        "Return the count of the task's cancellation requests."
    )
    assert answer.count("Immediately after") == 0  # the best passage is compact: no raw dump


def test_a_result_without_passages_gives_no_compact_answer() -> None:
    empty = "Documentation for **x** (`/x`) from local: 0 passages. No passage matched this topic."
    assert compact_answer(empty, "q1-t1") is None


def test_a_note_that_the_search_went_other_than_asked_comes_first() -> None:
    noted = RESULT.replace(
        '"cancel a task".\n',
        "\"cancel a task\".\nNote: No library called 'trio' is in the local documentation; all of it was searched.\n"
        "Note: Read “cancl” as “cancel”.\n",
    )
    _, first, second, heading, *_ = (compact_answer(noted, "q1-t1") or "").split("\n\n")
    assert first == "*Note: No library called 'trio' is in the local documentation; all of it was searched.*"
    assert second == "*Note: Read “cancl” as “cancel”.*" and heading.startswith("**`asyncio.Task.cancel`**")
    routine = RESULT.replace('"cancel a task".\n', '"cancel a task".\nNote: No library was named, so all … searched.\n')
    assert "Note:" not in (compact_answer(routine, "q1-t1") or "")  # nothing went other than asked


def test_a_property_is_named_by_its_dotted_name_where_its_link_has_no_anchor() -> None:
    result = (
        'Documentation for **anthropic** (`/pypi/anthropic`) from local: 1 passage on "messages".\n\n'
        "### 1. Module `anthropic` > class `anthropic.Anthropic(SyncAPIClient)` > "
        "property `anthropic.Anthropic.messages: Messages`\n"
        "Library: /pypi/anthropic · Source: https://docs.anthropic.com\n\n"
        "### property `anthropic.Anthropic.messages: Messages`\n\nThe Messages API."
    )
    assert (compact_answer(result, "q1-t1") or "").split("\n\n")[1].startswith("**`anthropic.Anthropic.messages`**")


def test_an_api_its_package_re_exports_is_named_as_users_import_it_and_the_note_is_no_summary() -> None:
    result = (
        'Documentation for **fastapi** (`/pypi/fastapi`) from local: 1 passage on "create an app".\n\n'
        "### 1. Module `fastapi.applications` > class `fastapi.applications.FastAPI(Starlette)`\n"
        "Library: /pypi/fastapi · Source: https://fastapi.tiangolo.com\n\n"
        "## class `fastapi.applications.FastAPI(Starlette)`\n\nImported as `fastapi.FastAPI`.\n\n"
        "`FastAPI` app class, the main entrypoint to use FastAPI."
    )
    _, heading, signature, summary = (compact_answer(result, "q1-t1") or "").split("\n\n")
    assert heading == "**`fastapi.FastAPI`** — [source](https://fastapi.tiangolo.com)"
    assert signature == "```python\nclass fastapi.FastAPI(Starlette)\n```"
    assert summary == "`FastAPI` app class, the main entrypoint to use FastAPI."


def test_signatures_read_as_the_user_writes_them() -> None:
    def signature_of(heading: str, url: str) -> str:
        result = f"### 1. t\nLibrary: /python/x · Source: {url}\n\n{heading}\n\nDoes it."
        answer = compact_answer(result, "q1-t1") or ""
        return answer.split("```python\n", 1)[1].split("\n```", 1)[0]

    docs = "https://docs.python.org/3.11/library/"
    assert signature_of(
        "## `async asyncio.tasks.wait_for(fut, timeout)`", f"{docs}asyncio-task.html#asyncio.wait_for"
    ) == ("await asyncio.wait_for(fut, timeout)")
    assert signature_of(
        "## class `argparse.ArgumentParser(_AttributeHolder, _ActionsContainer)`",
        f"{docs}argparse.html#argparse.ArgumentParser",
    ) == ("class argparse.ArgumentParser")
    assert (
        signature_of("## class `json.decoder.JSONDecoder(object)`", f"{docs}json.html#json.JSONDecoder")
        == "class json.JSONDecoder"
    )
    assert signature_of("## class `x.Sub(x.Base)`", "https://x.example/") == "class x.Sub(x.Base)"


def test_a_deprecated_apis_answer_keeps_its_signature_and_says_what_to_use_instead() -> None:
    result = (
        "Documentation for **pydantic** (`/pypi/pydantic`) from local: 1 passage.\n\n"
        "### 1. Module `pydantic.main` > class `pydantic.main.BaseModel` > `pydantic.main.BaseModel.dict(self)` "
        "(deprecated)\nLibrary: /pypi/pydantic · Source: https://example.org/pydantic\n\n"
        "### `pydantic.main.BaseModel.dict(self) -> dict` (deprecated)\n\n"
        "**Deprecated.** The `dict` method is deprecated; use `model_dump` instead."
    )
    answer = compact_answer(result, "q1-t1")
    assert answer is not None
    assert "```python\npydantic.main.BaseModel.dict() -> dict\n```" in answer
    assert "use `model_dump` instead" in answer and "(deprecated)`" not in answer
