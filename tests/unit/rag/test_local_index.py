"""The local index on SQLite and PostgreSQL: built once, stored, loaded, searched per library; what it keeps of
a large library."""

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.embedder import HashEmbedder

from almanac.rag import local_index
from almanac.rag.embeddings.cache import CachedEmbedder
from almanac.rag.fields import module_of
from almanac.rag.hybrid import HybridConfig
from almanac.rag.local_docs import Document, Library
from almanac.rag.local_index import (
    IndexInputs,
    build_local_index,
    chunk_all,
    load_local_index,
    search_local,
    with_reference,
)
from almanac.rag.python_reference import MIN_DATA_USES
from almanac.rag.ranking import symbol_of
from almanac.rag.sources.base import LibraryNotFound, SourceUnavailable
from almanac.rag.sources.local import LocalSource


def docs_folder(root: Path) -> Path:
    docs = root / "docs"
    (docs / "deploy").mkdir(parents=True)
    (docs / "deploy" / "docker.md").write_text(
        "# Docker\n\nBuild the image with a multi-stage Dockerfile.\n\n## Healthcheck\n\nPoint HEALTHCHECK at /ready."
    )
    (docs / "deploy" / "scaling.md").write_text("# Scaling\n\nRun two app processes behind a load balancer.")
    (docs / "billing.md").write_text("# Credits\n\nA query costs five credits. Packs never expire.")
    return docs


async def test_build_store_load_and_search(database_url: str, build: Any, tmp_path: Path) -> None:
    services, _ = build(database_url)
    embedder = CachedEmbedder(HashEmbedder(), services.database)
    inputs = IndexInputs(docs_paths=(docs_folder(tmp_path),), package_names=("smmap",), stdlib=False)
    stages: list[str] = []
    rebuilt, count = await build_local_index(
        services.database, inputs, embedder, progress=lambda stage, done, total: stages.append(stage)
    )
    assert rebuilt and count > 5
    assert {"collecting documents", "BM25 index built", "embedding chunks"} <= set(stages)
    assert (await build_local_index(services.database, inputs, embedder)) == (False, 0)  # nothing changed
    misses = embedder.misses
    assert (await build_local_index(services.database, inputs, embedder, force=True))[0]
    assert embedder.misses == misses  # every chunk's embedding came from the cache

    index = await load_local_index(services.database)
    assert index is not None and index.vectors is not None and index.model_id == "test/hash-64"
    assert {"/local/deploy", "/local/docs", "/pypi/smmap"} <= set(index.libraries)
    config = HybridConfig()
    hits = await search_local(index, embedder, "healthcheck ready", library=None, config=config, k=3)
    assert index.chunks[hits[0].index].title.endswith("Healthcheck")
    scoped = await search_local(index, embedder, "run processes", library="/local/docs", config=config, k=5)
    assert scoped and all(index.chunks[h.index].library == "/local/docs" for h in scoped)


async def test_the_local_source_finds_libraries_and_corpora(sqlite_url: str, build: Any, tmp_path: Path) -> None:
    services, _ = build(sqlite_url)
    inputs = IndexInputs(docs_paths=(docs_folder(tmp_path),), package_names=("smmap",), stdlib=False)
    await build_local_index(services.database, inputs, None)  # BM25 only
    index = await load_local_index(services.database)
    assert index is not None and index.vectors is None
    assert index.popularity.score("mmap.mmap") > 0  # what smmap's code uses, stored with the index
    # counted per package too: another package's use of an API is told from a package's use of its own
    assert index.popularity.foreign is not None and index.popularity.score("mmap.mmap", foreign=True) > 0
    source = LocalSource(index=lambda: index, embedder=None)
    assert [lib.id for lib in await source.libraries("smmap", "q")] == ["/pypi/smmap"]
    assert [lib.id for lib in await source.libraries("deploy", "q")] == ["/local/deploy"]
    assert "smmap" in source.names()
    corpus = await source.corpus((await source.libraries("deploy", "q"))[0], "docker")
    hits = await corpus.search("multi-stage Dockerfile image", 2)
    assert corpus.chunks[hits[0].index].library == "/local/deploy"
    with pytest.raises(LibraryNotFound):
        await source.corpus(source.everything().__class__("/pypi/nope", "nope"), "x")
    everywhere = await source.corpus(source.everything(), "credits")
    assert await everywhere.search("packs never expire", 1)


