"""Field-weighted lexical search: a passage also scores by its API name and summary line (its lead) and by
its module's summary, so the API that says what the question asks for outranks long passages that merely
mention the words."""

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from almanac.rag.bm25 import BM25Index
from almanac.rag.chunking import DEFINED_IN, EXPORTED_AS, INHERITED_FROM, Chunk
from almanac.rag.fields import FieldIndex, FieldWeights, lead, module_of, name_text
from almanac.rag.hybrid import HybridConfig
from almanac.rag.local_docs import Library
from almanac.rag.local_search import LocalIndex, search_local

LIBRARY = "/python/stdlib"
NOTHING = FieldWeights(lead=0.0, module=0.0)
DEFAULT = FieldWeights()


def module_page(module: str, summary: str) -> Chunk:
    return Chunk(module, f"# Module `{module}`\n\n{summary}\n\nMore text.", f"Module `{module}`", None, LIBRARY, 0, 9)


def api(symbol: str, summary: str, body: str = "", owner: str | None = None) -> Chunk:
    module = symbol.rsplit(".", 2 if owner else 1)[0]
    path = [f"Module `{module}`", *([f"class `{module}.{owner}`"] if owner else []), f"`{symbol}(path)`"]
    text = f"## `{symbol}(path)`\n\n{summary}\n\n{body}".strip()
    return Chunk(symbol, text, " > ".join(path), None, LIBRARY, 0, 9)


def index_of(chunks: list[Chunk], weights: FieldWeights = DEFAULT) -> LocalIndex:
    library = {LIBRARY: Library(LIBRARY, "stdlib", "", "stdlib", "3", None)}
    bm25 = BM25Index.build([chunk.text for chunk in chunks])
    return LocalIndex(library, chunks, bm25, None, None, datetime.now(UTC), weights=weights)


def test_module_name_and_lead_come_from_the_title_and_the_first_paragraph() -> None:
    method = api("re.Pattern.search", "Scan through string looking for a match.", owner="Pattern")
    assert module_of(method) == "re"
    assert name_text(method) == "Pattern search"
    assert lead(method) == "Scan through string looking for a match."
    page = module_page("shutil", "Utility functions for copying and archiving files and directory trees.")
    assert (module_of(page), name_text(page)) == ("shutil", "")
    assert lead(page).startswith("Utility functions")
    readme = Chunk("r", "Some prose.", "Getting started", None, LIBRARY, 0, 3)
    assert (module_of(readme), name_text(readme)) == ("", "")


# A long passage that repeats the question's words in passing, and the API whose summary line says it.
LONG = "delete the directory cache entry; " + "the cache keeps entries per directory and options. " * 12
CHUNKS = [
    module_page("shutil", "Utility functions for copying and archiving files and directory trees."),
    api("cachelib.Store.delete", "Remove one entry.", LONG, owner="Store"),
    api("shutil.rmtree", "Recursively delete a directory tree.", "If ignore_errors is set, errors are ignored. " * 8),
]


def test_the_api_whose_summary_says_what_is_asked_outranks_a_long_passage_that_mentions_it() -> None:
    body_only = [hit.index for hit in index_of(CHUNKS, NOTHING).lexical("delete a directory", 3, None)]
    assert body_only.index(1) < body_only.index(2)  # the body alone favours the long cache passage
    fielded = [hit.index for hit in index_of(CHUNKS).lexical("delete a directory", 3, None)]
    assert fielded.index(2) < fielded.index(1)


def test_a_module_summary_lifts_its_apis_for_a_question_in_the_modules_words() -> None:
    chunks = [
        module_page("re", "Support for regular expressions (RE)."),
        module_page("textwrap", "Text wrapping and filling."),
        api("re.split", "Split the source by the occurrences of the pattern."),
        api("textwrap.split", "Split the text into words, keeping whitespace."),
    ]
    question = "split a string into words with a regular expression"
    fields = FieldIndex(chunks)
    body = BM25Index.build([chunk.text for chunk in chunks]).scores(question)
    without = fields.scores(question, body, FieldWeights(lead=0.7, module=0.0))
    assert without[3] > without[2]  # "words" favours the textwrap function
    with_module = fields.scores(question, body, FieldWeights(lead=0.7, module=1.0))
    assert with_module[2] > with_module[3]


