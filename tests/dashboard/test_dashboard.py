"""The dashboard in a real headless Chromium against a live server with the scripted model."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path
from typing import Any

import docx
import pypdf
from playwright.sync_api import expect

from sentient.context.grounding import VERIFIED_MEANS

DONE_TIMEOUT = 30_000


def create_project(page: Any, goal: str, *, review: str = "none", max_depth: int = 1) -> None:
    page.get_by_test_id("new-project").click()
    dialog = page.get_by_test_id("new-project-dialog")
    dialog.locator("textarea[name=goal]").fill(goal)
    dialog.locator("input[name=max_depth]").fill(str(max_depth))
    dialog.locator("select[name=review]").select_option(review)
    dialog.get_by_role("button", name="Start research").click()
    expect(dialog).to_be_hidden()


def wait_completed(page: Any) -> None:
    expect(page.get_by_test_id("project-status")).to_have_text("completed", timeout=DONE_TIMEOUT)


def test_create_project_and_watch_nodes_appear_and_complete(
    page: Any, live_server: Any, problems: Any, screenshot: Any
) -> None:
    page.goto(live_server.url)
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "connected")
    create_project(page, "Research quantum computing in healthcare")

    nodes = page.get_by_test_id("task-node")
    expect(nodes.first).to_be_visible()  # the root appears while the run is going
    expect(nodes).to_have_count(3, timeout=DONE_TIMEOUT)
    wait_completed(page)
    for status in nodes.evaluate_all("els => els.map(e => e.dataset.status)"):
        assert status == "DONE"
    item = page.get_by_test_id("project-item").filter(has_text="Research quantum computing in healthcare")
    expect(item).to_have_attribute("data-status", "completed")
    screenshot(page, "graph")
    assert problems.errors == []


def test_open_node_shows_goal_status_prompt_and_sources(
    page: Any, live_server: Any, problems: Any, screenshot: Any
) -> None:
    page.goto(live_server.url)
    create_project(page, "Compare qubit technologies")
    wait_completed(page)

    page.locator("[data-task-id='root.0']").click()
    inspector = page.get_by_test_id("inspector")
    expect(inspector.get_by_test_id("inspector-goal")).to_contain_text("Compare qubit technologies")
    expect(inspector.get_by_test_id("inspector-status")).to_have_text("DONE")
    expect(inspector.get_by_test_id("status-timeline")).to_contain_text("EXECUTING")
    expect(inspector.get_by_test_id("inspector-result")).to_contain_text("Finding for root.0")
    call = inspector.get_by_test_id("agent-call").first
    expect(call).to_contain_text("executor")
    expect(call.get_by_test_id("call-prompt")).to_contain_text("Compare qubit technologies")
    expect(call.get_by_test_id("call-response")).to_contain_text("Finding for root.0")
    expect(inspector.locator(".sources li").first).to_be_visible()
    screenshot(page, "node-inspector")

    # Collapse the root's subtree, then expand it again.
    page.locator("[data-task-id='root'] .collapse-toggle").click()
    expect(page.get_by_test_id("task-node")).to_have_count(1)
    page.locator("[data-task-id='root'] .collapse-toggle").click()
    expect(page.get_by_test_id("task-node")).to_have_count(3)
    assert problems.errors == []


def test_plan_review_approve(page: Any, live_server: Any, problems: Any, screenshot: Any) -> None:
    page.goto(live_server.url)
    create_project(page, "Survey hospital imaging AI", review="root")

    dialog = page.get_by_test_id("review-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_test_id("plan-subtask")).to_have_count(2)
    expect(dialog).to_contain_text("Find facts about: Survey hospital imaging AI")
    item = page.get_by_test_id("project-item").filter(has_text="Survey hospital imaging AI")
    expect(item.get_by_test_id("pending-review-badge")).to_be_visible(timeout=10_000)
    screenshot(page, "plan-review")

    dialog.get_by_test_id("approve-plan").click()
    expect(dialog).to_be_hidden()
    wait_completed(page)
    expect(page.get_by_test_id("task-node")).to_have_count(3)
    expect(item.get_by_test_id("pending-review-badge")).to_be_hidden(timeout=10_000)
    assert problems.errors == []


def test_plan_review_edit_shows_invalid_edits_and_sends_a_valid_one(
    page: Any, live_server: Any, problems: Any, screenshot: Any
) -> None:
    posted: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if r.method == "POST" and "/api/reviews/" in r.url else None)
    page.goto(live_server.url)
    create_project(page, "Map quantum sensing startups", review="root")

    dialog = page.get_by_test_id("review-dialog")
    dialog.get_by_test_id("edit-plan").click()
    send = dialog.get_by_test_id("send-edited-plan")

    # A forward dependency and an empty goal are shown, and the plan cannot be sent.
    dialog.get_by_label("Dependencies of subtask 0").fill("1")
    dialog.get_by_label("Goal of subtask 1").fill("  ")
    problems_box = dialog.get_by_test_id("plan-problems")
    expect(problems_box).to_contain_text("subtask 0 depends on later subtask 1")
    expect(problems_box).to_contain_text("subtask 1 has an empty goal")
    expect(send).to_be_disabled()
    dialog.get_by_label("Dependencies of subtask 0").fill("0")
    expect(problems_box).to_contain_text("subtask 0 depends on itself")
    dialog.get_by_label("Dependencies of subtask 1").fill("7")
    expect(problems_box).to_contain_text("subtask 1 depends on 7, which does not exist")
    screenshot(page, "plan-review-invalid-edit")

    # Fix it: new goals and types, a third subtask that depends on both, then remove one.
    dialog.get_by_label("Dependencies of subtask 0").fill("")
    dialog.get_by_label("Goal of subtask 0").fill("List quantum sensing startups")
    dialog.get_by_label("Type of subtask 0").select_option("SEARCH")
    dialog.get_by_label("Goal of subtask 1").fill("Assess their funding")
    dialog.get_by_label("Type of subtask 1").select_option("THINK")
    dialog.get_by_label("Dependencies of subtask 1").fill("0")
    dialog.get_by_role("button", name="+ Add subtask").click()
    dialog.get_by_label("Goal of subtask 2").fill("Temporary subtask")
    dialog.get_by_role("button", name="+ Add subtask").click()
    dialog.get_by_label("Goal of subtask 3").fill("Write the market map")
    dialog.get_by_label("Type of subtask 3").select_option("WRITE")
    dialog.get_by_label("Dependencies of subtask 3").fill("0, 1, 2")
    dialog.get_by_role("button", name="Remove subtask 2").click()
    expect(dialog.get_by_label("Dependencies of subtask 2")).to_have_value("0, 1")
    expect(problems_box).to_be_hidden()
    assert posted == []  # nothing was sent while the plan was invalid

    send.click()
    expect(dialog).to_be_hidden()
    wait_completed(page)
    nodes = page.get_by_test_id("task-node")
    expect(nodes).to_have_count(4)
    expect(page.locator("[data-task-id='root.0']")).to_contain_text("List quantum sensing startups")
    expect(page.locator("[data-task-id='root.1']")).to_contain_text("THINK")
    expect(page.locator("[data-task-id='root.2']")).to_contain_text("Write the market map")
    page.locator("[data-task-id='root.2']").click()
    expect(page.get_by_test_id("inspector")).to_contain_text("root.0, root.1")
    assert len(posted) == 1
    assert problems.errors == []


def test_report_renders_with_clickable_references_and_downloads(
    page: Any, live_server: Any, problems: Any, screenshot: Any
) -> None:
    report = finished_report(page, live_server.url, "Summarise quantum drug discovery")
    expect(report.locator("h1.report-title")).to_have_text("Summarise quantum drug discovery")
    expect(report).to_contain_text("Summary of root")
    expect(page.get_by_test_id("report-partial")).to_have_count(0)
    citation = report.locator("a.citation").first
    expect(citation).to_have_text("1")
    reference = report.locator("#ref-1")
    expect(reference).to_be_attached()
    # The reference comes from the report's JSON, with its verification: the executor quoted its source.
    expect(reference).to_have_attribute("data-verified", "true")
    expect(reference.locator(".badge")).to_have_text("verified")
    expect(report.get_by_test_id("report-verified-means")).to_contain_text("judged that it supports the answer")
    expect(report.get_by_test_id("report-missing")).to_have_count(0)
    expect(report.get_by_test_id("report-unconfirmed")).to_have_count(0)
    citation.click()
    expect(reference).to_have_class(re.compile(r"\bhighlighted\b"))
    expect(reference).to_be_in_viewport()
    screenshot(page, "report")

    with page.expect_download() as markdown:
        page.get_by_test_id("download-md").click()
    assert "Summary of root" in Path(markdown.value.path()).read_text(encoding="utf-8")
    with page.expect_download() as html:
        page.get_by_test_id("download-html").click()
    assert "<" in Path(html.value.path()).read_text(encoding="utf-8")
    with page.expect_download() as as_json:
        page.get_by_test_id("download-json").click()
    downloaded = json.loads(Path(as_json.value.path()).read_text(encoding="utf-8"))
    assert "Summary of root" in downloaded["markdown"] and downloaded["references"][0]["verified"] is True
    with page.expect_download() as pdf:
        page.get_by_test_id("download-pdf").click()
    assert pdf.value.suggested_filename.endswith("-report.pdf")
    reader = pypdf.PdfReader(pdf.value.path())
    text = " ".join(" ".join(p.extract_text() for p in reader.pages).split())
    assert text.startswith("Summarise quantum drug discovery") and "Summary of root" in text
    assert "References" in text and VERIFIED_MEANS in text
    with page.expect_download() as word:
        page.get_by_test_id("download-docx").click()
    assert word.value.suggested_filename.endswith("-report.docx")
    texts = [p.text for p in docx.Document(word.value.path()).paragraphs]
    assert texts[0] == "Summarise quantum drug discovery" and "References" in texts and VERIFIED_MEANS in texts

    page.get_by_role("button", name="Graph", exact=True).click()
    with page.expect_download() as graph_json:
        page.get_by_test_id("export-json").click()
    exported = json.loads(Path(graph_json.value.path()).read_text(encoding="utf-8"))
    assert set(exported["nodes"]) == {"root", "root.0", "root.1"}
    with page.expect_download() as svg:
        page.get_by_test_id("export-svg").click()
    assert Path(svg.value.path()).read_text(encoding="utf-8").startswith("<svg")
    with page.expect_download() as png:
        page.get_by_test_id("export-png").click()
    assert Path(png.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert problems.errors == []


def finished_report(page: Any, url: str, goal: str) -> Any:
    """The report tab's body of a new project on ``goal``, once it has completed."""
    page.goto(url)
    create_project(page, goal)
    wait_completed(page)
    page.get_by_test_id("report-tab").click()
    return page.get_by_test_id("report-body")


