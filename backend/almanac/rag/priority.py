"""Which libraries of the local index get their embeddings first, so hybrid search is ready early where
questions are most likely.

Order: libraries asked about while the index is being built (most asked first) → the operator's own
folders (DOCS_PATHS) → a fixed list of the Python libraries developers most often ask about, in that
list's order → every other standard-library module → every other library; within the last two groups,
smaller libraries first (more libraries become hybrid sooner). The fixed list is a judgement, not a
measurement: the standard library's everyday modules and the most widely used third-party packages (web,
data, HTTP, databases, testing, LLM SDKs). A name on it that is not installed costs nothing.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping

MOST_ASKED: tuple[str, ...] = (
    # standard library
    "asyncio", "typing", "pathlib", "json", "re", "datetime", "collections", "itertools", "functools",
    "subprocess", "logging", "dataclasses", "os", "argparse", "unittest", "contextlib", "threading",
    "concurrent", "enum", "sqlite3", "csv", "urllib", "http", "shutil", "tempfile",
    # third-party
    "requests", "httpx", "fastapi", "pydantic", "sqlalchemy", "django", "flask", "numpy", "pandas",
    "pytest", "aiohttp", "starlette", "click", "typer", "anthropic", "openai", "alembic", "celery",
    "redis", "boto3", "jinja2", "pydantic-settings", "uvicorn", "asyncpg", "tenacity", "matplotlib",
    "scipy", "scikit-learn", "langchain-core", "rich", "attrs", "websockets", "mcp", "stripe", "playwright",
)  # fmt: skip


def library_name(library_id: str) -> str:
    """The bare name of a local library ID: `/pypi/pydantic-settings` → `pydantic-settings`."""
    return re.sub(r"[-_.]+", "-", library_id.rstrip("/").rsplit("/", 1)[-1]).lower()


class LibraryPriority:
    """Remembers which libraries were asked about; orders libraries for embedding. Thread-safe."""

    def __init__(self, most_asked: Iterable[str] = MOST_ASKED) -> None:
        self._rank = {library_name(name): i for i, name in enumerate(most_asked)}
        self._asked: dict[str, int] = {}
        self._lock = threading.Lock()

    def ask(self, library_id: str) -> None:
        """Count one question about `library_id` (a local library ID)."""
        with self._lock:
            self._asked[library_id] = self._asked.get(library_id, 0) + 1

    def order(self, sizes: Mapping[str, int]) -> list[str]:
        """The library IDs of `sizes` (ID → chunk count), first to embed first (see the module docstring)."""
        with self._lock:
            asked = dict(self._asked)
        return sorted(sizes, key=lambda library: self._key(library, sizes[library], asked))

    def _key(self, library: str, size: int, asked: Mapping[str, int]) -> tuple[int, float, str]:
        if library in asked:
            return (0, -asked[library], library)
        if library.startswith("/local/"):
            return (1, size, library)
        rank = self._rank.get(library_name(library))
        if rank is not None:
            return (2, rank, library)
        return (3 if library.startswith("/python/") else 4, size, library)
