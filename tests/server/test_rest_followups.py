"""``POST``/``GET /api/projects/{id}/followups``: a follow-up question runs as a project that follows
the one asked, from what that project found first, and is listed under it with its answer."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from server_helpers import wait_for, wait_status
from test_rest import assert_error, create, run_to_end

from sentient.agents.models.fake import ScriptedModel
from sentient_server.config import ServerSettings

QUESTION = "How does asyncio schedule tasks on the event loop?"


def test_a_followup_is_answered_from_the_project_and_listed_under_it_with_its_answer(
    make_app: Any, server_settings: ServerSettings
) -> None:
    model = ScriptedModel(latency=0.005)
    client = make_app(replace(server_settings, model=model)).test_client()
    pid = create(client, profile="general_agent")["project_id"]
    assert_error(client.post(f"/api/projects/{pid}/followups", json={"question": QUESTION}), 409, "conflict", "not run")
    assert run_to_end(client, pid)["status"] == "completed"
    graph = client.get(f"/api/projects/{pid}/graph").get_json()
    report = client.get(f"/api/projects/{pid}/report?format=md").get_data(as_text=True)

    started = client.post(f"/api/projects/{pid}/followups", json={"question": QUESTION})

    assert started.status_code == 202, started.get_json()
    followup = started.get_json()
    assert followup["goal"] == QUESTION and followup["project_id"] != pid
    assert wait_status(client, followup["project_id"], {"completed", "failed"})["status"] == "completed"
    [thread] = client.get(f"/api/projects/{pid}/followups").get_json()["followups"]
    assert thread["project"]["project_id"] == followup["project_id"]
    assert thread["answer"]["answer"] and thread["answer"]["markdown"]
    assert thread["answer"]["references"], "the answer cites its sources"
    prompts = [c.request.prompt for c in model.calls_for("executor") if c.request.goal == QUESTION]
    assert prompts and "Finding of the project this question follows up" in prompts[0]
    assert client.get(f"/api/projects/{pid}/graph").get_json() == graph, "the project's graph is as it was"
    assert client.get(f"/api/projects/{pid}/report?format=md").get_data(as_text=True) == report
    assert client.get(f"/api/projects/{followup['project_id']}/followups").get_json() == {"followups": []}


def test_a_followup_is_refused_for_an_unknown_project_a_bad_body_and_a_project_that_runs(
    make_app: Any, server_settings: ServerSettings
) -> None:
    model = ScriptedModel(latency=0.005)
    client = make_app(replace(server_settings, model=model)).test_client()
    assert_error(client.post("/api/projects/nope/followups", json={"question": QUESTION}), 404, "not_found")
    assert_error(client.get("/api/projects/nope/followups"), 404, "not_found")
    pid = create(client, profile="general_agent")["project_id"]
    assert run_to_end(client, pid)["status"] == "completed"
    assert_error(client.post(f"/api/projects/{pid}/followups", json={"question": "  "}), 400, None, "question is empty")
    assert_error(client.post(f"/api/projects/{pid}/followups", json={}), 400, None, "question")
    assert_error(client.post(f"/api/projects/{pid}/followups", json={"question": QUESTION, "x": 1}), 400)

    model.latency = 30.0
    assert client.post(f"/api/projects/{pid}/execute").status_code == 202
    wait_for(lambda: client.get("/api/health").get_json()["projects_running"] == 1, what="the project running")
    assert_error(client.post(f"/api/projects/{pid}/followups", json={"question": QUESTION}), 409, "conflict")
    assert client.post(f"/api/projects/{pid}/cancel").status_code == 202
    wait_status(client, pid, {"cancelled"})
    assert client.get(f"/api/projects/{pid}/followups").get_json() == {"followups": []}