def test_an_answer_no_source_confirms_is_marked_in_the_report(page: Any, live_server: Any, problems: Any) -> None:
    report = finished_report(page, live_server.url, "UNSOURCED guess about qubit vendors")
    expect(report).to_contain_text("Summary of root, from memory.")
    expect(report.get_by_test_id("report-references")).to_have_count(0)
    expect(report.get_by_test_id("report-unconfirmed")).to_contain_text("Not confirmed by the sources")
    assert problems.errors == []


def test_partial_report_shows_its_finished_section_what_is_missing_and_why(
    page: Any, live_server: Any, problems: Any, screenshot: Any
) -> None:
    body = {"goal": "UNFINISHED survey of qubit vendors", "config": {"max_depth": 1, "failure_policy": "continue"}}
    project_id = post_json(f"{live_server.url}/api/projects", body)["project_id"]
    post_json(f"{live_server.url}/api/projects/{project_id}/execute", {})
    page.goto(f"{live_server.url}/?project={project_id}")
    expect(page.get_by_test_id("project-status")).to_have_text("failed", timeout=DONE_TIMEOUT)

    page.get_by_test_id("report-tab").click()
    expect(page.get_by_test_id("report-partial")).to_contain_text("aggregator offline")
    report = page.get_by_test_id("report-body")
    expect(report.locator("h1")).to_have_text("UNFINISHED survey of qubit vendors")
    section = report.get_by_test_id("report-section")
    expect(section).to_have_count(1)
    expect(section).to_contain_text("Finding for root.0")
    reference = section.locator("[id='root.0-ref-1']")
    expect(reference).to_have_attribute("data-verified", "true")
    section.locator("a.citation").first.click()
    expect(reference).to_have_class(re.compile(r"\bhighlighted\b"))
    missing = report.get_by_test_id("report-missing")
    expect(missing).to_contain_text("root.1")
    expect(missing).to_contain_text("search backend down")
    screenshot(page, "report-partial")
    assert problems.errors == []


