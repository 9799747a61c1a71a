"""A live server on 127.0.0.1 with real python-socketio clients: diffs, reviews, isolation, restart."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx
import pytest
import socketio
from server_helpers import InOrderClient, wait_for

from sentient.agents.models.fake import ScriptedModel
from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient_server import ServerSettings

GOAL = "Explain how asyncio schedules tasks"


def api(
    server: Any, method: str, path: str, token: str | None = None, headers: dict[str, str] | None = None, **kwargs: Any
) -> httpx.Response:
    headers = dict(headers or {})
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.request(method, server.url + path, headers=headers, timeout=10, **kwargs)


def create(server: Any, goal: str = GOAL, **config: Any) -> str:
    response = api(server, "POST", "/api/projects", json={"goal": goal, "profile": "general_agent", "config": config})
    assert response.status_code == 201, response.text
    return str(response.json()["project_id"])


def final_statuses(view: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {task_id: node["status"] for task_id, node in view.items()}


def stored_statuses(server: Any, project_id: str) -> dict[str, str]:
    nodes = api(server, "GET", f"/api/projects/{project_id}/graph").json()["nodes"]
    return {task_id: node["status"] for task_id, node in nodes.items()}


def test_execute_over_socketio_streams_status_diffs_and_completion(
    live: Callable[..., Any], server_settings: ServerSettings, connect: Any
) -> None:
    server = live(server_settings)
    client = connect(server.url)
    ack = client.sio.call("execute_task", {"goal": GOAL, "profile": "general_agent"}, timeout=10)
    assert ack["ok"], ack
    project_id = ack["project"]["project_id"]
    done = wait_for(lambda: client.received.completed(project_id), what="project_completed")
    assert done["project"]["status"] == "completed"
    names = client.received.names()
    assert names[0] == "project_status" and names[-1] == "project_completed"
    updates = client.received.of("node_update")
    assert updates and all(u["project_id"] == project_id for u in updates)
    # Each update carries whole nodes, only those that changed: replaying them rebuilds the graph.
    assert final_statuses(client.received.graph_view(project_id)) == stored_statuses(server, project_id)
    assert all(set(n) >= {"task_id", "status", "goal", "history", "result"} for u in updates for n in u["nodes"])


def test_joining_a_running_project_gets_a_snapshot_then_every_diff(
    live: Callable[..., Any], server_settings: ServerSettings, connect: Any
) -> None:
    server = live(replace(server_settings, model=ScriptedModel(latency=0.05)))
    project_id = create(server, max_subtasks=4)
    first = connect(server.url)
    first.sio.call("join_project", {"project_id": project_id}, timeout=10)
    assert api(server, "POST", f"/api/projects/{project_id}/execute").status_code == 202
    wait_for(lambda: first.received.of("node_update"), what="a first diff")
    late = connect(server.url)  # joins mid-run
    assert late.sio.call("join_project", {"project_id": project_id}, timeout=10)["ok"]
    for client in (first, late):
        wait_for(lambda c=client: c.received.completed(project_id), what="project_completed")
    assert late.received.names()[0] == "project_snapshot"
    snapshot = late.received.of("project_snapshot")[0]
    assert snapshot["project"]["status"] == "running" and "root" in snapshot["graph"]["nodes"]
    expected = stored_statuses(server, project_id)
    assert final_statuses(first.received.graph_view(project_id)) == expected
    assert final_statuses(late.received.graph_view(project_id)) == expected


def test_two_clients_in_two_projects_receive_only_their_own_events(
    live: Callable[..., Any], server_settings: ServerSettings, connect: Any
) -> None:
    server = live(server_settings)
    a, b, idle = connect(server.url), connect(server.url), connect(server.url)
    pid_a = a.sio.call("execute_task", {"goal": "First goal", "profile": "general_agent"}, timeout=10)["project"][
        "project_id"
    ]
    pid_b = b.sio.call("execute_task", {"goal": "Second goal", "profile": "general_agent"}, timeout=10)["project"][
        "project_id"
    ]
    wait_for(lambda: a.received.completed(pid_a) and b.received.completed(pid_b), what="both projects")
    broadcaster = server.app.extensions["sentient"].broadcaster
    assert broadcaster.flush()

    def project_ids(events: list[tuple[str, Any]]) -> set[str]:
        ids = set()
        for _, data in events:
            ids.add(data.get("project_id") or data.get("project", {}).get("project_id"))
        return ids

    assert project_ids(a.received.events) == {pid_a}
    assert project_ids(b.received.events) == {pid_b}
    assert idle.received.events == []


def _pending_review(server: Any, project_id: str) -> dict[str, Any]:
    def pending() -> Any:
        reviews = api(server, "GET", f"/api/projects/{project_id}/reviews").json()["reviews"]
        return reviews[0] if reviews else None

    return wait_for(pending, what="a pending review")  # type: ignore[no-any-return]


def test_review_answered_over_socketio(live: Callable[..., Any], server_settings: ServerSettings, connect: Any) -> None:
    server = live(server_settings)
    client = connect(server.url)
    ack = client.sio.call(
        "execute_task", {"goal": GOAL, "profile": "general_agent", "config": {"review": "root"}}, timeout=10
    )
    project_id = ack["project"]["project_id"]
    request = wait_for(lambda: client.received.of("hitl_request"), what="hitl_request")[0]
    review = request["review"]
    assert request["project_id"] == project_id and review["task_id"] == "root" and review["round"] == 1
    assert review["status"] == "pending" and len(review["plan"]["subtasks"]) == 2

    bad = client.sio.call("hitl_response", {"review_id": review["review_id"], "action": "modify"}, timeout=10)
    assert not bad["ok"] and bad["error"]["code"] == "invalid_request"
    wait_for(lambda: client.received.of("error"), what="an error event")

    answer = {"review_id": review["review_id"], "action": "approve"}
    assert client.sio.call("hitl_response", answer, timeout=10)["review"]["status"] == "answered"
    again = client.sio.call("hitl_response", answer, timeout=10)
    assert again["error"]["code"] == "conflict"
    done = wait_for(lambda: client.received.completed(project_id), what="project_completed")
    assert done["project"]["status"] == "completed"
    resolved = client.received.of("hitl_resolved")
    assert resolved == [{"project_id": project_id, "review_id": review["review_id"], "action": "approve"}]


def test_review_answered_over_rest_with_an_edited_plan(
    live: Callable[..., Any], server_settings: ServerSettings, connect: Any
) -> None:
    server = live(server_settings)
    project_id = create(server, review="root")
    watcher = connect(server.url)
    watcher.sio.call("join_project", {"project_id": project_id}, timeout=10)
    api(server, "POST", f"/api/projects/{project_id}/execute")
    review = _pending_review(server, project_id)
    path = f"/api/reviews/{review['review_id']}"

    cyclic = {
        "subtasks": [
            {"goal": "a", "task_type": "SEARCH", "depends_on_indices": [1]},
            {"goal": "b", "task_type": "WRITE", "depends_on_indices": [0]},
        ]
    }
    refused = api(server, "POST", path, json={"action": "modify", "plan": cyclic})
    assert refused.status_code == 400 and "later subtask 1" in refused.json()["error"]["message"]
    out_of_range = {
        "subtasks": [
            {"goal": "a", "task_type": "SEARCH"},
            {"goal": "b", "task_type": "WRITE", "depends_on_indices": [7]},
        ]
    }
    refused = api(server, "POST", path, json={"action": "modify", "plan": out_of_range})
    assert refused.status_code == 400 and "does not exist" in refused.json()["error"]["message"]
    assert api(server, "POST", "/api/reviews/nope", json={"action": "approve"}).status_code == 404

    edited = PlanOutput(
        subtasks=[
            SubTask(goal="Edited first", task_type=TaskType.SEARCH),
            SubTask(goal="Edited second", task_type=TaskType.THINK),
            SubTask(goal="Edited third", task_type=TaskType.WRITE, depends_on_indices=[0, 1]),
        ]
    )
    answered = api(server, "POST", path, json={"action": "modify", "plan": edited.model_dump(mode="json")})
    assert answered.status_code == 200 and answered.json()["status"] == "answered"
    wait_for(lambda: watcher.received.completed(project_id), what="project_completed")
    nodes = api(server, "GET", f"/api/projects/{project_id}/graph").json()["nodes"]
    assert [nodes[f"root.{i}"]["goal"] for i in range(3)] == ["Edited first", "Edited second", "Edited third"]
    assert nodes["root.2"]["depends_on"] == ["root.0", "root.1"]
    assert (
        api(server, "GET", f"/api/projects/{project_id}/nodes/root").json()["reviews"][0]["decision"]["action"]
        == "modify"
    )


def test_review_modified_by_instructions_then_rejected_cancels_the_project(
    live: Callable[..., Any], server_settings: ServerSettings
) -> None:
    model = ScriptedModel(latency=0.005)
    server = live(replace(server_settings, model=model))
    # A report asked for: its plan is the work (a question's rejected plan leaves its direct answer).
    project_id = create(server, "Explain how asyncio schedules tasks.", review="root")
    api(server, "POST", f"/api/projects/{project_id}/execute")
    first = _pending_review(server, project_id)
    api(
        server,
        "POST",
        f"/api/reviews/{first['review_id']}",
        json={"action": "modify", "instructions": "Add a THINK step"},
    )
    second = wait_for(
        lambda: [
            r for r in api(server, "GET", f"/api/projects/{project_id}/reviews").json()["reviews"] if r["round"] == 2
        ],
        what="the round-2 review",
    )[0]
    assert model.calls_for("plan_modifier") and "Add a THINK step" in model.calls_for("plan_modifier")[0].request.prompt
    api(server, "POST", f"/api/reviews/{second['review_id']}", json={"action": "reject", "reason": "off topic"})
    project = wait_for(
        lambda: (p := api(server, "GET", f"/api/projects/{project_id}").json())["status"] == "cancelled" and p,
        what="the project to be cancelled by its reviewer",
    )
    root = api(server, "GET", f"/api/projects/{project_id}/graph").json()["nodes"]["root"]
    assert root["status"] == "CANCELLED" and "off topic" in root["error"]
    assert project["error"] == "plan rejected by reviewer: off topic"
    assert project["pending_reviews"] == 0


def test_a_pending_review_survives_a_server_restart(
    live: Callable[..., Any], server_settings: ServerSettings, connect: Any
) -> None:
    first = live(server_settings)
    project_id = create(first, review="root")
    api(first, "POST", f"/api/projects/{project_id}/execute")
    review = _pending_review(first, project_id)
    first.stop()

    second = live(server_settings)  # same results folder: resumes the interrupted project
    assert wait_for(lambda: api(second, "GET", f"/api/projects/{project_id}").json()["status"] == "running")
    again = _pending_review(second, project_id)
    assert again["review_id"] == review["review_id"] and again["plan"] == review["plan"]
    client = connect(second.url)
    client.sio.call("join_project", {"project_id": project_id}, timeout=10)
    snapshot = wait_for(lambda: client.received.of("project_snapshot"), what="snapshot")[0]
    assert [r["review_id"] for r in snapshot["reviews"]] == [review["review_id"]]
    answered = api(second, "POST", f"/api/reviews/{review['review_id']}", json={"action": "approve"})
    assert answered.status_code == 200
    done = wait_for(lambda: client.received.completed(project_id), what="project_completed")
    assert done["project"]["status"] == "completed"


def test_bad_socket_payloads_come_back_as_errors(
    live: Callable[..., Any], server_settings: ServerSettings, connect: Any
) -> None:
    server = live(server_settings)
    client = connect(server.url)
    for event, payload, code in [
        ("join_project", {"project_id": "../../etc"}, "invalid_request"),
        ("join_project", {"project_id": "missing-project"}, "not_found"),
        ("join_project", "not an object", "invalid_request"),
        ("execute_task", {"goal": ""}, "invalid_request"),
        ("execute_task", {"goal": "x", "config": {"max_depth": -1}}, "invalid_config"),
        ("hitl_response", {"review_id": "abc", "action": "approve"}, "not_found"),
    ]:
        ack = client.sio.call(event, payload, timeout=10)
        assert ack["ok"] is False and ack["error"]["code"] == code, (event, payload, ack)
    wait_for(lambda: len(client.received.of("error")) == 6, what="six error events")


def test_token_required_when_bound_to_a_non_loopback_address(
    live: Callable[..., Any], server_settings: ServerSettings, connect: Any
) -> None:
    from sentient.exceptions import ConfigError
    from sentient_server import create_app

    with pytest.raises(ConfigError, match="SENTIENT_API_TOKEN"):
        create_app(replace(server_settings, host="0.0.0.0"))
    token = "t0ken-" + "x" * 20
    server = live(replace(server_settings, api_token=token), host="0.0.0.0")
    assert api(server, "GET", "/api/health").status_code == 200  # open
    assert api(server, "GET", "/api/projects").status_code == 401
    assert api(server, "GET", "/api/projects", token="wrong-token-" + "x" * 10).status_code == 401
    assert api(server, "GET", "/api/projects", token=token).status_code == 200
    # Polling: a refused WebSocket client waits 3 s for a close frame; the check is the same.
    with pytest.raises(socketio.exceptions.ConnectionError):
        connect(server.url, transports=["polling"])
    with pytest.raises(socketio.exceptions.ConnectionError):
        connect(server.url, token="wrong-token-" + "x" * 10, transports=["polling"])
    assert connect(server.url, token=token).sio.connected


def test_other_origins_are_refused(live: Callable[..., Any], server_settings: ServerSettings) -> None:
    server = live(server_settings)
    evil = {"Origin": "http://evil.example"}
    assert api(server, "POST", "/api/projects", json={"goal": GOAL}, headers=evil).status_code == 403
    assert "Access-Control-Allow-Origin" not in api(server, "GET", "/api/projects", headers=evil).headers
    assert api(server, "GET", "/api/health", headers={"Host": "evil.example"}).status_code == 403
    sio = InOrderClient(reconnection=False)
    with pytest.raises(socketio.exceptions.ConnectionError):
        sio.connect(server.url, headers=evil, transports=["polling"])
    own = {"Origin": server.url}
    assert api(server, "POST", "/api/projects", json={"goal": GOAL}, headers=own).status_code == 201
