"""Source links land on the symbol a passage documents, where the docs site has anchors."""

from __future__ import annotations

import pytest

from almanac.rag.anchors import Symbol, passage_symbol, symbol_url

DOCS = "https://docs.python.org/3.11/library/"


def test_a_heading_path_names_its_module_and_object() -> None:
    title = (
        "Module `asyncio.tasks` > class `asyncio.tasks.Task(futures._PyFuture)` > "
        "`asyncio.tasks.Task.cancel(self, msg=None)`"
    )
    assert passage_symbol(title) == Symbol("asyncio.tasks", "asyncio.tasks.Task.cancel")
    assert passage_symbol("Module `json`") == Symbol("json", "")
    assert passage_symbol(
        "Module `json.decoder` > class `json.decoder.JSONDecoder(object)` > `json.decoder.JSONDecoder.__init__(self)`"
    ) == Symbol("json.decoder", "json.decoder.JSONDecoder")
    # whatever kind of object the heading says it is: a property, a coroutine
    property_title = "Module `pathlib` > class `pathlib.PurePath(object)` > property `pathlib.PurePath.suffix: str`"
    assert passage_symbol(property_title) == Symbol("pathlib", "pathlib.PurePath.suffix")
    coroutine = "Module `asyncio.streams` > `async asyncio.streams.open_connection(host=None, port=None)`"
    assert passage_symbol(coroutine) == Symbol("asyncio.streams", "asyncio.streams.open_connection")


@pytest.mark.parametrize(
    ("page", "title", "expected"),
    [
        ("re", "Module `re` > `re.split(pattern, string, maxsplit=0, flags=0)`", "re.html#re.split"),
        ("re", "Module `re`", "re.html#module-re"),
        # an implementation module: the object's public name, on the page that documents it
        (
            "asyncio",
            "Module `asyncio.tasks` > class `asyncio.tasks.Task(x)` > `asyncio.tasks.Task.cancel(self)`",
            "asyncio-task.html#asyncio.Task.cancel",
        ),
        ("asyncio", "Module `asyncio.locks` > class `asyncio.locks.Lock`", "asyncio-sync.html#asyncio.Lock"),
        ("asyncio", "Module `asyncio.tasks`", "asyncio-task.html"),
        (
            "pathlib",
            "Module `pathlib` > class `pathlib.PurePath(object)` > property `pathlib.PurePath.suffix: str`",
            "pathlib.html#pathlib.PurePath.suffix",
        ),
        ("json", "Module `json.decoder` > class `json.decoder.JSONDecoder(object)`", "json.html#json.JSONDecoder"),
        # a submodule with a page of its own
        ("os", "Module `os.path` > `os.path.join(a, *p)`", "os.path.html#os.path.join"),
        (
            "xml",
            "Module `xml.etree.ElementTree` > class `xml.etree.ElementTree.Element`",
            "xml.etree.elementtree.html#xml.etree.ElementTree.Element",
        ),
    ],
)
def test_standard_library_links_point_at_the_documented_object(page: str, title: str, expected: str) -> None:
    assert symbol_url(f"{DOCS}{page}.html", title) == DOCS + expected


def test_other_sites_keep_their_link() -> None:
    assert (
        symbol_url("https://www.python-httpx.org/", "Module `httpx` > class `httpx.AsyncClient`")
        == "https://www.python-httpx.org/"
    )
    assert symbol_url(None, "Module `re`") is None
    assert symbol_url(f"{DOCS}re.html", "Usage notes") == f"{DOCS}re.html"


def test_a_results_passages_and_citations_name_the_public_symbol_and_link_to_it() -> None:
    from almanac.rag.chunking import Chunk
    from almanac.rag.format import citations, to_markdown
    from almanac.rag.pipeline import DocResult, Passage
    from almanac.rag.sources.base import LibraryInfo

    def chunk(number: int, method: str, text: str) -> Chunk:
        title = f"Module `asyncio.tasks` > class `asyncio.tasks.Task(x)` > `asyncio.tasks.Task.{method}(self)`"
        return Chunk(f"c{number}", text, title, f"{DOCS}asyncio.html", "/python/asyncio", number, 10)

    library = LibraryInfo(id="/python/asyncio", title="asyncio", description="", trust_score=10, snippets=1)
    passages = [
        chunk(1, "cancel", "Request cancel."),
        chunk(2, "cancel", "More."),
        chunk(3, "done", ">>> t.done()\nTrue"),
    ]
    result = DocResult(library, "local", "cancel", [Passage(c, 1.0) for c in passages])
    text = to_markdown(result)
    assert (
        f"### 1. asyncio.Task.cancel\nLibrary: /python/asyncio · Source: {DOCS}asyncio-task.html#asyncio.Task.cancel"
        in text
    )
    assert "```python\n>>> t.done()\nTrue\n```" in text  # the example is fenced and labelled
    assert [c["title"] for c in citations(result)] == ["asyncio.Task.cancel", "asyncio.Task.done"]  # one per symbol


def test_a_coroutines_heading_links_to_its_function() -> None:
    title = "Module `asyncio.tasks` > `async asyncio.tasks.wait_for(fut, timeout)`"
    assert symbol_url(f"{DOCS}asyncio.html", title) == f"{DOCS}asyncio-task.html#asyncio.wait_for"