def test_a_partial_report_shows_the_unconfirmed_direct_answer_of_a_question(
    page: Any, live_server: Any, problems: Any
) -> None:
    # Answered first from memory, then planned: one subtask and the aggregator fail.
    goal = "Which qubit vendors lead? UNFINISHED and UNSOURCED"
    body = {"goal": goal, "config": {"max_depth": 1, "failure_policy": "continue"}}
    project_id = post_json(f"{live_server.url}/api/projects", body)["project_id"]
    post_json(f"{live_server.url}/api/projects/{project_id}/execute", {})
    page.goto(f"{live_server.url}/?project={project_id}")
    expect(page.get_by_test_id("project-status")).to_have_text("failed", timeout=DONE_TIMEOUT)

    page.locator("[data-task-id='root']").click()
    inspector = page.get_by_test_id("inspector")
    expect(inspector.get_by_test_id("inspector-result-heading")).to_have_text(
        "Unconfirmed direct answer (the question was then planned)"
    )
    expect(inspector.get_by_test_id("inspector-result")).to_contain_text("Finding for root, from memory.")

    page.get_by_test_id("report-tab").click()
    report = page.get_by_test_id("report-body")
    answer = report.get_by_test_id("report-direct-answer")
    expect(answer).to_contain_text("Finding for root, from memory.")
    expect(answer.get_by_test_id("report-unconfirmed")).to_contain_text("Not confirmed by the sources")
    expect(report.get_by_test_id("report-section")).to_contain_text("Finding for root.0, from memory.")
    assert problems.errors == []


