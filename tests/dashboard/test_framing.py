"""Frame protection, the dashboard's CSP and bidi controls, in a real headless Chromium."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.sync_api import expect

from sentient.text import BIDI_CONTROLS


@pytest.fixture
def attacker() -> Iterator[Any]:
    """A page on another origin that frames whatever URL it is given (``/?src=...``)."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            src = self.path.split("src=", 1)[1] if "src=" in self.path else ""
            body = f'<!doctype html><title>evil</title><iframe id="victim" src="{src}"></iframe>'.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def framed_content(page: Any, attacker: Any, src: str) -> str:
    """Load the attacker's page framing ``src``; return what the frame shows (empty if blocked)."""
    page.goto(f"http://localhost:{attacker.server_port}/?src={src}")
    page.wait_for_load_state("load")
    frame = page.frame_locator("#victim")
    page.wait_for_timeout(500)  # the frame's navigation settles (allowed or refused)
    child = next((f for f in page.frames if f != page.main_frame), None)
    if child is None or child.url.startswith("chrome-error://") or child.url == "about:blank":
        return ""
    del frame
    return str(child.evaluate("document.documentElement.outerHTML"))


def create_with_api(url: str, goal: str) -> str:
    body = json.dumps({"goal": goal, "profile": "general_agent", "config": {"max_depth": 1}}).encode()
    request = urllib.request.Request(url + "/api/projects", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        pid = json.load(response)["project_id"]
    execute = urllib.request.Request(url + f"/api/projects/{pid}/execute", b"", method="POST")
    urllib.request.urlopen(execute, timeout=10).close()
    return str(pid)


def test_the_dashboard_and_reports_cannot_be_framed_by_another_origin(
    page: Any, live_server: Any, attacker: Any, problems: Any
) -> None:
    pid = create_with_api(live_server.url, "Framing test goal")
    targets = [live_server.url + "/", live_server.url + f"/api/projects/{pid}/report?format=html"]
    for target in targets:
        html = framed_content(page, attacker, target)
        assert "Sentient" not in html and "Framing test goal" not in html, target
    # The same pages open normally at the top level.
    page.goto(live_server.url)
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "connected")


def test_the_dashboard_runs_under_its_csp_without_violations(page: Any, live_server: Any, problems: Any) -> None:
    response = page.goto(live_server.url)
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src", 1)[1].split(";")[0]
    assert response.headers["x-frame-options"] == "DENY"
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "connected")
    pid = create_with_api(live_server.url, "CSP check of the dashboard")
    page.goto(f"{live_server.url}/?project={pid}")
    expect(page.get_by_test_id("project-status")).to_have_text("completed", timeout=30_000)
    assert not [e for e in problems.errors if "Content Security Policy" in e], problems.errors


def test_bidi_controls_in_a_goal_are_not_rendered(page: Any, live_server: Any, problems: Any) -> None:
    goal = "Invoice \u202egpj.exe\u202c review \u2066isolated\u2069 \u200fmark"
    pid = create_with_api(live_server.url, goal)
    page.goto(f"{live_server.url}/?project={pid}")
    expect(page.get_by_test_id("project-status")).to_have_text("completed", timeout=30_000)
    text = page.inner_text("body")
    assert "Invoice gpj.exe review isolated mark" in text
    assert not set(BIDI_CONTROLS) & set(text)
