"""The follow-up box under the report, in a real headless Chromium against a live server with the
scripted model: a question asked there is answered as a thread under the report, with its own
references, and the report itself stays as it was."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from test_dashboard import DONE_TIMEOUT, finished_report


def test_a_followup_asked_under_the_report_is_answered_as_a_thread_with_its_references(
    page: Any, live_server: Any, problems: Any, screenshot: Any
) -> None:
    report = finished_report(page, live_server.url, "Survey quantum computing in healthcare")
    before = report.inner_text()
    box = page.get_by_test_id("followups")
    expect(box.get_by_test_id("followup-thread")).to_have_count(0)

    box.get_by_test_id("followup-question").fill("Which quantum algorithms help drug discovery?")
    box.get_by_test_id("followup-ask").click()

    thread = box.get_by_test_id("followup-thread")
    expect(thread).to_have_count(1)
    expect(thread.locator("h3")).to_have_text("Which quantum algorithms help drug discovery?")
    expect(thread.get_by_test_id("report-text")).to_contain_text("Finding for root", timeout=DONE_TIMEOUT)
    expect(thread.get_by_test_id("report-references").locator("li").first).to_have_attribute("data-verified", "true")
    expect(box.get_by_test_id("followup-question")).to_have_value("")
    assert report.inner_text() == before, "the report is left as it was"
    screenshot(page, "report-followup")
    assert problems.errors == []
