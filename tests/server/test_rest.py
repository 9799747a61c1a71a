"""REST routes through the Flask test client: every route, good and bad input, and the error shape."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import docx
import pypdf
import pytest
from flask import Flask
from flask.testing import FlaskClient
from server_helpers import wait_for, wait_status

from sentient.context.grounding import VERIFIED_MEANS
from sentient_server.config import ServerSettings


def create(client: FlaskClient, **body: Any) -> dict[str, Any]:
    response = client.post("/api/projects", json={"goal": "Explain how asyncio schedules tasks", **body})
    assert response.status_code == 201, response.get_json()
    return response.get_json()  # type: ignore[no-any-return]


def run_to_end(client: FlaskClient, project_id: str, **body: Any) -> dict[str, Any]:
    response = client.post(f"/api/projects/{project_id}/execute", json=body or None)
    assert response.status_code == 202, response.get_json()
    return wait_status(client, project_id, {"completed", "failed", "cancelled", "stopped"})


def assert_error(response: Any, status: int, code: str | None = None, contains: str = "") -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    error = response.get_json()["error"]
    assert set(error) == {"code", "message"} and error["message"]
    if code:
        assert error["code"] == code
    assert contains in error["message"]
    return error  # type: ignore[no-any-return]


# -- meta ----------------------------------------------------------------------------------------


def test_health_reports_ok_version_and_running_count(client: FlaskClient) -> None:
    body = client.get("/api/health").get_json()
    assert body["status"] == "ok" and body["version"] and body["projects_running"] == 0


def test_profiles_list_and_detail_with_agents_per_role(client: FlaskClient) -> None:
    names = [p["name"] for p in client.get("/api/profiles").get_json()["profiles"]]
    assert {"deep_research_agent", "general_agent"} <= set(names)
    detail = client.get("/api/profiles/general_agent").get_json()
    assert detail["settings"]["max_depth"] == 1
    assert detail["agents"]["root_planner"]["role"] == "planner"
    assert set(detail["agents"]["executors"]) == {"SEARCH", "THINK", "WRITE"}
    assert_error(client.get("/api/profiles/nope"), 404, "not_found")
    assert_error(client.get("/api/profiles/..%2f..%2fetc"), 404)


def test_openapi_document_lists_every_route(client: FlaskClient, app: Flask) -> None:
    doc = client.get("/api/openapi.json").get_json()
    assert doc["openapi"].startswith("3.1")
    documented = set(doc["paths"])
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/"):
            path = rule.rule.replace("<", "{").replace(">", "}")
            assert path in documented, path
    assert "CreateProject" in doc["components"]["schemas"]


# -- projects ------------------------------------------------------------------------------------


def test_create_list_get_and_delete_a_project(client: FlaskClient) -> None:
    first = create(client, profile="general_agent", config={"max_depth": 1, "review": "none"})
    second = create(client)
    assert first["status"] == "created" and first["settings"]["max_depth"] == 1
    assert first["profile"] == "general_agent" and second["profile"] == "deep_research_agent"
    listed = [p["project_id"] for p in client.get("/api/projects").get_json()["projects"]]
    assert listed == [second["project_id"], first["project_id"]]  # newest first
    assert client.get(f"/api/projects/{first['project_id']}").get_json()["goal"] == first["goal"]
    assert client.delete(f"/api/projects/{first['project_id']}").get_json() == {"deleted": first["project_id"]}
    assert_error(client.get(f"/api/projects/{first['project_id']}"), 404, "not_found")
    assert_error(client.delete(f"/api/projects/{first['project_id']}"), 404)


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


# Deep enough that json.loads itself raises RecursionError (not a ValueError).
DEEP_CONFIG = '{"goal": "x", "config": ' + "[" * 1000 + "]" * 1000 + "}"


@pytest.mark.parametrize(
    ("kwargs", "status", "contains"),
    [
        ({"data": ""}, 400, "JSON body"),
        ({"data": "{not json", "content_type": "application/json"}, 400, "not valid JSON"),
        ({"data": "goal=x", "content_type": "application/x-www-form-urlencoded"}, 415, "JSON"),
        ({"json": ["a list"]}, 400, "JSON object"),
        ({"json": {"goal": "   "}}, 400, "goal"),
        ({"json": {"goal": "x", "colour": "red"}}, 400, "colour"),
        ({"json": {"goal": "x", "profile": "no_such_profile"}}, 400, "unknown profile"),
        ({"json": {"goal": "x", "profile": "../etc"}}, 400, "profile"),
        ({"json": {"goal": "x", "config": {"max_dpth": 1}}}, 400, "max_dpth"),
        ({"json": {"goal": "x", "config": {"max_depth": 99}}}, 400, "max_depth"),
        ({"json": {"goal": "x", "config": {"review": "sometimes"}}}, 400, "review"),
        ({"json": {"goal": "x", "config": {"report_length": "huge"}}}, 400, "report_length"),
        ({"json": {"goal": "x", "config": {"docs": "no-such-folder"}}}, 400, "not a folder"),
        ({"json": {"goal": "x", "config": {"docs": "/no/such/folder"}}}, 403, "not inside a docs root"),
        ({"json": {"goal": "\x1c\x1d\x1e\x1f"}}, 400, "control character U+001C"),
        ({"json": {"goal": "\u200b\u202e\u0301\ufeff\u00a0"}}, 400, "the goal has no visible text"),
        ({"json": {"goal": "x", "config": "deep"}}, 400, "config"),
        ({"json": {"goal": "x" * 5000}}, 400, "goal"),
        ({"data": DEEP_CONFIG, "content_type": "application/json"}, 400, "nested too deeply: at most 32 levels"),
        ({"json": {"goal": "x", "config": {"docs": nested(33)}}}, 400, "nested too deeply: at most 32 levels"),
    ],
)
def test_bad_create_bodies_are_4xx_with_the_reason(
    client: FlaskClient, kwargs: dict[str, Any], status: int, contains: str
) -> None:
    assert_error(client.post("/api/projects", **kwargs), status, contains=contains)
    assert client.get("/api/projects").get_json()["projects"] == []


def test_oversized_bodies_unknown_routes_and_wrong_methods_answer_json(client: FlaskClient) -> None:
    assert_error(client.post("/api/projects", json={"goal": "x" * (2 << 20)}), 413, "too_large")
    assert_error(client.get("/api/nothing/here"), 404, "not_found")
    assert_error(client.put("/api/projects"), 405, "method_not_allowed")
    assert_error(client.post("/api/health"), 405)


@pytest.mark.parametrize("bad_id", ["..", "..%2F..%2Fetc", "a%00b", "-starts-with-dash", "x" * 200, "a b"])
def test_ids_that_could_escape_project_results_are_refused(client: FlaskClient, bad_id: str) -> None:
    for method, path in [
        ("get", ""),
        ("get", "/graph"),
        ("get", "/report"),
        ("post", "/execute"),
        ("post", "/resume"),
        ("delete", ""),
    ]:
        response = getattr(client, method)(f"/api/projects/{bad_id}{path}")
        assert response.status_code in (404, 405), (method, path, response.get_data(as_text=True))
        assert "error" in response.get_json()


def test_execute_runs_to_completion_with_graph_nodes_and_report(client: FlaskClient, app: Flask) -> None:
    project = create(client, profile="general_agent")
    done = run_to_end(client, project["project_id"])
    pid = project["project_id"]
    assert done["status"] == "completed" and done["stats"]["nodes"] == 3 and done["stats"]["agent_calls"] > 0
    graph = client.get(f"/api/projects/{pid}/graph").get_json()
    assert graph["project_id"] == pid and graph["root"] == "root"
    assert {n["status"] for n in graph["nodes"].values()} == {"DONE"}
    assert graph["nodes"]["root"]["children"] == ["root.0", "root.1"]
    detail = client.get(f"/api/projects/{pid}/nodes/root.0").get_json()
    assert detail["node"]["task_id"] == "root.0" and detail["node"]["result"]
    assert detail["calls"] and detail["calls"][0]["role"] == "executor" and detail["reviews"] == []
    assert_error(client.get(f"/api/projects/{pid}/nodes/root.9"), 404)
    assert_error(client.get(f"/api/projects/{pid}/nodes/..%2F..%2Fx"), 404)

    markdown = client.get(f"/api/projects/{pid}/report?format=md")
    assert markdown.mimetype == "text/markdown" and "Summary of root" in markdown.get_data(as_text=True)
    html = client.get(f"/api/projects/{pid}/report?format=html")
    assert html.mimetype == "text/html" and "<script" not in html.get_data(as_text=True).lower()
    as_json = client.get(f"/api/projects/{pid}/report?format=json").get_json()
    assert as_json["partial"] is False and as_json["markdown"] == markdown.get_data(as_text=True)
    assert as_json["title"] == project["goal"] and as_json["status"] == "DONE" and as_json["missing"] == []
    assert "Summary of root" in as_json["answer"] and as_json["sections"] == []
    assert as_json["references"] == [] and [c["ref"] for c in as_json["consulted"]] == ["asyncio.md"]
    assert_error(client.get(f"/api/projects/{pid}/report?format=rtf"), 400, contains="md, html, json, pdf or docx")
    assert_error(client.post(f"/api/projects/{pid}/resume"), 409, "conflict", "completed")
    assert_error(client.post(f"/api/projects/{pid}/cancel"), 409, "conflict", "not running")


def test_a_project_with_a_report_length_is_written_as_a_report(client: FlaskClient) -> None:
    project = create(client, profile="general_agent", config={"report_length": "short"})
    assert project["settings"]["report_length"] == "short"
    assert run_to_end(client, project["project_id"])["status"] == "completed"
    report = client.get(f"/api/projects/{project['project_id']}/report?format=json").get_json()
    # The overview, then the outline's two sections.
    assert report["answer"].startswith("# ") and report["answer"].count("\n## ") == 3
    assert report["title"] == report["answer"].splitlines()[0].removeprefix("# ")


def test_report_json_is_the_stored_report_value_or_built_from_the_graph(client: FlaskClient, app: Flask) -> None:
    pid = create(client, profile="general_agent")["project_id"]
    run_to_end(client, pid)
    store = app.extensions["sentient"].runs.store
    stored = store.get_report_data(pid)
    assert stored is not None and stored["answer"].startswith("Summary of root")
    reference = {"n": 1, "ref": "https://example.org/a", "kind": "url", "title": "A", "verified": True}
    store.set_report(pid, "Stored [1].\n", {**stored, "answer": "Stored [1].", "references": [reference]})

    served = client.get(f"/api/projects/{pid}/report?format=json").get_json()
    assert (served["answer"], served["references"], served["markdown"]) == ("Stored [1].", [reference], "Stored [1].\n")

    # A report stored before its data was (an older store): the value is built from the stored graph.
    store.set_report(pid, "Old markdown.\n")
    rebuilt = client.get(f"/api/projects/{pid}/report?format=json").get_json()
    assert rebuilt["answer"] == stored["answer"] and rebuilt["markdown"] == "Old markdown.\n"
    assert rebuilt["partial"] is False
    # Data that is not a Report (written by another version) is not trusted: the value is rebuilt too.
    store.set_report(pid, "Old markdown.\n", {"title": pid, "references": "not a list"})
    assert client.get(f"/api/projects/{pid}/report?format=json").get_json()["answer"] == stored["answer"]


def test_report_as_pdf_and_docx_has_the_title_linked_citations_and_references(client: FlaskClient, app: Flask) -> None:
    pid = create(client, profile="general_agent")["project_id"]
    run_to_end(client, pid)
    store = app.extensions["sentient"].runs.store
    stored = store.get_report_data(pid)
    reference = {
        "n": 1,
        "ref": "https://example.org/a",
        "kind": "url",
        "title": "Page A",
        "verified": True,
    }
    store.set_report(pid, "Stored [1].\n", {**stored, "answer": "Stored [1].", "references": [reference]})

    pdf = client.get(f"/api/projects/{pid}/report?format=pdf")
    assert pdf.status_code == 200 and pdf.mimetype == "application/pdf"
    assert pdf.headers["Content-Disposition"] == f'inline; filename="{pid}.pdf"'
    reader = pypdf.PdfReader(io.BytesIO(pdf.get_data()))
    text = " ".join(" ".join(page.extract_text() for page in reader.pages).split())
    assert text.startswith(stored["title"]) and "Stored [1]." in text
    assert "References Page A — verified — https://example.org/a" in text and VERIFIED_MEANS in text

    word = client.get(f"/api/projects/{pid}/report?format=docx")
    assert word.status_code == 200
    assert word.mimetype == "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    document = docx.Document(io.BytesIO(word.get_data()))
    texts = [p.text for p in document.paragraphs]
    assert texts[0] == stored["title"] and "Stored [1]." in texts and VERIFIED_MEANS in texts
    assert "1. Page A — verified — https://example.org/a" in texts
    assert [link.text for p in document.paragraphs for link in p.hyperlinks if link.fragment] == ["1"]


def test_report_before_any_run_is_404_and_execute_body_is_validated(client: FlaskClient) -> None:
    pid = create(client)["project_id"]
    assert_error(client.get(f"/api/projects/{pid}/report"), 404, "no_report")
    assert_error(client.post(f"/api/projects/{pid}/execute", json={"goal": ""}), 400, contains="goal")
    assert_error(client.post(f"/api/projects/{pid}/execute", json={"budget": 3}), 400, contains="budget")
    assert client.get(f"/api/projects/{pid}").get_json()["status"] == "created"


def test_execute_again_restarts_from_scratch_with_a_new_goal(client: FlaskClient) -> None:
    pid = create(client, profile="general_agent")["project_id"]
    run_to_end(client, pid)
    again = run_to_end(client, pid, goal="What is a coroutine?")
    assert again["status"] == "completed" and again["goal"] == "What is a coroutine?"
    graph = client.get(f"/api/projects/{pid}/graph").get_json()
    assert graph["nodes"]["root"]["goal"] == "What is a coroutine?"


def test_cancel_then_resume_keeps_finished_nodes(
    make_app: Any, server_settings: ServerSettings, tmp_path: Path
) -> None:
    from sentient.agents.models.fake import FakeRequest, ScriptedModel

    # root.1 is slow: the run is cancelled while root.0 is DONE and root.1 still executing.
    model = ScriptedModel(latency=lambda r: 30.0 if r.task_id == "root.1" and r.role == "executor" else 0.005)
    app = make_app(_with_model(server_settings, model))
    client = app.test_client()
    pid = create(client, profile="general_agent")["project_id"]
    assert client.post(f"/api/projects/{pid}/execute").status_code == 202
    assert_error(client.post(f"/api/projects/{pid}/execute"), 409, "conflict", "already running")

    def root0_done() -> bool:
        nodes = client.get(f"/api/projects/{pid}/graph").get_json()["nodes"]
        return nodes.get("root.0", {}).get("status") == "DONE" and nodes.get("root.1", {}).get("status") == "EXECUTING"

    wait_for(root0_done, what="root.0 done and root.1 executing")
    cancelled = client.post(f"/api/projects/{pid}/cancel")
    assert cancelled.status_code == 202
    assert wait_status(client, pid, {"cancelled"})["status"] == "cancelled"

    model.latency = 0.005
    root0_calls = len(model.calls_for("executor", "root.0"))
    assert client.post(f"/api/projects/{pid}/resume").status_code == 202
    assert wait_status(client, pid, {"completed", "failed"})["status"] == "completed"
    assert len(model.calls_for("executor", "root.0")) == root0_calls  # not re-run
    del FakeRequest


def test_rerun_of_one_node_runs_it_again_with_instructions_and_refuses_what_makes_no_sense(
    make_app: Any, server_settings: ServerSettings
) -> None:
    from sentient.agents.models.fake import ScriptedModel

    model = ScriptedModel(latency=0.005)
    client = make_app(_with_model(server_settings, model)).test_client()
    pid = create(client, profile="general_agent")["project_id"]
    assert_error(client.post(f"/api/projects/{pid}/nodes/root.0/rerun"), 409, "conflict", "not run yet")
    assert run_to_end(client, pid)["status"] == "completed"
    kept = client.get(f"/api/projects/{pid}/graph").get_json()["nodes"]["root.1"]["result"]

    model.latency = lambda r: 30.0 if r.task_id == "root.0" and r.role == "executor" else 0.005
    before = len(model.calls)
    body = {"replan": False, "instructions": "Cite the event loop page."}
    started = client.post(f"/api/projects/{pid}/nodes/root.0/rerun", json=body)
    assert started.status_code == 202, started.get_json()
    wait_for(
        lambda: [c for c in model.calls[before:] if c.request.task_id == "root.0"], what="the re-run executor call"
    )
    assert_error(client.post(f"/api/projects/{pid}/nodes/root.1/rerun"), 409, "conflict", "running")
    assert client.post(f"/api/projects/{pid}/cancel").status_code == 202
    wait_status(client, pid, {"cancelled"})

    model.latency = 0.005
    before = len(model.calls)
    assert client.post(f"/api/projects/{pid}/resume").status_code == 202  # the interrupted rerun goes on
    assert wait_status(client, pid, {"completed", "failed"})["status"] == "completed"
    again = model.calls[before:]
    assert {c.request.task_id for c in again} == {"root.0", "root"}
    assert all("Cite the event loop page." in c.request.prompt for c in again if c.request.role == "executor")
    assert client.get(f"/api/projects/{pid}/graph").get_json()["nodes"]["root.1"]["result"] == kept

    assert_error(client.post(f"/api/projects/{pid}/nodes/root/rerun", json={"replan": True}), 400, None, "whole")
    assert_error(client.post(f"/api/projects/{pid}/nodes/root.9/rerun"), 404, "not_found")
    assert_error(client.post(f"/api/projects/{pid}/nodes/root.0/rerun", json={"replan": "yes please"}), 400)
    assert_error(client.post(f"/api/projects/{pid}/nodes/root.0/rerun", json={"instruction": "x"}), 400)
    assert_error(client.post("/api/projects/nope/nodes/root.0/rerun"), 404, "not_found")


def test_delete_cancels_a_running_project_first(make_app: Any, server_settings: ServerSettings) -> None:
    from sentient.agents.models.fake import ScriptedModel

    app = make_app(_with_model(server_settings, ScriptedModel(latency=30.0)))
    client = app.test_client()
    pid = create(client, profile="general_agent")["project_id"]
    client.post(f"/api/projects/{pid}/execute")
    wait_for(lambda: client.get("/api/health").get_json()["projects_running"] == 1)
    assert client.delete(f"/api/projects/{pid}").status_code == 200
    assert client.get("/api/health").get_json()["projects_running"] == 0
    assert_error(client.get(f"/api/projects/{pid}"), 404)


def test_an_unexpected_error_is_a_generic_500_without_details(client: FlaskClient, app: Flask) -> None:
    runs = app.extensions["sentient"].runs

    def broken() -> None:
        raise RuntimeError("secret internals /etc/passwd")

    runs.projects = broken
    error = assert_error(client.get("/api/projects"), 500, "internal_error")
    assert "secret" not in error["message"] and "Traceback" not in error["message"]


def _with_model(settings: ServerSettings, model: Any) -> ServerSettings:
    from dataclasses import replace

    return replace(settings, model=model)


def test_every_answer_forbids_framing_and_html_has_a_strict_csp(client: FlaskClient) -> None:
    pid = create(client, profile="general_agent")["project_id"]
    run_to_end(client, pid)
    for path in ("/api/health", "/api/projects", f"/api/projects/{pid}/report", "/api/nothing"):
        response = client.get(path)
        assert response.headers["X-Frame-Options"] == "DENY", path
        assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"], path
    report = client.get(f"/api/projects/{pid}/report?format=html")
    csp = report.headers["Content-Security-Policy"]
    assert report.mimetype == "text/html" and "frame-ancestors 'none'" in csp
    assert "script-src" not in csp and "default-src 'none'" in csp  # no script of any kind