def test_a_chunk_without_a_module_is_scored_by_its_text_and_lead_only() -> None:
    readme = Chunk("r", "Regular expressions explained.", "Guide", None, LIBRARY, 0, 3)
    chunks = [module_page("re", "Support for regular expressions (RE)."), readme]
    fields = FieldIndex(chunks)
    body = BM25Index.build([chunk.text for chunk in chunks]).scores("regular expressions")
    scores = fields.scores("regular expressions", body, FieldWeights(lead=0.0, module=1.0))
    assert scores[0] > scores[1] > 0
    assert scores[1] == body[1] / body.max()


def test_plain_documents_without_api_headings_keep_their_body_order() -> None:
    chunks = [Chunk(str(i), text, "", None, LIBRARY, i, 3) for i, text in enumerate(["cats and dogs", "dogs", "fish"])]
    hits = index_of(chunks).lexical("dogs", 3, None)
    assert [hit.index for hit in hits] == [1, 0]
    assert hits[0].score == 1.0


def test_the_field_index_is_built_once_per_list_of_chunks() -> None:
    chunks = [module_page("shutil", "Utility functions for files."), api("shutil.rmtree", "Delete a tree.")]
    index = index_of(chunks)
    built = index.fields()
    # Vectors published while embedding progresses keep the same chunks: the fields are not rebuilt.
    assert replace(index, model_id="local/test").fields() is built
    # Other chunks get fields of their own.
    other = replace(index, chunks=[*chunks, api("shutil.which", "Find a program.")])
    assert other.fields() is not built and other.fields().chunks is other.chunks


# --- what is said about an API elsewhere: the Python documentation, the code that calls it ---

# The answer's docstring does not use the question's words; a competitor's does.
WHICH = [
    api("shutil.which", "Given a command, mode, and a PATH string, return the path which conforms to the mode."),
    api("toolkit.bundled", "The full executable the toolkit ships, from its bin folder."),
]
QUESTION = "find the full path of an executable on PATH"


def test_the_python_documentations_description_lifts_the_api_it_describes() -> None:
    body = BM25Index.build([chunk.text for chunk in WHICH]).scores(QUESTION)
    reference = {"shutil.which": "Return the path to an executable which would be run if the given cmd was called."}
    fields = FieldIndex(WHICH, reference=reference)
    without = fields.scores(QUESTION, body, FieldWeights(reference=0.0))
    assert without[1] > without[0]
    assert (scores := fields.scores(QUESTION, body, DEFAULT))[0] > scores[1]
    # the index passes its stored descriptions to its fields
    index = replace(index_of(WHICH), reference=reference)
    assert [hit.index for hit in index.lexical(QUESTION, 2, None)] == [0, 1]


def test_the_words_of_the_code_calling_an_api_lift_it() -> None:
    body = BM25Index.build([chunk.text for chunk in WHICH]).scores(QUESTION)
    fields = FieldIndex(WHICH, usage={"shutil.which": "executable binary locate find program"})
    assert (
        fields.scores(QUESTION, body, FieldWeights(usage=0.0))[1]
        > fields.scores(QUESTION, body, FieldWeights(usage=0.0))[0]
    )
    assert (scores := fields.scores(QUESTION, body, FieldWeights(usage=1.0)))[0] > scores[1]


# --- named APIs: a chunk whose API name the question spells out is a candidate, however far its text ---


