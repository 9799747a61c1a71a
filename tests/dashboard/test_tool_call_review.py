"""Tool call approval in a real headless Chromium against a live server: a call of a tool marked
confirm: true waits as a review of its own kind, shown with the tool and its arguments (as text),
approved or refused, never edited as a plan."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from playwright.sync_api import expect

from sentient.tools.confirm import call_review

ARGUMENTS = {"order": "A-7", "note": '<img src=x onerror="window.__xss = 1">'}


def waiting_call(live_server: Any) -> tuple[str, str]:
    """A project whose agent waits for approval of one call (as a run with a confirmed tool asks)."""
    body = json.dumps({"goal": "Refund order A-7"}).encode()
    created = urllib.request.Request(
        f"{live_server.url}/api/projects", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(created, timeout=10) as answer:
        project_id = json.load(answer)["project_id"]
    review = live_server.service.open_review(project_id, call_review("root.1", "refund", ARGUMENTS), None)
    return project_id, review.review_id


def test_a_tool_call_is_shown_with_its_arguments_and_refused_with_a_reason(
    page: Any, live_server: Any, problems: Any, screenshot: Any
) -> None:
    project_id, review_id = waiting_call(live_server)
    page.goto(f"{live_server.url}/?project={project_id}")

    dialog = page.get_by_role("dialog", name="Tool call approval")
    expect(dialog).to_be_visible()
    expect(page.get_by_test_id("open-review")).to_have_text("Approve tool call (1)")
    expect(dialog.get_by_test_id("tool-call-tool")).to_have_text("refund")
    shown = json.loads(dialog.get_by_test_id("tool-call-arguments").inner_text())
    assert shown == ARGUMENTS, "the arguments as text, markup included"
    expect(dialog.get_by_test_id("plan-table")).to_have_count(0)
    expect(dialog.get_by_test_id("edit-plan")).to_have_count(0)
    dialog.get_by_test_id("review-reason").fill("wrong customer")
    screenshot(page, "tool-call-approval")
    dialog.get_by_test_id("refuse-call").click()

    expect(dialog).to_be_hidden()
    expect(page.get_by_test_id("open-review")).to_have_count(0)
    decision = live_server.service.review(review_id).decision
    assert (decision.action, decision.reason) == ("reject", "wrong customer")
    assert page.evaluate("window.__xss") is None
    assert problems.errors == []


def test_a_tool_call_is_approved_from_the_dialog(page: Any, live_server: Any, problems: Any) -> None:
    project_id, review_id = waiting_call(live_server)
    page.goto(f"{live_server.url}/?project={project_id}")

    page.get_by_role("dialog", name="Tool call approval").get_by_test_id("approve-call").click()

    expect(page.get_by_test_id("review-dialog")).to_be_hidden()
    assert live_server.service.review(review_id).decision.action == "approve"
    assert problems.errors == []
