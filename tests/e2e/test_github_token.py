"""The GitHub token dialog (account menu): not connected → a malformed token is refused on the field → saved and
shown masked → removed after a confirmation. Skipped where the server has no /api/integrations/github."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import Server

pytestmark = pytest.mark.e2e
TOKEN = "ghp_" + "e2eTokenAbcdefghijklmnopqrstuvwxyz0123456789"[:36]


def test_save_show_masked_and_remove_a_github_token(open_browser: Any, server: Server) -> None:
    email, key = server.new_user()
    if server.api("GET", "/api/integrations/github", key).status_code == 404:
        pytest.skip("this server has no GitHub integration route (the menu entry is hidden)")
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page

    page.get_by_role("button", name=f"Account: {email}").click()
    page.get_by_role("menuitem", name="GitHub token").click()
    dialog = page.get_by_role("dialog", name="GitHub token")
    status = dialog.get_by_test_id("github-status")
    status.filter(has_text="Not connected.").wait_for()

    # A malformed token: the server's reason shows on the field, which is marked invalid.
    field = dialog.get_by_label("Personal access token")
    assert field.get_attribute("type") == "password"
    field.fill("ghp_short")
    dialog.get_by_role("button", name="Save").click()
    problem = dialog.locator("#github-token-error")
    problem.filter(has_text="The token is too short").wait_for()
    assert field.get_attribute("aria-invalid") == "true"
    assert server.api("GET", "/api/integrations/github", key).json()["connected"] is False

    # A well-formed one is saved and from then on shown masked only.
    field.fill(TOKEN)
    dialog.get_by_role("button", name="Save").click()
    status.filter(has_text="Connected:").wait_for()
    assert f"ghp_…{TOKEN[-4:]}" in status.inner_text()
    assert TOKEN not in page.content()
    stored = server.api("GET", "/api/integrations/github", key).json()
    assert stored["connected"] is True and stored["masked"] == f"ghp_…{TOKEN[-4:]}"
    assert_accessible(page, "the GitHub token dialog")
    browsing.shot("15-github-token")

    # Remove asks first; Cancel keeps it.
    dialog.get_by_role("button", name="Remove the token").click()
    confirm = page.get_by_role("dialog", name="Remove your GitHub token?")
    confirm.get_by_role("button", name="Cancel").click()
    assert server.api("GET", "/api/integrations/github", key).json()["connected"] is True
    dialog.get_by_role("button", name="Remove the token").click()
    confirm.get_by_role("button", name="Remove").click()
    status.filter(has_text="Not connected.").wait_for()
    assert server.api("GET", "/api/integrations/github", key).json()["connected"] is False
