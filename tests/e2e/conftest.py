"""Browser tests: a real `almanac serve` (offline model, the built web UI) driven by headless Chromium.

The server runs once per session in a temporary folder on a free port. Each test gets a fresh
browser context (cookies, storage) and, usually, a fresh user, so tests do not share credits.

They are skipped when the UI is not built (`frontend/dist`), Chromium is missing, Playwright or
axe-core (`frontend/node_modules`) is not installed, or the small documentation index could not be
built (the tests that need it) — unless ALMANAC_REQUIRE_E2E=1, which makes each of these a failure
instead. Screenshots of the main states go to test-artifacts/screenshots/.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from almanac.auth.service import AccountService
from almanac.billing.ledger import CreditService
from almanac.storage.db import Database

ROOT = Path(__file__).resolve().parents[2]
DIST = Path(os.environ.get("ALMANAC_E2E_DIST") or ROOT / "frontend" / "dist")
CHROMIUM = os.environ.get("ALMANAC_E2E_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
REQUIRE = os.environ.get("ALMANAC_REQUIRE_E2E", "") == "1"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# The offline model streams word by word; this pause makes streaming observable and a long
# answer last several seconds (time to press Stop).
TOKEN_DELAY_MS = "8"
_emails = itertools.count(1)


def _unavailable(reason: str) -> None:
    if REQUIRE:
        pytest.fail(f"browser tests required (ALMANAC_REQUIRE_E2E=1) but {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A running `almanac serve` and its folder, with the CLI at hand."""

    url: str
    folder: Path
    env: dict[str, str]
    log: Path
    local_email: str = "local@localhost"
    docs: bool = False  # whether the local documentation index (one small guide) was built
    docs_error: str = ""  # why it was not
    users: dict[str, str] = field(default_factory=dict)

    def require_docs(self) -> None:
        """Skip a test that needs the documentation index when it could not be built — or, under
        ALMANAC_REQUIRE_E2E=1, fail it."""
        if not self.docs:
            _unavailable(f"the local documentation index could not be built (`almanac docs index`): {self.docs_error}")

    def sign_in_link(self) -> str:
        """The current one-time local sign-in link (`almanac serve` rewrites the file after each use)."""
        return (self.folder / "data" / "local-sign-in-url").read_text().strip()

    def cli(self, *args: str) -> str:
        """Run `almanac …` against the server's database; returns stdout."""
        done = subprocess.run(
            [sys.executable, "-m", "almanac.cli", *args],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def new_user(self, *, plan: str = "free", credits: int = 0) -> tuple[str, str]:
        """A fresh user (its e-mail and API key), optionally with a credit pack — made in this process
        with the services `almanac users create` and `almanac credits grant` use (tests/integration/test_cli.py
        runs the commands themselves; a process per user cost the suite a minute of CPU)."""
        email = f"user{next(_emails)}-{os.getpid()}@e2e.test"
        url = self.env.get("DATABASE_URL") or f"sqlite+aiosqlite:///{Path(self.env['DATA_DIR']) / 'almanac.db'}"

        async def create() -> str:
            database = Database(url)
            try:
                created = await AccountService(database).create_user(email=email, plan=plan)
                if credits:
                    await CreditService(database).grant_pack(user_id=created.user.id, amount=credits, reason="e2e")
                return created.api_key
            finally:
                await database.dispose()

        with ThreadPoolExecutor(1) as worker:  # off this thread's (Playwright's) event loop
            key = worker.submit(asyncio.run, create()).result()
        self.users[email] = key
        return email, key

    def api(self, method: str, path: str, key: str, **kwargs: Any) -> httpx.Response:
        """Call the API directly with an API key (to check what the UI shows)."""
        headers = {"Authorization": f"Bearer {key}"}
        return httpx.request(method, self.url + path, headers=headers, timeout=60, **kwargs)


GUIDE = """# Frobnicate guide

## Installing frobnicate

Run `pip install frobnicate` to install the frobnicate package. It needs Python 3.11.

## Using frobnicate.spin

Call `frobnicate.spin(speed=3)` to spin the widget. The speed parameter goes from 1 to 10.

## Stopping the widget safely with `frobnicate.halt` before the process exits

Call `frobnicate.halt()` to stop a spinning frobnicate widget.
"""


def _build_docs_index(folder: Path, env: dict[str, str]) -> str:
    """Index the guide with `almanac docs index`; returns "" when it worked, else why not."""
    (folder / "docs").mkdir()
    (folder / "docs" / "frobnicate.md").write_text(GUIDE)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "almanac.cli", "docs", "index"],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return "`almanac docs index` did not finish"
    if done.returncode != 0:
        return f"exit status {done.returncode}: {done.stderr.strip()[-2000:]}"
    return ""


