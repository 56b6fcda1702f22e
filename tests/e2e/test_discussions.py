"""Discussions in the browser: start one between two `offline` participants from the sidebar's
Discussions page, watch it live to the end, find it among past discussions, read it again and
delete it — with no serious accessibility violations on the page, in light and dark; the form fits
a phone, and on a desktop each participant's fields share one row."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import Server
from tests.e2e.pages import wait_balance

pytestmark = pytest.mark.e2e
GOAL = "Agree on how to cancel asyncio tasks safely"


def test_a_discussion_between_two_offline_models_runs_live_and_is_kept(open_browser: Any, server: Server) -> None:
    _, key = server.new_user()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    page.get_by_role("link", name="Discussions").click()
    page.wait_for_url("**/discussions")
    form = page.get_by_role("form", name="New discussion")
    form.wait_for()
    assert_accessible(page, "the discussions page with its form")

    page.get_by_label("Goal").fill(GOAL)
    assert page.get_by_label("Model 1").input_value() == "offline"
    assert page.get_by_label("Model 2").input_value() == "offline"
    page.get_by_label("Role", exact=True).first.fill("asks the questions")
    page.get_by_label("Name (optional)").first.fill("Ada")
    page.get_by_label("Turns").fill("3")
    browsing.shot("29-discussion-form", full_page=True)
    page.get_by_role("button", name="Start discussion").click()

    discussion = page.get_by_role("region", name="Discussion", exact=True)
    discussion.wait_for()
    page.wait_for_url("**/discussions/*")  # the address names the discussion as soon as it starts
    first = discussion.locator("li.spoken").first
    first.locator(".spoken-text").wait_for()
    assert "Ada" in first.locator(".spoken-head").inner_text()
    outcome = page.get_by_test_id("discussion-outcome")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=discussion-outcome]')?.textContent.includes('Finished')",
        timeout=30_000,
    )
    # Each offline participant says it cannot answer: turns that carry nothing are free.
    assert "Finished after 3 of 3 turns · 0 credits" in outcome.inner_text()
    spoken = discussion.locator("li.spoken")
    assert spoken.count() == 3
    heads = [spoken.nth(i).locator(".spoken-head").inner_text() for i in range(3)]
    assert "Ada" in heads[0] and "Participant 2" in heads[1] and "Ada" in heads[2]
    assert all("offline model" in spoken.nth(i).locator(".spoken-text").inner_text() for i in range(3))
    wait_balance(page, 50)  # nothing was charged
    browsing.shot("30-discussion-finished", full_page=True)
    assert_accessible(page, "a finished discussion")

    stored = server.api("GET", "/api/discussions", key).json()
    assert stored["count"] == 1 and stored["data"][0]["status"] == "done"
    discussion_id = stored["data"][0]["id"]
    assert page.url.endswith(f"/discussions/{discussion_id}")

    # Later: the list of past discussions opens it again, from the database.
    page.goto("/discussions")
    past = page.get_by_role("region", name="Past discussions")
    past.get_by_role("link", name=GOAL).click()
    page.wait_for_url(f"**/discussions/{discussion_id}")
    page.get_by_role("region", name="Discussion", exact=True).locator("li.spoken").nth(2).wait_for()
    assert "Finished after 3 of 3 turns" in page.get_by_test_id("discussion-outcome").inner_text()


def test_the_discussions_page_is_accessible_in_the_dark_theme(open_browser: Any, server: Server) -> None:
    _, key = server.new_user()
    server.api(
        "POST",
        "/api/discussions",
        key,
        json={
            "goal": GOAL,
            "turns": 2,
            "participants": [{"model": "offline", "role": "a"}, {"model": "offline", "role": "b"}],
        },
    ).raise_for_status()
    discussion_id = server.api("GET", "/api/discussions", key).json()["data"][0]["id"]
    browsing = open_browser(color_scheme="dark")
    browsing.sign_in_with_key(key)
    page = browsing.page
    page.goto(f"/discussions/{discussion_id}")
    page.get_by_role("region", name="Discussion", exact=True).locator("li.spoken").nth(1).wait_for()
    assert_accessible(page, "a stored discussion (dark)")
    page.goto("/discussions")
    page.get_by_role("form", name="New discussion").wait_for()
    assert_accessible(page, "the discussion form (dark)")


def test_a_past_discussion_is_deleted_after_a_confirmation(open_browser: Any, server: Server) -> None:
    _, key = server.new_user()
    body = {"goal": "Delete me later", "turns": 2, "participants": [{"model": "offline", "role": "a"}] * 2}
    held = server.api("POST", "/api/discussions", key, json=body).json()
    browsing = open_browser()
    browsing.sign_in_with_key(key)
    page = browsing.page
    page.goto(f"/discussions/{held['id']}")
    page.get_by_role("region", name="Discussion", exact=True).locator("li.spoken").nth(1).wait_for()
    past = page.get_by_role("region", name="Past discussions")
    past.get_by_role("button", name="Delete “Delete me later”").click()
    confirm = page.get_by_role("dialog", name="Delete this discussion?")
    confirm.get_by_role("button", name="Cancel").click()
    assert server.api("GET", f"/api/discussions/{held['id']}", key).status_code == 200
    past.get_by_role("button", name="Delete “Delete me later”").click()
    confirm.get_by_role("button", name="Delete").click()
    past.get_by_text("None yet.").wait_for()
    page.wait_for_url("**/discussions")  # it was open: back to the form
    page.get_by_role("form", name="New discussion").wait_for()
    assert server.api("GET", f"/api/discussions/{held['id']}", key).status_code == 404


@pytest.mark.parametrize("width", [390, 1280])
def test_every_participant_field_is_reachable_and_laid_out(open_browser: Any, server: Server, width: int) -> None:
    _, key = server.new_user()
    phone = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
    browsing = open_browser(**(phone if width == 390 else {}))
    browsing.sign_in_with_key(key)
    page = browsing.page
    page.goto("/discussions")
    form = page.get_by_role("form", name="New discussion")
    form.wait_for()
    page.get_by_role("button", name="Add participant").click()
    viewport = page.viewport_size["width"]
    if width == 1280:  # the roles suggested by default are shown whole, not cut off
        for index in range(3):
            role_field = page.get_by_test_id(f"participant-{index}").get_by_label("Role", exact=True)
            assert role_field.evaluate("el => el.scrollWidth <= el.clientWidth"), role_field.input_value()
    box = form.locator("fieldset.disc-participants").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= viewport  # nothing cut off
    for index in range(3):
        row = page.get_by_test_id(f"participant-{index}")
        model_box = row.get_by_label(f"Model {index + 1}").bounding_box()
        assert model_box is not None and model_box["x"] + model_box["width"] <= viewport
        for field in (row.get_by_label("Role", exact=True), row.get_by_label("Name (optional)")):
            field_box = field.bounding_box()
            assert field_box is not None and field_box["x"] + field_box["width"] <= viewport
            field.fill("x")  # reachable: it takes input
    row = page.get_by_test_id("participant-0")
    role = row.get_by_label("Role", exact=True).bounding_box()
    name = row.get_by_label("Name (optional)").bounding_box()
    model = row.get_by_label("Model 1").bounding_box()
    assert role is not None and name is not None and model is not None
    if width == 1280:
        # One row: model, role, name side by side; the role is the widest (it holds a sentence).
        def bottom(box: dict[str, float]) -> float:
            return box["y"] + box["height"]

        assert abs(bottom(role) - bottom(name)) < 2 and abs(bottom(role) - bottom(model)) < 2
        assert role["width"] > name["width"]
    else:
        assert name["y"] > role["y"] > model["y"]  # one field a line
    assert_accessible(page, f"the discussion form at {width} px")
    browsing.shot(f"29-discussion-form-{width}", full_page=True)