async def test_the_python_documentations_descriptions_are_stored_with_the_index(
    database_url: str, build: Any, tmp_path: Path
) -> None:
    services, _ = build(database_url)
    reference = tmp_path / "library"
    reference.mkdir()
    (reference / "smmap.rst.txt").write_text(
        ".. module:: smmap\n\n.. class:: SlidingWindowMapManager\n\n   Maps windows.\n"
    )
    inputs = IndexInputs(docs_paths=(docs_folder(tmp_path),), package_names=("smmap",), stdlib=False)
    assert (await build_local_index(services.database, replace(inputs, python_docs=reference), None))[0]
    index = await load_local_index(services.database)
    assert index is not None and index.reference == {"smmap.SlidingWindowMapManager": "Maps windows."}
    # a changed reference is a changed input: the index is rebuilt
    (reference / "smmap.rst.txt").write_text(".. module:: smmap\n\n.. function:: align_to_mmap()\n\n   Aligns.\n")
    assert (await build_local_index(services.database, replace(inputs, python_docs=reference), None))[0]
    assert (await build_local_index(services.database, replace(inputs, python_docs=reference), None)) == (False, 0)


async def test_an_unbuilt_index_says_how_to_build_it() -> None:
    source = LocalSource(index=lambda: None, embedder=None, missing=lambda: "being built: embedding 10/20")
    with pytest.raises(SourceUnavailable, match="being built: embedding 10/20"):
        await source.libraries("x", "y")


async def test_bm25_over_the_sources_is_served_before_introspection_and_a_restart_imports_nothing(
    sqlite_url: str, build: Any
) -> None:
    services, _ = build(sqlite_url)
    inputs = IndexInputs(package_names=("fastapi",), stdlib=False)  # fastapi re-exports Starlette's middleware
    published: list[Any] = []
    stages: list[str] = []
    await build_local_index(
        services.database,
        inputs,
        None,
        publish=published.append,
        progress=lambda stage, done, total: stages.append(stage),
    )
    gzip = "fastapi.middleware.gzip.GZipMiddleware"
    assert len(published) == 2
    assert not any(gzip in chunk.text for chunk in published[0].chunks)  # source only
    assert any(gzip in chunk.text for chunk in published[1].chunks)  # with what introspection sees
    assert stages.index("BM25 index of the sources built") < stages.index("introspected")
    again: list[str] = []
    assert await build_local_index(
        services.database, inputs, None, progress=lambda stage, done, total: again.append(stage)
    ) == (False, 0)
    assert "introspected" not in again  # unchanged sources: the stored index stands, nothing imported


def module_document(library: str, module: str, functions: int) -> Document:
    """A module's API page as `local_docs` writes it: one passage per function."""
    body = "\n\n".join(f"## `{module}.f{i}()`\n\nDoes thing {i} of {module}." for i in range(functions))
    return Document(library, module, f"# Module `{module}`\n\nAbout {module}.\n\n{body}", "markdown", None)


def test_a_most_asked_library_keeps_more_passages_and_set_aside_modules_go_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_index, "MAX_CHUNKS_PER_LIBRARY", 4)
    monkeypatch.setattr(local_index, "MAX_CHUNKS_MOST_ASKED", 8)
    documents = [
        module_document("/pypi/sqlalchemy", "sqlalchemy.engine", 3),
        module_document("/pypi/sqlalchemy", "sqlalchemy.testing.v1", 3),  # a namespace set aside: after the API
        module_document("/pypi/sqlalchemy", "sqlalchemy.ext.asyncio.session", 3),
        module_document("/pypi/obscure", "obscure.core", 3),
        module_document("/pypi/obscure", "obscure.extra", 3),
    ]
    chunks = chunk_all(documents)
    kept = {(chunk.library, module_of(chunk)) for chunk in chunks}
    assert ("/pypi/sqlalchemy", "sqlalchemy.ext.asyncio.session") in kept  # past the first 4 passages
    assert ("/pypi/sqlalchemy", "sqlalchemy.testing.v1") not in kept  # the budget of 8 was spent on the API
    assert sum(chunk.library == "/pypi/sqlalchemy" for chunk in chunks) == 8
    assert sum(chunk.library == "/pypi/obscure" for chunk in chunks) == 4  # any other library: the smaller budget
    assert ("/pypi/obscure", "obscure.extra") not in kept


