"""The node inspector's re-run panel, in a real headless Chromium against a live server with the
scripted model: re-running or re-planning a finished task with instructions runs the project again,
rebuilds that task as its agents follow the instructions and leaves its sibling as it was; a
rerun the server refuses shows the server's message and changes nothing."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect
from test_dashboard import DONE_TIMEOUT, create_project, wait_completed

from sentient.agents.models.fake import FakeRequest, executor_answer

GOAL = "Write a short note on superconducting qubits and their error correction"
INSTRUCTIONS = "Quote only the 2024 vendor roadmaps."


def graph_nodes(url: str, project_id: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/api/projects/{project_id}/graph", timeout=10) as answer:
        return json.load(answer)["nodes"]  # type: ignore[no-any-return]


@pytest.fixture
def instructed_model(live_server: Any) -> Iterator[Any]:
    """The server's scripted model, its executors saying so when they are shown :data:`INSTRUCTIONS`."""
    model = live_server.model
    usual = model.script["executor"]

    def execute(request: FakeRequest) -> Any:
        if INSTRUCTIONS in request.prompt:
            return executor_answer(request, f"Finding for {request.task_id}, from the 2024 roadmaps.")
        return usual(request)

    model.script["executor"] = execute
    yield model
    model.script["executor"] = usual


def finished_project(page: Any, url: str, *, max_depth: int = 1) -> str:
    """The id of a new project on :data:`GOAL` (root -> root.0 find, root.1 write up), once completed."""
    page.goto(url)
    create_project(page, GOAL, max_depth=max_depth)
    wait_completed(page)
    expect(page.get_by_test_id("task-node")).to_have_count(3)
    return str(page.evaluate("new URLSearchParams(location.search).get('project')"))


def open_rerun_panel(page: Any, task_id: str) -> Any:
    page.locator(f"[data-task-id='{task_id}']").click()
    inspector = page.get_by_test_id("inspector")
    expect(inspector.get_by_test_id("inspector-status")).to_have_text("DONE")
    return inspector.get_by_test_id("rerun-panel")


def test_rerun_with_instructions_runs_the_task_again_and_keeps_its_sibling(
    page: Any, live_server: Any, instructed_model: Any, problems: Any, screenshot: Any
) -> None:
    url = live_server.url
    project_id = finished_project(page, url)
    before = graph_nodes(url, project_id)
    assert before["root.1"]["result"].startswith("Finding for root.1.")
    calls_before = len(instructed_model.calls)

    panel = open_rerun_panel(page, "root.1")
    expect(panel.get_by_test_id("replan-button")).to_be_visible()
    panel.get_by_test_id("rerun-instructions").fill(INSTRUCTIONS)
    screenshot(page, "rerun-panel")
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/rerun")) as sent:
        panel.get_by_test_id("rerun-button").click()
    assert sent.value.status == 202
    assert sent.value.request.post_data_json == {"replan": False, "instructions": INSTRUCTIONS}
    assert sent.value.json()["status"] == "running"

    inspector = page.get_by_test_id("inspector")
    expect(inspector.get_by_test_id("inspector-result")).to_contain_text(
        "Finding for root.1, from the 2024 roadmaps.", timeout=DONE_TIMEOUT
    )
    wait_completed(page)
    expect(panel.get_by_test_id("rerun-instructions")).to_have_value("")  # back for the next one, empty

    after = graph_nodes(url, project_id)
    assert after["root.1"]["result"].startswith("Finding for root.1, from the 2024 roadmaps.")
    assert after["root.0"]["result"] == before["root.0"]["result"], "the sibling kept its result"
    assert all(node["status"] == "DONE" for node in after.values())
    again = instructed_model.calls[calls_before:]
    assert {c.request.task_id for c in again} == {"root.1", "root"}, "only the task and the root above it ran"
    assert all(INSTRUCTIONS in c.request.prompt for c in again if c.request.role == "executor")
    stored = live_server.service.store.get_project(project_id)
    assert stored.status == "completed"
    assert stored.options["instructions"] == {"root.1": INSTRUCTIONS}
    page.locator("[data-task-id='root.0']").click()
    expect(inspector.get_by_test_id("inspector-result")).to_contain_text("Finding for root.0.")
    assert problems.errors == []


def test_replan_gives_the_task_new_subtasks_and_keeps_its_sibling(
    page: Any, live_server: Any, instructed_model: Any, problems: Any
) -> None:
    url = live_server.url
    project_id = finished_project(page, url, max_depth=2)
    before = graph_nodes(url, project_id)
    assert before["root.0"]["node_type"] == "EXECUTE"

    panel = open_rerun_panel(page, "root.0")
    panel.get_by_test_id("rerun-instructions").fill(INSTRUCTIONS)
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/rerun")) as sent:
        panel.get_by_test_id("replan-button").click()
    assert sent.value.status == 202
    assert sent.value.request.post_data_json == {"replan": True, "instructions": INSTRUCTIONS}
    assert sent.value.json()["status"] == "running"

    expect(page.get_by_test_id("task-node")).to_have_count(5, timeout=DONE_TIMEOUT)
    wait_completed(page)
    expect(page.locator("[data-task-id^='root.0.']")).to_have_count(2)

    after = graph_nodes(url, project_id)
    children = [n for n in after.values() if n["parent_id"] == "root.0"]
    assert [n["goal"] for n in children] == [
        f"Find facts about: {before['root.0']['goal']}",
        f"Write up: {before['root.0']['goal']}",
    ]
    assert after["root.0"]["node_type"] == "PLAN"
    for child in children:  # their agents were shown the task's instructions too
        assert child["result"].startswith(f"Finding for {child['task_id']}, from the 2024 roadmaps.")
    assert after["root.1"]["result"] == before["root.1"]["result"], "the sibling kept its result"
    assert all(node["status"] == "DONE" for node in after.values())
    assert problems.errors == []


def test_a_rerun_the_server_refuses_shows_its_message_and_changes_nothing(
    page: Any, live_server: Any, problems: Any
) -> None:
    url = live_server.url
    project_id = finished_project(page, url)
    before = graph_nodes(url, project_id)
    calls_before = len(live_server.model.calls)

    panel = open_rerun_panel(page, "root.1")
    panel.get_by_test_id("rerun-instructions").fill("\u200b\u200b")  # pasted, and nothing to read
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/rerun")) as sent:
        panel.get_by_test_id("rerun-button").click()
    assert sent.value.status == 400
    message = sent.value.json()["error"]["message"]

    error = panel.get_by_test_id("rerun-error")
    expect(error).to_contain_text("the instructions have no visible text")
    assert message in error.inner_text()
    expect(page.get_by_test_id("project-status")).to_have_text("completed")
    expect(panel.get_by_test_id("rerun-button")).to_be_enabled()  # the user can correct it and send again

    assert graph_nodes(url, project_id) == before
    assert len(live_server.model.calls) == calls_before, "no agent ran"
    stored = live_server.service.store.get_project(project_id)
    assert stored.status == "completed"
    assert "rerun" not in stored.options and not stored.options.get("instructions")
    # Chromium logs the refused request itself; nothing else went wrong on the page.
    assert [e for e in problems.errors if "status of 400" not in e] == []
