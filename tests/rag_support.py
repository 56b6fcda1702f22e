"""Helpers for documentation-retrieval tests: passages and small local indexes as the index writes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from almanac.rag.bm25 import BM25Index
from almanac.rag.chunking import Chunk
from almanac.rag.hybrid import index_text
from almanac.rag.local_docs import Library
from almanac.rag.local_search import LocalIndex


def api_passage(library: str, symbol: str, text: str) -> Chunk:
    """A module-level API's passage, titled as the local index titles it (`Module `m` > `m.f(...)``)."""
    module = symbol.rsplit(".", 1)[0]
    title = f"Module `{module}` > `{symbol}(...)`"
    return Chunk(symbol, f"## `{symbol}(...)`\n\n{text}", title, None, library, 0, 10)


def small_index(titles: Mapping[str, str], chunks: Sequence[Chunk]) -> LocalIndex:
    """A BM25-only local index of `chunks`, with a library per ID in `titles` (ID → title)."""
    libraries = {
        lid: Library(lid, title, "", "stdlib" if lid.startswith("/python/") else "package", "1", None)
        for lid, title in titles.items()
    }
    bm25 = BM25Index.build([index_text(c) for c in chunks])
    return LocalIndex(libraries, list(chunks), bm25, None, None, datetime.now(UTC))


def write_package(site: Path, name: str, files: dict[str, str]) -> None:
    """An installed distribution `name` in `site`: its files (path → text) and the metadata naming them."""
    for relative, text in files.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\nSummary: {name} for tests\n")
    (info / "RECORD").write_text("".join(f"{relative},,\n" for relative in files))
