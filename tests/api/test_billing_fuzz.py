"""Schema-driven fuzzing (as in test_fuzz.py) of the payments, usage and admin operations with
payments on (a local fake of Stripe's API) and an administrator's key, so the operations the main
fuzz test only sees refused (409 payments off, 404 not an admin) run for real."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from schemathesis.python import asgi
from tests.api.test_fuzz import DEFAULT_REJECTIONS, EXAMPLES, RELAXED, REQUEST_TIMEOUT_S, _built_ui, _failures
from tests.fakes import stripe_server as fake
from tests.fakes.server import ServerThread
from tests.support import settings_for

from almanac.auth.service import AccountService
from almanac.main import build_services, create_app
from almanac.storage.db import Database

# A fuzzer cannot sign a Stripe webhook: every body it sends is (rightly) refused with 400.
WEBHOOK: dict[str, Any] = {
    "include-path": "/api/billing/webhook",
    "checks": {"positive_data_acceptance": {"enabled": False}},
}


def _admin_key(url: str) -> str:
    result: dict[str, str] = {}

    async def create() -> None:
        database = Database(url)
        try:
            created = await AccountService(database).create_user(email="fuzz-admin@example.com", role="admin")
            await AccountService(database).create_user(email="someone@example.com")
            result["key"] = created.api_key
        finally:
            await database.dispose()

    thread = threading.Thread(target=lambda: asyncio.run(create()))
    thread.start()
    thread.join()
    return result["key"]


@pytest.mark.heavy
def test_payments_usage_and_admin_conform_to_their_schema(database_url: str, tmp_path: Path) -> None:
    stripe = fake.FakeStripe()
    with ServerThread(stripe.app) as stripe_api:
        key = _admin_key(database_url)
        config = settings_for(
            database_url,
            allowed_hosts=f"localhost,{asgi.HOST}",
            frontend_dist=str(_built_ui(tmp_path / "dist")),
            stripe_secret_key=fake.SECRET_KEY,
            stripe_webhook_secret=fake.WEBHOOK_SECRET,
            stripe_price_pro=fake.PRICE_PRO,
            stripe_price_pack=fake.PRICE_PACK,
            stripe_api_base=stripe_api.url,
        )
        app = create_app(config, build_services(config))
        fuzzing = schemathesis.Config.from_dict(
            {
                "request-timeout": REQUEST_TIMEOUT_S,
                "generation": {"max-examples": EXAMPLES, "deterministic": True, "database": "none"},
                "checks": {"negative_data_rejection": {"expected-statuses": [*DEFAULT_REJECTIONS, "413"]}},
                "operations": [*RELAXED, WEBHOOK],
                "headers": {"Authorization": f"Bearer {key}"},
            }
        )
        schema = schemathesis.openapi.from_asgi("/openapi.json", app, config=fuzzing).include(
            path_regex="^/api/(billing|usage|admin)"
        )
        try:
            failures = list(_failures(schema))
        finally:
            asgi.shutdown_lifespans()
    assert failures == [], "\n\n".join(failures)
