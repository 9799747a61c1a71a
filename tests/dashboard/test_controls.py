"""The new-project form, the top bar's live totals, rejecting a plan and the graph exports, in a real
headless Chromium against a live server with the scripted model."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import expect
from test_dashboard import DONE_TIMEOUT, create_project, wait_completed


def project_json(url: str, project_id: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/api/projects/{project_id}", timeout=10) as answer:
        return json.load(answer)  # type: ignore[no-any-return]


def start_from_form(page: Any, goal: str, profile: str, max_depth: int | None = None) -> None:
    page.get_by_test_id("new-project").click()
    dialog = page.get_by_test_id("new-project-dialog")
    dialog.locator("textarea[name=goal]").fill(goal)
    dialog.locator("select[name=profile]").select_option(profile)
    if max_depth is not None:
        dialog.locator("input[name=max_depth]").fill(str(max_depth))
    dialog.get_by_role("button", name="Start research").click()
    expect(dialog).to_be_hidden()


def test_the_new_project_form_shows_the_profiles_options_and_sends_only_what_the_user_changed(
    page: Any, live_server: Any, problems: Any
) -> None:
    sent: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: sent.append(r.post_data_json) if r.method == "POST" and r.url.endswith("/api/projects") else None,
    )
    page.goto(live_server.url)
    page.get_by_test_id("new-project").click()
    dialog = page.get_by_test_id("new-project-dialog")
    depth = dialog.locator("input[name=max_depth]")
    dialog.locator("select[name=profile]").select_option("general_agent")
    expect(depth).to_have_value("1")  # general_agent's own max_depth
    dialog.locator("select[name=profile]").select_option("deep_research_agent")
    expect(depth).to_have_value("2")
    dialog.get_by_role("button", name="Cancel").click()

    start_from_form(page, "Options: the profile decides", "general_agent")
    wait_completed(page)
    start_from_form(page, "Options: the user decides", "general_agent", max_depth=2)
    wait_completed(page)

    assert [body["config"] for body in sent] == [{}, {"max_depth": 2}]
    ids = page.get_by_test_id("project-item").evaluate_all("els => els.map(e => e.dataset.projectId)")
    depths = {project_json(live_server.url, i)["goal"]: project_json(live_server.url, i)["settings"] for i in ids}
    assert depths["Options: the profile decides"]["max_depth"] == 1
    assert depths["Options: the user decides"]["max_depth"] == 2
    assert problems.errors == []


def test_the_form_sends_a_language_model_and_offline_only_when_the_user_sets_them(
    page: Any, live_server: Any, problems: Any
) -> None:
    sent: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: sent.append(r.post_data_json) if r.method == "POST" and r.url.endswith("/api/projects") else None,
    )
    page.goto(live_server.url)
    page.get_by_test_id("new-project").click()
    dialog = page.get_by_test_id("new-project-dialog")
    dialog.locator("textarea[name=goal]").fill("Choices: the user sets them")
    dialog.locator("select[name=profile]").select_option("general_agent")
    dialog.locator("input[name=language]").fill("de")
    dialog.locator("input[name=model]").fill("scripted")
    dialog.locator("input[name=offline]").check()
    dialog.locator("input[name=max_depth]").fill("0")
    dialog.locator("input[name=max_depth]").fill("1")  # changed, then back to the profile's
    dialog.get_by_role("button", name="Start research").click()
    expect(dialog).to_be_hidden()
    wait_completed(page)

    assert [body["config"] for body in sent] == [{"language": "de", "model": "scripted", "offline": True}]
    (project_id,) = page.get_by_test_id("project-item").evaluate_all(
        "els => els.filter(e => e.textContent.includes('Choices: the user sets them')).map(e => e.dataset.projectId)"
    )
    stored = project_json(live_server.url, project_id)
    assert stored["choices"] == {"model": "scripted", "offline": True, "docs": None}
    assert stored["settings"]["language"] == "de" and stored["settings"]["max_depth"] == 1  # the profile's
    assert problems.errors == []


def test_the_top_bar_counts_live_while_a_project_runs(page: Any, live_server: Any, problems: Any) -> None:
    page.goto(live_server.url)
    create_project(page, "Live totals: survey qubit vendors", review="root")
    page.get_by_test_id("review-dialog").get_by_label("Close (decide later)").click()

    # Waiting for its plan review: running, with the root only, planned by one call.
    expect(page.get_by_test_id("project-status")).to_have_text("running")
    expect(page.get_by_test_id("stat-nodes")).to_have_text("1 node")
    expect(page.get_by_test_id("stat-calls")).not_to_have_text("0 calls")
    expect(page.get_by_test_id("stat-tokens")).not_to_have_text("0 / 0 tok")
    elapsed = page.get_by_test_id("stat-elapsed")
    expect(elapsed).not_to_have_text("0 ms")
    before = elapsed.inner_text()
    expect(elapsed).not_to_have_text(before)  # it ticks while the run waits

    page.get_by_test_id("open-review").click()
    page.get_by_test_id("approve-plan").click()
    expect(page.get_by_test_id("stat-nodes")).to_have_text("3 nodes", timeout=DONE_TIMEOUT)
    wait_completed(page)
    project_id = page.evaluate("new URLSearchParams(location.search).get('project')")
    stats = project_json(live_server.url, project_id)["stats"]
    expect(page.get_by_test_id("stat-calls")).to_have_text(f"{stats['agent_calls']} calls")
    recorded = elapsed.inner_text()
    page.wait_for_timeout(1200)
    assert elapsed.inner_text() == recorded  # an ended run shows what it recorded, no longer ticking
    assert problems.errors == []


def test_rejecting_the_root_plan_warns_first_then_cancels_the_project_with_the_reason(
    page: Any, live_server: Any, problems: Any, screenshot: Any
) -> None:
    page.goto(live_server.url)
    create_project(page, "Reject: a plan the reviewer refuses", review="root")
    dialog = page.get_by_test_id("review-dialog")
    dialog.get_by_test_id("reject-plan").click()

    warning = dialog.get_by_test_id("reject-warning")
    expect(warning).to_contain_text("ends the project: it is cancelled")
    confirm = dialog.get_by_test_id("send-reject")
    expect(confirm).to_have_text("Reject and cancel the project")
    expect(confirm).to_be_disabled()  # a reason first
    dialog.get_by_test_id("review-reason").fill("too shallow")
    screenshot(page, "plan-review-reject")
    confirm.click()

    expect(dialog).to_be_hidden()
    expect(page.get_by_test_id("project-status")).to_have_text("cancelled", timeout=DONE_TIMEOUT)
    expect(page.get_by_test_id("project-error")).to_have_text("plan rejected by reviewer: too shallow")
    expect(page.get_by_test_id("resume-project")).to_be_visible()
    page.get_by_test_id("report-tab").click()
    expect(page.get_by_test_id("report-partial")).to_contain_text("plan rejected by reviewer: too shallow")
    assert problems.errors == []


# Every edge of the exported image inside it, and every goal line inside its node: measured in
# Chromium with the fonts it draws the image in.
MEASURE_SVG = """svg => {
  const host = document.createElement('div');
  host.innerHTML = svg;
  document.body.appendChild(host);
  const image = host.querySelector('svg');
  const [, , width, height] = image.getAttribute('viewBox').split(' ').map(Number);
  const outside = [];
  for (const path of image.querySelectorAll('path.tree-edge, path.dependency-edge')) {
    const b = path.getBBox();
    if (b.x < 0 || b.y < 0 || b.x + b.width > width || b.y + b.height > height) outside.push(path.getAttribute('d'));
  }
  const overflowing = [];
  for (const text of image.querySelectorAll('text.goal')) {
    const box = text.parentElement.querySelector('rect').getBBox();
    const b = text.getBBox();
    if (b.x + b.width > box.x + box.width - 6) overflowing.push(text.textContent);
  }
  const goals = [...image.querySelectorAll('g')].map(g => [...g.querySelectorAll('text.goal')].map(t => t.textContent));
  const edges = image.querySelectorAll('path.dependency-edge').length;
  host.remove();
  return {outside, overflowing, goals, edges};
}"""


def test_graph_export_draws_every_dependency_edge_and_wraps_goals_between_words(
    page: Any, live_server: Any, problems: Any
) -> None:
    goal = "Compare Python concurrency libraries for asynchronous networking applications in production"
    page.goto(live_server.url)
    create_project(page, goal)
    wait_completed(page)
    with page.expect_download() as download:
        page.get_by_test_id("export-svg").click()
    svg = Path(download.value.path()).read_text(encoding="utf-8")

    measured = page.evaluate(MEASURE_SVG, svg)
    assert measured["edges"] == 1  # "Write up" depends on "Find facts"
    assert measured["outside"] == []
    assert measured["overflowing"] == []
    words = goal.split()
    [root_lines] = [lines for lines in measured["goals"] if lines and lines[0].startswith(words[0])]
    shown = " ".join(root_lines).removesuffix(" …").split()
    assert shown == words[: len(shown)] and len(shown) >= 4  # whole words, in order
    with page.expect_download() as png:
        page.get_by_test_id("export-png").click()
    assert Path(png.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert problems.errors == []
