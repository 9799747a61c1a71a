"""Browser-test fixtures: a live ``sentient_server`` on 127.0.0.1 driven by the ScriptedModel, and a real
headless Chromium (the Debian package, driven by Playwright) pointed at it.

The scripted model answers by goal keyword, so one server serves every test:
- goals containing "XSS" get executor/aggregator answers with ``<img onerror>`` and ``<script>``;
- every answer cites ``[1]``, so reports have clickable numbered references, except in goals
  containing "UNSOURCED", whose answers cite nothing (the report says no source confirms them);
- goals containing "UNFINISHED": the executor of ``root.1`` and the root's aggregator fail, so
  (with the failure policy "continue") the report is partial, with a section and a missing part;
- a run with an output schema gets :data:`STRUCTURED_VALUE` as its structured answer.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

playwright_sync = pytest.importorskip("playwright.sync_api")

from fakes.structured_answer import STRUCTURED_VALUE  # noqa: E402

from sentient.agents.models.fake import FakeRequest, ScriptedModel, default_response, executor_answer  # noqa: E402
from sentient.agents.schemas import AggregationOutput  # noqa: E402
from sentient.projects import ProjectService  # noqa: E402
from sentient.settings import Settings  # noqa: E402

CHROMIUM = os.environ.get("SENTIENT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "dashboard" / "dist"
SCREENSHOTS = REPO / "project_results" / "dashboard-screenshots"

XSS_PAYLOAD = (
    'Beware <img src=x onerror="window.__xss = (window.__xss || 0) + 1"> and '
    "<script>window.__xss = (window.__xss || 0) + 1</script> in results [1]."
)

UNFINISHED_FAILURES = {("executor", "root.1"): "search backend down", ("aggregator", "root"): "aggregator offline"}


def scripted_answer(request: FakeRequest) -> Any:
    """Default plans and atomizer answers; executor (quoting its first source) and aggregator answers that cite [1]."""
    xss = "XSS" in request.goal or "XSS" in request.prompt
    if "UNFINISHED" in request.prompt and (request.role, request.task_id) in UNFINISHED_FAILURES:
        return RuntimeError(UNFINISHED_FAILURES[request.role, request.task_id])
    unsourced = "UNSOURCED" in request.goal or "UNSOURCED" in request.prompt
    if request.role == "executor" and unsourced:
        return executor_answer(request, f"Finding for {request.task_id}, from memory.", sourced=False)
    if request.role == "executor":
        return executor_answer(request, XSS_PAYLOAD if xss else f"Finding for {request.task_id}.")
    if request.role == "aggregator" and "StructuredOutput" in str(request.response_format):
        return STRUCTURED_VALUE
    if request.role == "aggregator":
        text = XSS_PAYLOAD if xss else f"Summary of {request.task_id}, drawing on the evidence [1]."
        return AggregationOutput(answer=f"Summary of {request.task_id}, from memory." if unsourced else text)
    return default_response(request)


@dataclass
class LiveServer:
    url: str
    model: ScriptedModel
    token: str | None
    service: ProjectService  # the server's own, to put a project in a state no scripted run reaches


def _start_server(tmp: Path, token: str | None) -> tuple[LiveServer, Callable[[], None]]:
    from werkzeug.serving import make_server

    from sentient_server.app import create_app, shutdown
    from sentient_server.config import ServerSettings

    docs = tmp / "docs"
    docs.mkdir()
    (docs / "quantum.md").write_text("# Quantum computing\n\nQubits enable new algorithms for drug discovery.\n")
    (docs / "healthcare.md").write_text("# Healthcare\n\nHospitals analyse imaging data and patient records.\n")
    model = ScriptedModel(
        latency=0.15,
        script={role: scripted_answer for role in ("planner", "plan_modifier", "atomizer", "executor", "aggregator")},
    )
    config = ServerSettings(
        host="127.0.0.1",
        port=0,
        api_token=token,
        model=model,
        docs=docs,
        resume_on_start=False,
        sentient=Settings(results_dir=tmp / "results", cache_dir=tmp / "cache"),
        dashboard_dir=DIST,
    )
    app = create_app(config)
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, name="dashboard-test-server", daemon=True)
    thread.start()

    def stop() -> None:
        shutdown(app)
        httpd.shutdown()
        thread.join(timeout=10)
        httpd.server_close()

    service = app.extensions["sentient"].runs.service
    return LiveServer(f"http://127.0.0.1:{httpd.server_port}", model, token, service), stop


# Module scope, not session: Playwright's sync API keeps an asyncio loop running in the main
# thread while it is alive, which would break every async test collected after these.
@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    if not (DIST / "index.html").is_file():
        pytest.fail("dashboard/dist is missing: run dashboard/build.sh")
    server, stop = _start_server(tmp_path_factory.mktemp("dash-server"), token=None)
    yield server
    stop()


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server, stop = _start_server(tmp_path_factory.mktemp("dash-token"), token="s3cret-token-for-tests-only")
    yield server
    stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).is_file():
        message = f"{CHROMIUM} not found: apt-get install -y chromium"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with playwright_sync.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@dataclass
class PageProblems:
    errors: list[str]
    dialogs: list[str]


@pytest.fixture
def problems() -> PageProblems:
    return PageProblems(errors=[], dialogs=[])


@pytest.fixture
def page(browser: Any, problems: PageProblems) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on("pageerror", lambda exc: problems.errors.append(str(exc)))
    page.on("console", lambda msg: problems.errors.append(msg.text) if msg.type == "error" else None)

    def on_dialog(dialog: Any) -> None:
        problems.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    yield page
    context.close()


@pytest.fixture(scope="session")
def screenshot() -> Callable[[Any, str], Path]:
    """Save a screenshot under project_results/ (a CI artifact, ignored by git)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path))
        return path

    return take