@contextmanager
def running_server(folder: Path, **extra_env: str) -> Iterator[Server]:
    """`almanac serve` (offline model, the built UI, one indexed guide) in `folder` on a free port,
    for the block's duration; `extra_env` adds or overrides settings."""
    if not (DIST / "index.html").is_file():
        _unavailable(f"the web UI is not built ({DIST}); run `make test` or `cd frontend && npm run build`")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "DATABASE_", "VOYAGE_"))}
    env.update(
        FRONTEND_DIST=str(DIST),
        CHAT_PROVIDER="offline",
        DATA_DIR=str(folder / "data"),
        LOCAL_USER="true",
        LOG_LEVEL="WARNING",
        OFFLINE_TOKEN_DELAY_MS=TOKEN_DELAY_MS,
        # Documentation: one small local guide, indexed before the server starts (no background
        # indexing competing for the CPU, no embedding model).
        DOC_SOURCE="local",
        DOCS_PATHS=str(folder / "docs"),
        DOCS_INCLUDE_PACKAGES="false",
        DOCS_INCLUDE_STDLIB="false",
        DOCS_AUTO_INDEX="false",
        EMBEDDINGS="none",
        RERANKER="none",
    )
    env.update(extra_env)
    env.pop("CONTEXT7_API_KEY", None)
    docs_error = _build_docs_index(folder, env)
    log = folder / "server.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "almanac.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60  # a guard against a server that never starts
        while True:
            assert process.poll() is None, f"the server exited:\n{log.read_text()}"
            try:
                if httpx.get(url + "/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"the server did not become ready:\n{log.read_text()}"
            time.sleep(0.2)
        yield Server(url=url, folder=folder, env=env, log=log, docs=not docs_error, docs_error=docs_error)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("e2e-server")) as started:
        yield started


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the Python package `playwright` is not installed")
    if not Path(CHROMIUM).exists():
        _unavailable(f"Chromium is not installed ({CHROMIUM}); `apt-get install -y chromium`")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@dataclass
class Watch:
    """What a page did that it should not: dialogs, script errors, CSP violations, foreign requests."""

    dialogs: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)


@dataclass
class Browsing:
    """A browser context for one test, with the helpers the tests share."""

    server: Server
    context: Any
    page: Any
    watch: Watch

    def sign_in_with_key(self, key: str) -> None:
        """Sign in the way the UI does (POST /api/auth/session sets the HttpOnly cookie), then open /."""
        response = self.context.request.post(self.server.url + "/api/auth/session", data={"api_key": key})
        assert response.status == 200, response.text()
        self.page.goto(self.server.url + "/")
        self.page.wait_for_selector("#composer-input")

    def shot(self, name: str, *, full_page: bool = False) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        return path


def _open(browser: Any, server: Server, **options: Any) -> Browsing:
    context = browser.new_context(base_url=server.url, **options)
    page = context.new_page()
    watch = Watch()

    def on_dialog(dialog: Any) -> None:
        watch.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def on_console(message: Any) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            watch.csp_violations.append(message.text)

    def on_request(request: Any) -> None:
        if not request.url.startswith((server.url, "data:", "about:", "blob:")):
            watch.foreign_requests.append(request.url)

    page.on("dialog", on_dialog)
    page.on("console", on_console)
    page.on("pageerror", lambda error: watch.page_errors.append(str(error)))
    page.on("request", on_request)
    page.set_default_timeout(15_000)
    return Browsing(server=server, context=context, page=page, watch=watch)


@pytest.fixture
def open_browser(browser: Any, server: Server) -> Iterator[Any]:
    """Open a fresh browser context (pass viewport / color_scheme); checked for misbehaviour at the end."""
    opened: list[Browsing] = []

    def factory(**options: Any) -> Browsing:
        options.setdefault("viewport", {"width": 1280, "height": 820})
        options.setdefault("color_scheme", "light")
        browsing = _open(browser, server, **options)
        opened.append(browsing)
        return browsing

    yield factory
    try:
        for browsing in opened:
            assert browsing.watch.page_errors == [], browsing.watch.page_errors
            assert browsing.watch.csp_violations == [], browsing.watch.csp_violations
            assert browsing.watch.foreign_requests == [], browsing.watch.foreign_requests
    finally:
        for browsing in opened:
            browsing.context.close()