def post_json(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)  # type: ignore[no-any-return]


def test_llm_html_and_script_render_as_text_and_run_nothing(
    page: Any, live_server: Any, problems: Any, screenshot: Any
) -> None:
    page.goto(live_server.url)
    create_project(page, "XSS probe: summarise untrusted pages")
    wait_completed(page)

    page.locator("[data-task-id='root.0']").click()
    result = page.get_by_test_id("inspector-result")
    expect(result).to_contain_text('<img src=x onerror="window.__xss')
    expect(result).to_contain_text("<script>window.__xss")
    assert result.locator("img, script").count() == 0

    page.get_by_test_id("report-tab").click()
    report = page.get_by_test_id("report-body")
    expect(report).to_contain_text("<img src=x onerror=")
    expect(report).to_contain_text("<script>")
    screenshot(page, "report-untrusted-html")
    assert page.locator(".markdown img, .markdown script, .markdown iframe").count() == 0
    # The HTML download escapes it too.
    html = page.evaluate(
        "async () => (await fetch(`/api/projects/${new URLSearchParams(location.search).get('project')}"
        "/report?format=html`)).text()"
    )
    assert "<script>window" not in html
    assert "<img src=x" not in html
    page.wait_for_timeout(300)
    assert page.evaluate("window.__xss") is None
    assert problems.dialogs == []


