"""The structured answer of a run with an output schema in the report view, in a real headless
Chromium against a live server with the scripted model: its JSON as text in a code block, and the
citations of each field linked to its own references."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

from fakes.structured_answer import STRUCTURED_SCHEMA, STRUCTURED_VALUE
from playwright.sync_api import expect
from test_dashboard import wait_completed


def post(url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body or {}).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def test_the_structured_answer_is_a_json_block_with_its_citations_per_field(
    page: Any, live_server: Any, problems: Any, screenshot: Any
) -> None:
    config = {"output_schema": STRUCTURED_SCHEMA, "max_depth": 1}
    project = post(f"{live_server.url}/api/projects", {"goal": "Survey qubits for drug discovery", "config": config})
    post(f"{live_server.url}/api/projects/{project['project_id']}/execute")
    page.goto(f"{live_server.url}/?project={project['project_id']}")
    wait_completed(page)
    page.get_by_test_id("report-tab").click()

    structured = page.get_by_test_id("report-structured")
    expect(structured.locator("h2")).to_have_text("Structured answer")
    shown = json.loads(structured.locator("pre code").inner_text())
    assert shown == {"finding": "Qubits help drug discovery", "note": STRUCTURED_VALUE["note"]}
    citation = structured.locator("li", has_text="/finding").locator("a.citation")
    expect(citation).to_have_attribute("href", "#structured-ref-1")
    expect(structured.get_by_test_id("report-references").locator("li")).to_have_count(1)
    citation.click()
    expect(structured.locator('[id="structured-ref-1"]')).to_have_class(re.compile(r"\bhighlighted\b"))
    screenshot(page, "report-structured")
    assert page.evaluate("window.__xss") is None
    assert problems.errors == []
