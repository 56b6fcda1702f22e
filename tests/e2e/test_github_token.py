"""The GitHub token dialog (account menu) is offered only where GitHub tools run with users' own
tokens: on such a server, not connected → a malformed token is refused on the field → saved and
shown masked → removed after a confirmation; on a server without them, there is no entry and the
API refuses a token it would never use."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import Server, _open, running_server
from tests.mcp_servers.harness import GITHUB_LIKE

pytestmark = pytest.mark.e2e
TOKEN = "ghp_" + "e2eTokenAbcdefghijklmnopqrstuvwxyz0123456789"[:36]


@pytest.fixture(scope="module")
def github_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A second `almanac serve` whose GitHub tools (a GitHub-like MCP server over stdio) run with
    each user's own token."""
    folder = tmp_path_factory.mktemp("e2e-github")
    config = folder / "servers.json"
    github = {
        "command": "${PYTHON}",
        "args": [str(GITHUB_LIKE)],
        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PERSONAL_ACCESS_TOKEN}"},
        "user_token": {"integration": "github", "env": "GITHUB_PERSONAL_ACCESS_TOKEN"},
        "billing": "github",
    }
    config.write_text(json.dumps({"mcpServers": {"github": github}}))
    with running_server(
        folder, MCP_CONFIG=str(config), GITHUB_PERSONAL_ACCESS_TOKEN="ghp_" + "0perat0r" * 5
    ) as started:
        yield started


def test_without_github_tools_there_is_no_token_entry(open_browser: Any, server: Server) -> None:
    email, key = server.new_user()
    assert server.api("GET", "/api/config", key).json()["github_tools"] is False
    refused = server.api("PUT", "/api/integrations/github", key, json={"token": TOKEN})
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "github_unavailable")
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    page.get_by_role("button", name=f"Account: {email}").click()
    page.get_by_role("menuitem", name="API keys").wait_for()
    assert page.get_by_role("menuitem", name="GitHub token").count() == 0


def test_save_show_masked_and_remove_a_github_token(browser: Any, github_server: Server) -> None:
    server = github_server
    email, key = server.new_user()
    assert server.api("GET", "/api/config", key).json()["github_tools"] is True
    browsing = _open(browser, server, viewport={"width": 1280, "height": 820}, color_scheme="light")
    page = browsing.page
    browsing.sign_in_with_key(key)

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
    assert browsing.watch.page_errors == [] and browsing.watch.csp_violations == []
    browsing.context.close()