def test_token_is_asked_once_and_sent_on_rest_and_socket(
    page: Any, token_server: Any, problems: Any, screenshot: Any
) -> None:
    page.goto(token_server.url)
    prompt = page.get_by_test_id("token-prompt")
    expect(prompt).to_be_visible()
    screenshot(page, "token-prompt")
    prompt.get_by_label("API token").fill(token_server.token or "")
    prompt.get_by_role("button", name="Connect").click()
    expect(prompt).to_be_hidden()
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "connected")

    create_project(page, "Token-protected research")
    wait_completed(page)
    expect(page.get_by_test_id("task-node")).to_have_count(3)
    page.reload()  # the token is kept for the tab: no second prompt
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "connected")
    expect(page.get_by_test_id("project-item").first).to_be_visible()
    expect(prompt).to_be_hidden()
    # Only the 401s from before the token was given are logged as errors.
    assert all("401" in e or "unauthorized" in e.lower() for e in problems.errors)


def test_reconnect_catches_up_from_a_snapshot(page: Any, live_server: Any, problems: Any, screenshot: Any) -> None:
    page.goto(live_server.url)
    create_project(page, "Reconnect: what changed while offline", review="root")
    dialog = page.get_by_test_id("review-dialog")
    expect(dialog).to_be_visible()
    review_id = page.evaluate(
        "async () => (await (await fetch(`/api/projects/${new URLSearchParams(location.search).get('project')}"
        "/reviews`)).json()).reviews[0].review_id"
    )

    page.context.set_offline(True)
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "reconnecting", timeout=30_000)
    screenshot(page, "reconnecting")
    # The run goes on without this browser: approve from another client and let it finish.
    request = urllib.request.Request(
        f"{live_server.url}/api/reviews/{review_id}",
        data=json.dumps({"action": "approve"}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200
    deadline = time.monotonic() + 30
    project_id = page.evaluate("new URLSearchParams(location.search).get('project')")
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{live_server.url}/api/projects/{project_id}", timeout=10) as answer:
            if json.load(answer)["status"] == "completed":
                break
        time.sleep(0.2)

    page.context.set_offline(False)
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "connected", timeout=30_000)
    expect(page.get_by_test_id("project-status")).to_have_text("completed")
    expect(page.get_by_test_id("task-node")).to_have_count(3)
    for status in page.get_by_test_id("task-node").evaluate_all("els => els.map(e => e.dataset.status)"):
        assert status == "DONE"
    expect(dialog).to_be_hidden()


def test_cancel_resume_and_delete_a_project(page: Any, live_server: Any, problems: Any) -> None:
    page.goto(live_server.url)
    create_project(page, "Lifecycle: cancel, resume, delete", review="root")
    expect(page.get_by_test_id("review-dialog")).to_be_visible()
    page.get_by_label("Close (decide later)").click()
    expect(page.get_by_test_id("open-review")).to_be_visible()  # still reachable from the top bar

    page.get_by_test_id("cancel-project").click()
    status = page.get_by_test_id("project-status")
    expect(status).to_have_text("cancelled")
    page.get_by_test_id("resume-project").click()
    expect(status).to_have_text("running")
    expect(page.get_by_test_id("review-dialog")).to_be_visible()
    page.get_by_label("Close (decide later)").click()

    item = page.get_by_test_id("project-item").filter(has_text="Lifecycle: cancel, resume, delete")
    page.get_by_test_id("delete-project").click()
    page.get_by_test_id("confirm-delete").click()
    expect(item).to_have_count(0)
    expect(status).to_be_hidden()
    assert problems.errors == []
