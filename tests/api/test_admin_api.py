"""Administration over HTTP: only administrators see it (everyone else gets 404), every change is
a ledger row naming the administrator and an audit entry, and disabling a user stops their keys
and sessions at once (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from tests.support import api_client, make_user

from almanac.auth.service import AccountService
from almanac.main import Services, create_app


@dataclass
class Office:
    services: Services
    settings: Any
    admin: httpx.AsyncClient
    admin_id: str
    user: httpx.AsyncClient
    user_id: str
    user_key: str


@pytest.fixture
async def office(database_url: str, build: Any) -> AsyncIterator[Office]:
    services, settings = build(database_url)
    boss = await AccountService(services.database).create_user(email="boss@example.com", role="admin")
    worker = await make_user(services, "worker@example.com")
    async with (
        api_client(services, settings, boss.api_key) as admin,
        api_client(services, settings, worker.api_key) as user,
    ):
        yield Office(services, settings, admin, boss.user.id, user, worker.user.id, worker.api_key)


def admin_operations(services: Services, settings: Any) -> list[tuple[str, str]]:
    """Every operation under /api/admin, as the OpenAPI schema lists them (routes added later too)."""
    paths = create_app(settings, services).openapi()["paths"]
    return [(method.upper(), path) for path, item in paths.items() if path.startswith("/api/admin") for method in item]


async def test_everyone_but_an_administrator_gets_404(office: Office) -> None:
    operations = admin_operations(office.services, office.settings)
    assert len(operations) >= 8
    for method, path in operations:
        url = path.replace("{user_id}", office.user_id)
        body = {"action": "grant", "amount": 5, "reason": "x", "plan": "pro", "disabled": True, "role": "admin"}
        refused = await office.user.request(method, url, json=body if method in ("POST", "PUT") else None)
        assert (refused.status_code, refused.json()["error"]["code"]) == (404, "not_found"), (method, path)
    me = (await office.user.get("/api/me")).json()
    assert me["role"] == "user" and me["plan"] == "free"  # nothing was done by those requests


async def test_anonymous_requests_get_401(office: Office) -> None:
    async with api_client(office.services, office.settings) as anonymous:
        assert (await anonymous.get("/api/admin/users")).status_code == 401


async def test_list_and_search_users(office: Office) -> None:
    listing = (await office.admin.get("/api/admin/users")).json()
    assert listing["count"] == 2 and {row["email"] for row in listing["data"]} == {
        "boss@example.com",
        "worker@example.com",
    }
    found = (await office.admin.get("/api/admin/users", params={"search": "WORK"})).json()
    assert [row["email"] for row in found["data"]] == ["worker@example.com"]
    assert (await office.admin.get("/api/admin/users", params={"search": "%"})).json()["count"] == 0  # literal


async def test_grant_and_remove_credits_name_the_admin(office: Office) -> None:
    url = f"/api/admin/users/{office.user_id}/credits"
    granted = await office.admin.post(url, json={"action": "grant", "amount": 120, "reason": "support ticket 42"})
    assert granted.status_code == 200 and granted.json()["buckets"] == {"daily": 50, "pack": 120}
    too_much = await office.admin.post(url, json={"action": "remove", "amount": 121, "reason": "oops"})
    assert (too_much.status_code, too_much.json()["error"]["code"]) == (409, "not_enough_credits")
    removed = await office.admin.post(url, json={"action": "remove", "amount": 20, "reason": "double grant"})
    assert removed.json() == {"balance": 150, "buckets": {"daily": 50, "pack": 100}}
    daily = await office.admin.post(url, json={"action": "remove", "bucket": "daily", "amount": 50, "reason": "abuse"})
    assert daily.json()["buckets"] == {"daily": 0, "pack": 100}

    credits = (await office.user.get("/api/credits", params={"recent": 10})).json()
    assert credits["balance"] == 100
    reasons = [(row["kind"], row["delta"], row["reason"]) for row in credits["recent"][:3]]
    assert reasons == [
        ("remove", -50, "abuse (by admin boss@example.com)"),
        ("remove", -20, "double grant (by admin boss@example.com)"),
        ("grant", 120, "support ticket 42 (by admin boss@example.com)"),
    ]
    assert await office.services.credits.ledger_sums(user_id=office.user_id) == {"daily": 0, "pack": 100}
    detail = (await office.admin.get(f"/api/admin/users/{office.user_id}")).json()
    assert detail["credits"]["buckets"] == {"daily": 0, "pack": 100}
    assert detail["credits"]["recent"][0]["reason"] == "abuse (by admin boss@example.com)"


async def test_a_plan_change_takes_effect_at_once(office: Office) -> None:
    assert (await office.user.get("/api/credits")).json()["left_today"] == 50  # today began as a Free day
    changed = await office.admin.put(f"/api/admin/users/{office.user_id}/plan", json={"plan": "pro", "reason": "trial"})
    assert changed.json() == {"previous_plan": "free", "plan": "pro", "top_up": 100}
    credits = (await office.user.get("/api/credits")).json()
    assert (credits["plan"], credits["left_today"]) == ("pro", 150)
    back = await office.admin.put(f"/api/admin/users/{office.user_id}/plan", json={"plan": "free"})
    assert back.json() == {"previous_plan": "pro", "plan": "free", "top_up": 0}
    assert (await office.user.get("/api/credits")).json()["left_today"] == 150  # today's allowance stays


async def test_disabling_a_user_stops_their_keys_and_sessions_at_once(office: Office) -> None:
    signed_in = await office.user.post("/api/auth/session", json={"api_key": office.user_key})
    cookie = signed_in.cookies["almanac_session"]
    async with api_client(office.services, office.settings) as browser:
        browser.headers["Cookie"] = f"almanac_session={cookie}"
        assert (await browser.get("/api/me")).status_code == 200
        gateway_call = {"model": "claude-haiku-4-5", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}
        assert (await office.user.post("/v1/messages", json=gateway_call)).status_code == 200  # its key is cached now
        disabled = await office.admin.put(
            f"/api/admin/users/{office.user_id}/status", json={"disabled": True, "reason": "chargeback"}
        )
        assert disabled.json()["disabled"] is True
        for refused in (
            await office.user.get("/api/me"),
            await browser.get("/api/me"),
            await office.user.post("/api/chat", json={"message": "hello"}),
            await office.user.post("/api/auth/session", json={"api_key": office.user_key}),
        ):
            # Refused, and told why: the key (or the session) is fine, its owner is disabled.
            assert (refused.status_code, refused.json()["error"]["code"]) == (401, "account_disabled")
            assert "disabled" in refused.json()["error"]["message"]
        assert (await office.user.post("/v1/messages", json=gateway_call)).status_code == 401  # the cache forgot it
        enabled = await office.admin.put(f"/api/admin/users/{office.user_id}/status", json={"disabled": False})
        assert enabled.json()["disabled"] is False
        assert (await office.user.get("/api/me")).status_code == 200  # the key works again…
        ended = await browser.get("/api/me")  # …the session from before does not come back
        assert (ended.status_code, ended.json()["error"]["code"]) == (401, "unauthorized")


async def test_a_wrong_key_is_not_called_disabled(office: Office) -> None:
    async with api_client(office.services, office.settings, "alm_" + "x" * 40) as stranger:
        refused = await stranger.get("/api/me")
    assert (refused.status_code, refused.json()["error"]["code"]) == (401, "unauthorized")


async def test_admins_cannot_lock_themselves_out(office: Office) -> None:
    self_disable = await office.admin.put(f"/api/admin/users/{office.admin_id}/status", json={"disabled": True})
    assert (self_disable.status_code, self_disable.json()["error"]["code"]) == (409, "cannot_disable_self")
    last = await office.admin.put(f"/api/admin/users/{office.admin_id}/role", json={"role": "user"})
    assert (last.status_code, last.json()["error"]["code"]) == (409, "last_admin")
    promoted = await office.admin.put(f"/api/admin/users/{office.user_id}/role", json={"role": "admin"})
    assert promoted.json()["role"] == "admin"
    assert (await office.user.get("/api/admin/users")).status_code == 200  # at once


async def test_unknown_users_are_404_for_admins_too(office: Office) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    for response in (
        await office.admin.get(f"/api/admin/users/{missing}"),
        await office.admin.put(f"/api/admin/users/{missing}/plan", json={"plan": "pro"}),
        await office.admin.post(
            f"/api/admin/users/{missing}/credits", json={"action": "grant", "amount": 1, "reason": "x"}
        ),
    ):
        assert (response.status_code, response.json()["error"]["code"]) == (404, "user_not_found")


async def test_every_admin_action_is_in_the_audit_log(office: Office) -> None:
    user = office.user_id
    await office.user.get("/api/credits")
    await office.admin.post(f"/api/admin/users/{user}/credits", json={"action": "grant", "amount": 5, "reason": "gift"})
    await office.admin.put(f"/api/admin/users/{user}/plan", json={"plan": "pro", "reason": "beta tester"})
    await office.admin.put(f"/api/admin/users/{user}/status", json={"disabled": True, "reason": "spam"})
    await office.admin.get(f"/api/admin/users/{user}")
    log = (await office.admin.get("/api/admin/audit", params={"user_id": user})).json()
    assert [entry["action"] for entry in log["data"]] == ["view_user", "disable_user", "change_plan", "grant_credits"]
    assert log["count"] == 4
    for entry in log["data"]:
        assert (entry["actor_id"], entry["actor_email"]) == (office.admin_id, "boss@example.com")
        assert (entry["target_user_id"], entry["target_email"]) == (user, "worker@example.com")
        assert entry["created_at"]
    assert log["data"][1]["details"] == {"reason": "spam"}
    assert log["data"][2]["details"] == {"from": "free", "to": "pro", "top_up": 100, "reason": "beta tester"}
    assert log["data"][3]["details"]["amount"] == 5


async def test_refused_changes_leave_no_audit_entry(office: Office) -> None:
    await office.admin.post(
        f"/api/admin/users/{office.user_id}/credits", json={"action": "remove", "amount": 999, "reason": "x"}
    )
    assert (await office.admin.get("/api/admin/audit")).json()["count"] == 0


def without_request_id(response: httpx.Response) -> tuple[int, Any, str | None]:
    body = response.json()
    body["error"].pop("request_id", None)
    return response.status_code, body, response.headers.get("allow")


async def test_to_anyone_but_an_administrator_every_admin_path_looks_like_a_path_that_does_not_exist(
    office: Office,
) -> None:
    """Whatever the method — one the route serves, one it does not (no 405, no `Allow`), HEAD,
    OPTIONS — and whatever the body (no 422 about its JSON): the same 404 as a path no route serves."""
    nowhere = without_request_id(await office.user.get("/api/no-such-page"))
    assert nowhere[:2] == (404, {"error": {"code": "not_found", "message": "Not Found"}}) and nowhere[2] is None
    templates = {path for _, path in admin_operations(office.services, office.settings)}
    for template in templates:
        url = template.replace("{user_id}", office.user_id)
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
            for content in (None, b"{not json", b'{"amount": "many"}'):
                response = await office.user.request(
                    method, url, content=content, headers={"content-type": "application/json"} if content else None
                )
                assert without_request_id(response) == nowhere, (method, url, content, response.text)
        head = await office.user.head(url)
        assert (head.status_code, head.headers.get("allow")) == (404, None)
    me = (await office.user.get("/api/me")).json()
    assert me["role"] == "user" and me["plan"] == "free"


async def test_looks_at_one_users_data_are_audited_once_a_while_and_list_pages_never(office: Office) -> None:
    user = office.user_id
    for _ in range(3):  # the UI reloads the user after every change: recorded once
        await office.admin.get(f"/api/admin/users/{user}")
        assert (
            await office.admin.get(f"/api/admin/users/{user}/usage", params={"from": "2026-01-01"})
        ).status_code == 200
        assert (await office.admin.get("/api/admin/usage")).status_code == 200
        await office.admin.get("/api/admin/users", params={"search": "worker"})
        await office.admin.get("/api/admin/audit")
    log = (await office.admin.get("/api/admin/audit")).json()
    assert sorted(entry["action"] for entry in log["data"]) == ["view_service_usage", "view_usage", "view_user"]
    about_user = {entry["action"]: entry for entry in log["data"] if entry["target_user_id"] == user}
    assert set(about_user) == {"view_user", "view_usage"}
    assert about_user["view_usage"]["details"]["from"] == "2026-01-01"
    service = next(entry for entry in log["data"] if entry["action"] == "view_service_usage")
    assert service["target_user_id"] is None and service["actor_id"] == office.admin_id
    # A change in between is recorded, and is not buried under repeated looks.
    await office.admin.put(f"/api/admin/users/{user}/plan", json={"plan": "pro", "reason": "beta"})
    await office.admin.get(f"/api/admin/users/{user}")
    actions = [entry["action"] for entry in (await office.admin.get("/api/admin/audit")).json()["data"]]
    assert actions[0] == "change_plan" and actions.count("view_user") == 1


async def test_a_look_is_recorded_again_once_the_repeat_window_has_passed(office: Office) -> None:
    admin_service = office.services.admin
    assert admin_service is not None
    now = [datetime(2026, 11, 24, 12, 0, tzinfo=UTC)]
    admin_service._clock = lambda: now[0]
    for minutes in (0, 5, 9, 11, 12, 25):
        now[0] = datetime(2026, 11, 24, 12, 0, tzinfo=UTC) + timedelta(minutes=minutes)
        await office.admin.get(f"/api/admin/users/{office.user_id}")
    log = (await office.admin.get("/api/admin/audit")).json()["data"]
    assert [entry["created_at"][11:16] for entry in log] == ["12:25", "12:11", "12:00"]


async def test_the_usage_of_an_unknown_user_is_a_404_for_admins(office: Office) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    response = await office.admin.get(f"/api/admin/users/{missing}/usage")
    assert (response.status_code, response.json()["error"]["code"]) == (404, "user_not_found")
