"""Shared fixtures: migrated databases on SQLite and PostgreSQL, services, users, API clients.

PostgreSQL comes from ALMANAC_TEST_POSTGRES_URL (default: the local server's `test` database).
When it is unreachable the PostgreSQL variants are skipped — unless ALMANAC_REQUIRE_POSTGRES=1
(set by CI), in which case they fail.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from almanac.storage.db import Database
from almanac.storage.migrate import upgrade
from tests.scheduling import spread_heavy


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, heavy tests (`@pytest.mark.heavy`) lead the workers' first blocks
    (tests/scheduling.py); every worker computes the same order, as xdist requires."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))

    def group_of(item: pytest.Item) -> str | None:
        marker = item.get_closest_marker("heavy")
        return None if marker is None else str(marker.kwargs.get("group", item.nodeid))

    items[:] = spread_heavy(items, workers, group_of)


PG_URL = os.environ.get("ALMANAC_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
REQUIRE_PG = os.environ.get("ALMANAC_REQUIRE_POSTGRES", "") == "1"


def _in_thread(coroutine_factory: Any) -> Any:
    """Run a coroutine on a fresh event loop in another thread (safe from inside a running loop)."""
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = asyncio.run(coroutine_factory())
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result.get("value")


def _pg_admin(*statements: str) -> None:
    import asyncpg

    url = make_url(PG_URL).set(drivername="postgresql").render_as_string(hide_password=False)

    async def run() -> None:
        connection = await asyncpg.connect(url, timeout=5)
        try:
            for statement in statements:
                await connection.execute(statement)
        finally:
            await connection.close()

    _in_thread(run)


def _pg_url(database: str) -> str:
    return make_url(PG_URL).set(database=database).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "almanac.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    try:
        _pg_admin("SELECT 1")
    except Exception as exc:
        message = f"PostgreSQL at {make_url(PG_URL).render_as_string(hide_password=True)} is unreachable: {exc!r}"
        if REQUIRE_PG:
            pytest.fail(message + " (ALMANAC_REQUIRE_POSTGRES=1)", pytrace=False)
        pytest.skip(message)
    name = f"almanac_tpl_{uuid.uuid4().hex[:10]}"
    _pg_admin(f'CREATE DATABASE "{name}"')
    try:
        upgrade(_pg_url(name))
        yield name
    finally:
        _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _sqlite_copy(template: Path, folder: Path) -> str:
    target = folder / "almanac.db"
    shutil.copyfile(template, target)
    return f"sqlite+aiosqlite:///{target}"


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path) -> Iterator[str]:
    """A fresh, migrated database: once on SQLite, once on PostgreSQL."""
    if request.param == "sqlite":
        yield _sqlite_copy(sqlite_template, tmp_path)
        return
    template = request.getfixturevalue("pg_template")
    name = f"almanac_t_{uuid.uuid4().hex[:12]}"
    _pg_admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    try:
        yield _pg_url(name)
    finally:
        _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url(pg_template: str) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database (for tests that only make sense there)."""
    name = f"almanac_t_{uuid.uuid4().hex[:12]}"
    _pg_admin(f'CREATE DATABASE "{name}" TEMPLATE "{pg_template}"')
    try:
        yield _pg_url(name)
    finally:
        _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def empty_postgres_url(pg_template: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database (none of Almanac's tables): data a tool reads."""
    name = f"almanac_e_{uuid.uuid4().hex[:12]}"
    _pg_admin(f'CREATE DATABASE "{name}"')
    try:
        yield _pg_url(name)
    finally:
        _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    """A fresh, migrated SQLite database (for tests that need not run on both engines)."""
    return _sqlite_copy(sqlite_template, tmp_path)


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    db = Database(database_url)
    yield db
    await db.dispose()


@pytest.fixture
async def build() -> AsyncIterator[Any]:
    """`build(url, model=…, **settings)` → (services, settings); their databases close at teardown."""
    from tests.support import services_for

    made: list[Any] = []

    def factory(url: str, **kwargs: Any) -> Any:
        services, settings = services_for(url, **kwargs)
        made.append(services)
        return services, settings

    yield factory
    for services in made:
        await services.summaries.drain(timeout_s=5)
        await services.chat.drain(timeout_s=5)
        await services.database.dispose()
