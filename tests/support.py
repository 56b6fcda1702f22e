"""Helpers for tests: settings, services, users and API clients on a given database."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from almanac.auth.service import AccountService, NewUser
from almanac.config import Settings
from almanac.llm.base import Model
from almanac.main import Services, build_services, create_app


def settings_for(database_url: str, **overrides: Any) -> Settings:
    """Settings for tests: the given database, no local user, an instant offline model."""
    values: dict[str, Any] = {
        "database_url": database_url,
        "local_user": False,
        "offline_token_delay_ms": 0,
        "summary_wait_s": 5,
        "chat_provider": "offline",
        "docs_auto_index": False,
        "embeddings": "none",
        "doc_source": "local",  # never reach the real Context7 from a test
        "mcp_enabled": False,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


async def make_user(services: Services, email: str | None = None, plan: str = "free") -> NewUser:
    return await AccountService(services.database).create_user(
        email=email or f"user-{uuid.uuid4().hex[:8]}@example.com", plan=plan
    )


def api_client(services: Services, settings: Settings, key: str | None = None) -> httpx.AsyncClient:
    app = create_app(settings, services)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost", headers=headers, timeout=30
    )


def services_for(url: str, *, model: Model | None = None, **overrides: Any) -> tuple[Services, Settings]:
    settings = settings_for(url, **overrides)
    return build_services(settings, model=model), settings


def wait_ready(process: Any, url: str, *, timeout_s: float = 240) -> None:
    """Wait until an `almanac serve` subprocess answers `GET {url}/ready`; fail with its output if it dies."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            stream = process.stdout or process.stderr
            raise AssertionError(f"server exited: {stream.read() if stream else ''}")
        try:
            if httpx.get(f"{url}/ready", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not become ready")
        time.sleep(0.2)


def clean_environment(*also: str) -> dict[str, str]:
    """This process's environment for a served `almanac` subprocess: without model keys, a database
    URL (or the prefixes in `also`) that would make it reach past what the test sets."""
    import os

    dropped = ("ANTHROPIC_", "OPENAI_", "DATABASE_", *also)
    return {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