def test_the_apis_a_question_spells_out_are_found_by_name() -> None:
    chunks = [
        module_page("threading", "Thread-based parallelism."),
        api("threading.Thread", "A class that represents a thread of control."),
        api("threading.Thread.start", "Start the thread's activity.", owner="Thread"),
        api("tarfile.TarFile.extractall", "Extract all members from the archive.", owner="TarFile"),
        api("logging.basicConfig", "Do basic configuration for the logging system."),
        api("shutil._rmtree_unsafe", "A private helper."),
        api("queue.Queue", "Create a queue object."),
    ]
    fields = FieldIndex(chunks)
    symbols = lambda query: [chunks[row].id for row in fields.named(query)]  # noqa: E731
    # every part of the name is a word of the question (stemmed as BM25 stems: "starting" → start)
    assert symbols("starting a thread") == ["threading.Thread", "threading.Thread.start"]
    assert symbols("basic config of the logger") == ["logging.basicConfig"]
    assert symbols("basic logging") == []  # one part of two is not the name
    # two consecutive words run together spell a name written as one word
    assert symbols("extract all members of a tar archive") == ["tarfile.TarFile.extractall"]
    # module pages and private helpers are not APIs to name
    assert "threading" not in symbols("threading") and symbols("rmtree unsafe") == []


# Forty passages that say "thread" three times, and the class the question names, which says it nowhere.
THREAD_HEAVY = [
    *(
        api(
            f"pool.Worker.run{n}",
            "Run the worker in a thread of the pool; thread safety, thread names.",
            owner="Worker",
        )
        for n in range(40)
    ),
    api("threading.Thread", "A class that represents a separate flow of control."),
]


def test_named_apis_join_the_lexical_candidates_even_when_their_text_ranks_far_below() -> None:
    chunks = THREAD_HEAVY
    index = index_of(chunks)
    top, named = index.lexical_and_named("start a thread that runs a function", 10, None, named=5)
    assert len(chunks) - 1 not in {hit.index for hit in top}  # ten thread-heavy passages outscore it
    assert [hit.index for hit in named] == [len(chunks) - 1]
    # restricted to a library, only that library's named APIs
    assert index.lexical_and_named("start a thread", 10, "/other/library", named=5) == ([], [])


async def test_the_local_search_returns_the_named_apis_after_its_lexical_hits() -> None:
    chunks = THREAD_HEAVY
    hits = await search_local(
        index_of(chunks), None, "start a thread that runs a function", library=None, config=HybridConfig(), k=10
    )
    assert len(hits) == 11 and hits[-1].index == len(chunks) - 1


def test_the_lead_is_the_first_prose_after_a_heading_that_may_span_lines() -> None:
    # a signature whose annotations hold text breaks the heading over lines, its own backticks paired
    heading = "## `web.route(path: Annotated[str, Doc('\n    The `path`, as in `/items`.\n    ')])`"
    signature = Chunk("w", f"{heading}\n\nDeclare a route.", "Module `web` > `web.route(...)`", None, LIBRARY, 0, 9)
    assert lead(signature) == "Declare a route."
    # admonitions, field lists, tables, doctests and badges are passed over for the first paragraph of prose
    noisy = "\n\n".join(
        [
            "### `m.Model.dump(self)`",
            '!!! abstract "Usage Documentation"\n    [`dump`](../concepts.md)',
            ":param mode: how.",
            "| a | b |",
            ">>> m.dump()",
            "[![badge](x.svg)](https://example.org)",
            "Generate a dictionary of the model.",
        ]
    )
    assert lead(Chunk("m", noisy, "Module `m` > `m.Model.dump(self)`", None, LIBRARY, 0, 9)) == (
        "Generate a dictionary of the model."
    )
    assert lead(Chunk("p", "a split-off part, no heading", "Module `m` > `m.f()`", None, LIBRARY, 1, 9)) == ""