def test_a_library_over_its_budget_keeps_every_apis_first_passage_before_further_pieces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_index, "MAX_CHUNKS_PER_LIBRARY", 6)
    long_doc = "\n\n".join(f"Parameter {i}: " + "word " * 300 for i in range(6))  # several passages
    text = f"# Module `big`\n\n## `big.first()`\n\n{long_doc}\n\n" + "\n\n".join(
        f"## `big.f{i}()`\n\nDoes thing {i}." for i in range(4)
    )
    chunks = chunk_all([Document("/pypi/big", "big", text, "markdown", None)])
    titles = [chunk.title.rsplit(" > ", 1)[-1] for chunk in chunks]
    assert len(chunks) == 6
    assert all(any(title.startswith(f"`big.f{i}()") for title in titles) for i in range(4))  # none cut off
    assert sum(title.startswith("`big.first()") for title in titles) == 1  # its second piece gave way


def test_the_standard_library_gains_the_objects_only_its_reference_documents(tmp_path: Path) -> None:
    reference = tmp_path / "library"
    reference.mkdir()
    (reference / "sys.rst.txt").write_text(
        ".. module:: sys\n\n.. data:: argv\n\n   The list of command line arguments passed to a Python script.\n\n"
        ".. function:: exit([arg])\n\n   Raise a SystemExit exception, signaling an intention to exit.\n\n"
        ".. currentmodule:: sys.monitoring\n\n.. function:: use_tool_id(tool_id, name)\n\n   Claims a tool.\n"
    )
    (reference / "smmap.rst.txt").write_text(".. module:: smmap\n\n.. data:: ALIGNMENT\n\n   The page size.\n")
    libraries = [
        Library("/python/sys", "sys", "", "stdlib", "3.11", "https://docs.python.org/3.11/library/sys.html"),
        Library("/pypi/smmap", "smmap", "", "package", "5.0", None),
    ]
    argv = frozenset({"sys.argv"})  # what a module's code uses: `sys.argv` is data that code uses
    documents = [
        Document("/python/sys", "sys", "# Module `sys`\n\n## `sys.exit(status=None)`\n\nExit.", "markdown", None),
        Document("/pypi/smmap", "smmap", "# Module `smmap`\n\n## class `smmap.Window`", "markdown", None),
        *(Document("/pypi/app", f"app.m{i}", "# Module", "markdown", None, uses=argv) for i in range(MIN_DATA_USES)),
    ]
    completed = with_reference(libraries, documents, reference)
    by_title = {document.title: document for document in completed}
    own = by_title["sys"].text
    assert own.startswith(documents[0].text)  # what the module documents comes first, as it was
    assert "## `sys.argv`\n\nThe list of command line arguments" in own  # data no passage documents
    assert own.count("sys.exit") == 1  # an API already documented is not documented twice
    # a submodule without a document of its own gets one, in its package's library
    assert by_title["sys.monitoring"].library_id == "/python/sys"
    assert "## `sys.monitoring.use_tool_id(tool_id, name)`" in by_title["sys.monitoring"].text
    assert by_title["smmap"] == documents[1]  # installed packages document themselves
    chunks = chunk_all(completed)
    assert "sys.argv" in {symbol_of(chunk) for chunk in chunks}  # a passage of its own, found by its name


def test_a_package_readme_keeps_what_it_says_of_using_the_package_not_of_the_project() -> None:
    readme = (
        "# Kv SDK\n\nA client for the kv store.\n\n## Getting started\n\nCreate a `Client` and call `incr`.\n\n"
        "## 🤝 Contributing\n\nSee CONTRIBUTING.md to send a message to the maintainers.\n\n"
        "## Code of Conduct\n\n### Our Pledge\n\nWe pledge to make participation harassment-free.\n\n"
        "## Support for TLS\n\nPass `ssl=True`.\n\n## License\n\nMIT.\n"
    )
    own_docs = "# Handbook\n\n## Contributing\n\nHow our team reviews changes."
    chunks = chunk_all(
        [
            Document("/pypi/kv", "kv README", readme, "markdown", None),
            Document("/local/handbook", "handbook", own_docs, "markdown", None),
        ]
    )
    titles = [chunk.title for chunk in chunks]
    assert "Kv SDK > Getting started" in titles and "Kv SDK > Support for TLS" in titles
    assert not [title for title in titles if "Contributing" in title and title.startswith("Kv")]
    assert not [title for title in titles if "Pledge" in title or "License" in title]
    assert "Handbook > Contributing" in titles  # a folder of documentation the user gave is theirs to search
