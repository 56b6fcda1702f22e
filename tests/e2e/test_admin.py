"""The Admin page: find a user, grant credits with a reason, change the plan, disable them (after a
confirmation) — each in the ledger and audit log; the disabled user's key stops working at once,
and their browser says their account is disabled."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import Server

pytestmark = pytest.mark.e2e


def test_an_administrator_manages_a_user(open_browser: Any, server: Server) -> None:
    admin_email = f"admin-{os.getpid()}@e2e.test"
    admin_key = server.cli("users", "create", "--email", admin_email, "--admin").strip().splitlines()[-1]
    email, key = server.new_user()

    browsing = open_browser()
    browsing.sign_in_with_key(admin_key)
    page = browsing.page
    page.get_by_role("button", name=f"Account: {admin_email}").click()
    page.get_by_role("menuitem", name="Admin").click()
    page.wait_for_url("**/admin")
    page.get_by_label("Search by e-mail").fill(email)
    users = page.get_by_test_id("admin-users")
    # The list shows every user until the search has answered: wait for the filtered list.
    expect(users.locator("tbody tr")).to_have_count(1)
    users.get_by_role("link", name=email).wait_for()
    assert_accessible(page, "the admin user list")
    users.get_by_role("link", name=email).click()
    page.wait_for_url("**/admin/users/*")
    page.get_by_role("heading", name=email).wait_for()

    credits = page.get_by_role("form", name="Grant or remove credits")
    credits.get_by_label("Amount").fill("40")
    credits.get_by_label("Reason").fill("support ticket 7")
    credits.get_by_role("button", name="Apply").click()
    page.get_by_test_id("admin-message").filter(has_text="Granted 40 credits").wait_for()
    ledger = page.get_by_test_id("admin-ledger")
    ledger.get_by_text(f"support ticket 7 (by admin {admin_email})").wait_for()
    assert server.api("GET", "/api/credits", key).json()["buckets"]["pack"] == 40

    plan = page.get_by_role("form", name="Change plan")
    plan.get_by_label("New plan").select_option("pro")
    plan.get_by_role("button", name="Change plan").click()
    page.get_by_test_id("admin-message").filter(has_text="Plan: Pro").wait_for()
    assert server.api("GET", "/api/me", key).json()["plan"] == "pro"

    # The user is signed in elsewhere meanwhile.
    theirs = open_browser()
    theirs.sign_in_with_key(key)

    # Disabling asks first (like deleting a chat); Cancel changes nothing.
    page.get_by_role("button", name="Disable user").click()
    confirm = page.get_by_role("dialog", name=f"Disable {email}?")
    confirm.wait_for()
    browsing.shot("32b-admin-disable-confirm")
    confirm.get_by_role("button", name="Cancel").click()
    assert server.api("GET", "/api/me", key).status_code == 200
    page.get_by_role("button", name="Disable user").click()
    confirm.get_by_role("button", name="Disable user").click()
    page.get_by_test_id("admin-message").filter(has_text="Disabled").wait_for()
    refused = server.api("GET", "/api/me", key)
    assert (refused.status_code, refused.json()["error"]["code"]) == (401, "account_disabled")

    # Their browser is sent to the sign-in page, which says why; signing in again says so too.
    theirs.page.reload()
    notice = theirs.page.get_by_role("status").filter(has_text="Your account is disabled")
    notice.wait_for()
    theirs.page.get_by_label("API key").fill(key)
    theirs.page.get_by_role("button", name="Sign in", exact=True).click()
    theirs.page.get_by_role("alert").filter(has_text="Your account is disabled").wait_for()
    assert_accessible(theirs.page, "the sign-in page of a disabled user")
    theirs.shot("33-disabled-user-sign-in")
    audit = page.get_by_test_id("audit-log")
    audit.get_by_text("disable user").wait_for()
    actions = audit.locator("tbody tr td:nth-child(3)").all_inner_texts()
    assert actions[:3] == ["disable user", "view user", "change plan"] or "grant credits" in actions
    assert {"grant credits", "change plan", "disable user"} <= set(actions)
    assert_accessible(page, "a user on the admin page")
    browsing.shot("32-admin-user")

    page.get_by_role("button", name="Enable user").click()
    page.get_by_test_id("admin-message").filter(has_text="Enabled again").wait_for()
    assert server.api("GET", "/api/me", key).status_code == 200

    page.get_by_role("button", name="Service usage").click()
    page.get_by_test_id("usage-total").wait_for()
    page.get_by_role("button", name="Audit log").click()
    page.get_by_test_id("audit-log").get_by_text(email).first.wait_for()
    assert_accessible(page, "the audit log")


def test_the_user_list_shows_more_on_request(open_browser: Any, server: Server) -> None:
    tag = f"many{os.getpid()}"
    script = (
        "import asyncio\n"
        "from almanac.auth.service import AccountService\n"
        "from almanac.config import Settings\n"
        "from almanac.storage.db import Database\n"
        "async def main():\n"
        "    database = Database(Settings().resolved_database_url)\n"
        "    for n in range(55):\n"
        f"        await AccountService(database).create_user(email=f'{tag}-{{n:02d}}@e2e.test')\n"
        "    await database.dispose()\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=server.folder, env=server.env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    admin_email = f"lister-{os.getpid()}@e2e.test"
    admin_key = server.cli("users", "create", "--email", admin_email, "--admin").strip().splitlines()[-1]

    browsing = open_browser()
    browsing.sign_in_with_key(admin_key)
    page = browsing.page
    page.goto(server.url + "/admin")
    page.get_by_label("Search by e-mail").fill(tag)
    users = page.get_by_test_id("admin-users")
    page.get_by_text("55 users (50 shown)").wait_for()
    assert users.locator("tbody tr").count() == 50
    first_page = {link.inner_text() for link in users.get_by_role("link").all()}
    page.get_by_role("button", name="Show 5 more").click()
    # Newest first: the five that come are whichever the first page left out; when they are in, the
    # button goes (it would say "Loading…" meanwhile).
    page.get_by_role("button", name=re.compile(r"^(Show \d+ more|Loading…)$")).wait_for(state="detached")
    shown = [link.inner_text() for link in users.get_by_role("link").all()]
    assert len(shown) == 55 and set(shown) == {f"{tag}-{n:02d}@e2e.test" for n in range(55)}
    assert first_page < set(shown)


@pytest.mark.parametrize("user_id", ["not-a-user", "00000000-0000-4000-8000-000000000000"])
def test_a_link_to_no_user_says_so_in_words(open_browser: Any, server: Server, user_id: str) -> None:
    admin_email = f"linker-{os.getpid()}-{user_id[:3]}@e2e.test"
    admin_key = server.cli("users", "create", "--email", admin_email, "--admin").strip().splitlines()[-1]
    browsing = open_browser()
    browsing.sign_in_with_key(admin_key)
    page = browsing.page
    page.goto(f"/admin/users/{user_id}")
    page.get_by_role("alert").filter(has_text="There is no such user.").wait_for()
    assert "must be a UUID" not in page.locator("main").inner_text()