def test_a_gist_says_in_one_line_what_an_api_is_for() -> None:
    described = api("shutil.rmtree", "Delete a tree. Slowly.", "Errors are ignored when asked.")
    summary_only = api("cachelib.Store.delete", "Remove one entry from the store. It returns nothing.", owner="Store")
    part = Chunk("part", "errors are ignored when asked", described.title, None, LIBRARY, 1, 9)  # no heading
    page = module_page("shutil", "Utility functions for copying files. And more.")
    reference = {"shutil.rmtree": "Recursively delete a directory tree. If ignore_errors is set, errors are ignored."}
    fields = FieldIndex([described, summary_only, part, page], reference=reference)
    # the first sentence of the Python documentation's description, then of the docstring's summary (one alone
    # when the other is missing or says the same)
    assert fields.gist(described) == "shutil.rmtree: Recursively delete a directory tree. Delete a tree."
    assert fields.gist(summary_only) == "cachelib.Store.delete: Remove one entry from the store."
    assert fields.gist(part) == fields.gist(described)  # a split-off part has its API's gist
    assert fields.gist(page) == "Module `shutil`: Utility functions for copying files."
    same = FieldIndex([described], reference={"shutil.rmtree": "Delete a tree. In the reference too."})
    assert same.gist(described) == "shutil.rmtree: Delete a tree."


def test_a_heading_split_off_from_its_docstring_takes_its_lead_and_gist_from_the_passage_continuing_it() -> None:
    # an SDK method's signature of many keyword arguments fills a passage of its own; the chunker continues
    # the section (same title) with the signature's end, then the docstring
    title = "Module `sdk` > class `sdk.Messages` > `sdk.Messages.create(...)`"
    heading = Chunk("h", "### `sdk.Messages.create(self, *, max_tokens: int, model: str,", title, None, LIBRARY, 0, 9)
    rest = Chunk("r", "model: str, stream: bool) -> Message`\n\nSend a list of messages.", title, None, LIBRARY, 1, 9)
    other = Chunk("o", "Unrelated prose of the next section.", "Module `sdk` > `sdk.other()`", None, LIBRARY, 2, 9)
    fields = FieldIndex([heading, rest, other])
    assert fields.gist(heading) == "sdk.Messages.create: Send a list of messages."
    assert fields.gist(rest) == fields.gist(heading)
    # the next passage of another section lends nothing, even where it would close the heading
    lone = Chunk("l", "## `sdk.other(x,", "Module `sdk` > `sdk.other(...)`", None, LIBRARY, 0, 9)
    closing = Chunk("c", "y)`\n\nAnother API's prose.", "Module `sdk` > `sdk.third(...)`", None, LIBRARY, 0, 9)
    assert FieldIndex([lone, closing]).gist(lone) == "sdk.other:"


@pytest.mark.parametrize(
    ("note", "kept"),
    [(DEFINED_IN.format("sdk._client"), True), (EXPORTED_AS.format("sdk.Client"), False)],
    ids=["defined in", "imported as"],
)
def test_a_gist_skips_the_notes_on_where_an_api_comes_from_which_the_lead_field_keeps(note: str, kept: bool) -> None:
    # a re-exported class without a docstring of its own: a note on where it is defined (or the name users import
    # it by), its attributes, then its constructor's passage, which says what it is for
    title = "Module `sdk` > class `sdk.Client(BaseClient)`"
    attributes = "- `base_url: str`: Base URL for requests."
    cls = Chunk("c", f"## class `sdk.Client(BaseClient)`\n\n{note}\n\n{attributes}", title, None, LIBRARY, 0, 9)
    init = Chunk(
        "i",
        "### `sdk.Client.__init__(self, *, api_key: str)`\n\nConstruct a new synchronous client instance.",
        f"{title} > `sdk.Client.__init__(self, *, api_key: str)`",
        None,
        LIBRARY,
        1,
        9,
    )
    inherited = api("sdk.Client.close", INHERITED_FROM.format("sdk._BaseClient"), owner="Client")
    fields = FieldIndex([cls, init, inherited])
    assert fields.gist(cls) == "sdk.Client: Construct a new synchronous client instance."
    assert fields.gist(inherited) == "sdk.Client.close:"
    assert lead(cls, summary=True) == ""
    # the lead field keeps where it is defined — a re-export's note names the package it lives in —, not the name it
    # is imported by, its heading's words again: the attributes' line is the lead then
    assert lead(cls) == (note if kept else attributes)
