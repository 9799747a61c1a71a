"""Plan review through the server: persisted, answerable after a restart, timeouts recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from server_helpers import wait_for, wait_status

from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.hitl.protocol import Approve, Reject, ReviewRequest
from sentient.projects import ProjectService, ReviewAnswer, UnusablePlanError
from sentient.settings import EngineSettings, Settings
from sentient.store import Owner, ProjectStore, ReviewNotFoundError
from sentient.tools.confirm import call_review
from sentient_server.bridge import EngineLoop
from sentient_server.errors import as_api_error
from sentient_server.relay import ReviewAnswered
from sentient_server.reviews import ReviewBroker

PLAN = PlanOutput(
    subtasks=[
        SubTask(goal="Find facts", task_type=TaskType.SEARCH),
        SubTask(goal="Write up", task_type=TaskType.WRITE, depends_on_indices=[0]),
    ]
)


class RecordingBroadcaster:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, str]] = []

    def emit(self, event: str, data: Any, to: str) -> None:
        self.sent.append((event, data, to))


@pytest.fixture
def engine() -> Any:
    loop = EngineLoop()
    yield loop
    loop.stop()


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with ProjectStore.open(tmp_path) as opened:
        opened.create_project("p1", "goal", "general_agent", {})
        yield opened


@pytest.fixture
def service(store: ProjectStore, tmp_path: Path) -> ProjectService:
    return ProjectService(store, Settings(cache_dir=tmp_path / "cache", results_dir=tmp_path, offline=True))


def test_an_answer_given_while_no_run_waits_is_used_when_the_engine_asks_again(
    store: Any, service: ProjectService, engine: EngineLoop
) -> None:
    broadcaster = RecordingBroadcaster()
    request = ReviewRequest("root", "goal", 0, PLAN, 1, "what the planner saw")
    settings = EngineSettings(review="root")
    waiting = engine.submit(ReviewBroker(service, engine, broadcaster).wait("p1", request, settings))  # type: ignore[arg-type]
    review = wait_for(lambda: store.pending_reviews("p1"), what="a stored review")[0]
    assert review["context"] == "what the planner saw" and review["plan"] == PLAN.model_dump(mode="json")
    wait_for(lambda: broadcaster.sent, what="the announcement")  # sent once the review is stored
    assert [e for e, _, _ in broadcaster.sent] == ["hitl_request"] and broadcaster.sent[0][2] == "project:p1"

    waiting.cancel()  # the server stops: the review stays pending
    wait_for(lambda: waiting.done())
    assert store.get_review(review["review_id"])["status"] == "pending"

    restarted = ReviewBroker(service, engine, broadcaster)  # type: ignore[arg-type]
    answered = restarted.answer(review["review_id"], ReviewAnswer(action="reject", reason="too broad"), by="rest")
    assert answered.status == "answered" and answered.decision is not None and answered.decision.by == "rest"
    decision = engine.submit(restarted.wait("p1", request, settings)).result(5)
    assert decision == Reject("too broad")
    assert len(store.reviews("p1")) == 1  # the same review, not a new one


def test_a_pending_review_is_reused_after_a_restart_and_resolved_by_its_answer(
    store: Any, service: ProjectService, engine: EngineLoop
) -> None:
    broadcaster = RecordingBroadcaster()
    request = ReviewRequest("root", "goal", 0, PLAN, 1)
    settings = EngineSettings(review="root")
    first = ReviewBroker(service, engine, broadcaster)  # type: ignore[arg-type]
    waiting = engine.submit(first.wait("p1", request, settings))
    review = wait_for(lambda: store.pending_reviews("p1"))[0]
    waiting.cancel()
    second = ReviewBroker(service, engine, broadcaster)  # type: ignore[arg-type]
    again = engine.submit(second.wait("p1", request, settings))
    wait_for(lambda: len([e for e, _, _ in broadcaster.sent if e == "hitl_request"]) == 2)
    assert broadcaster.sent[-1][1].review.review_id == review["review_id"]
    second.answer(review["review_id"], ReviewAnswer(action="approve"), by="socket")
    assert again.result(5) == Approve()
    assert [e for e, _, _ in broadcaster.sent][-1] == "hitl_resolved"  # the run is here: announced here


class RelayToHolder:
    """Stands in for the OwnerRelay between two processes: a forwarded answer wakes the holder's broker."""

    def __init__(self, holder: ReviewBroker) -> None:
        self.holder = holder
        self.forwarded: list[tuple[str, object]] = []

    def forward(self, token: str, command: ReviewAnswered) -> bool:
        self.forwarded.append((token, command))
        self.holder.wake(command.review_id)
        return True


def test_an_answer_given_on_another_process_is_announced_by_the_process_that_runs_the_project(
    store: ProjectStore, service: ProjectService, engine: EngineLoop
) -> None:
    # The run's process sends its diffs; were the answer announced where it was given, that
    # process's own clients would get it ahead of diffs still on their way through Redis, and
    # the clients of another process after them.
    running_elsewhere = Owner.local()
    store.claim("p1", running_elsewhere)
    at_holder, here = RecordingBroadcaster(), RecordingBroadcaster()
    holder = ReviewBroker(service, engine, at_holder)  # type: ignore[arg-type]
    waiting = engine.submit(holder.wait("p1", ReviewRequest("root", "goal", 0, PLAN, 1), EngineSettings(review="root")))
    review = wait_for(lambda: store.pending_reviews("p1"))[0]
    relay = RelayToHolder(holder)
    ReviewBroker(service, engine, here, relay).answer(  # type: ignore[arg-type]
        review["review_id"], ReviewAnswer(action="approve"), by="rest"
    )

    assert waiting.result(5) == Approve()
    assert relay.forwarded == [
        (running_elsewhere.token, ReviewAnswered(project_id="p1", review_id=review["review_id"]))
    ]
    assert here.sent == []
    assert [e for e, _, _ in at_holder.sent] == ["hitl_request", "hitl_resolved"]
    assert at_holder.sent[-1][1].action == "approve"


def test_invalid_answers_are_refused_without_touching_the_review(
    store: Any, service: ProjectService, engine: EngineLoop
) -> None:
    broker = ReviewBroker(service, engine, RecordingBroadcaster())  # type: ignore[arg-type]
    engine.submit(broker.wait("p1", ReviewRequest("root", "goal", 0, PLAN, 1), EngineSettings(review="root")))
    review = wait_for(lambda: store.pending_reviews("p1"))[0]
    self_loop = PlanOutput(
        subtasks=[
            SubTask(goal="a", task_type=TaskType.SEARCH, depends_on_indices=[0]),
            SubTask(goal="b", task_type=TaskType.WRITE),
        ]
    )
    with pytest.raises(UnusablePlanError) as refused:
        broker.answer(review["review_id"], ReviewAnswer(action="modify", plan=self_loop), by="rest")
    mapped = as_api_error(refused.value)
    assert mapped is not None and (mapped.status, mapped.code) == (400, "invalid_plan")
    assert "depends on itself" in mapped.message
    with pytest.raises(ReviewNotFoundError):
        broker.answer("../../etc", ReviewAnswer(action="approve"), by="rest")
    assert store.get_review(review["review_id"])["status"] == "pending"


@pytest.mark.parametrize(("action", "outcome"), [("approve", "completed"), ("reject", "cancelled")])
def test_review_timeout_decides_as_configured_and_is_recorded(
    client: FlaskClient, app: Flask, action: str, outcome: str
) -> None:
    config = {"review": "root", "review_timeout_s": 0.3, "review_timeout_action": action}
    pid = client.post(
        "/api/projects", json={"goal": "Timeouts", "profile": "general_agent", "config": config}
    ).get_json()["project_id"]
    client.post(f"/api/projects/{pid}/execute")
    assert wait_status(client, pid, {"completed", "failed", "cancelled"})["status"] == outcome
    node = client.get(f"/api/projects/{pid}/nodes/root").get_json()
    assert any("by timeout" in w for w in node["node"]["warnings"])
    (review,) = node["reviews"]
    assert review["status"] == "answered" and review["decision"]["by"] == "timeout"
    assert review["decision"]["action"] == action and review["deadline"] is not None


def test_review_every_level_asks_for_each_plan(client: FlaskClient) -> None:
    config = {"review": "all", "max_depth": 2, "force_root_planning": True, "skip_atomization": True}
    pid = client.post("/api/projects", json={"goal": "Deep", "config": config}).get_json()["project_id"]
    client.post(f"/api/projects/{pid}/execute")
    answered: set[str] = set()

    def approve_pending() -> bool:
        for review in client.get(f"/api/projects/{pid}/reviews").get_json()["reviews"]:
            client.post(f"/api/reviews/{review['review_id']}", json={"action": "approve"})
            answered.add(review["task_id"])
        return client.get(f"/api/projects/{pid}").get_json()["status"] != "running"

    wait_for(approve_pending, what="every plan reviewed")
    assert answered == {"root", "root.0", "root.1"}
    assert client.get(f"/api/projects/{pid}").get_json()["status"] == "completed"


def test_a_tool_call_review_shows_its_tool_and_arguments_and_is_approved_or_refused_over_rest(
    app: Flask, client: FlaskClient
) -> None:
    pid = client.post("/api/projects", json={"goal": "Refunds"}).get_json()["project_id"]
    service = app.extensions["sentient"].runs.service
    opened = service.open_review(pid, call_review("root.1", "refund", {"order": "A-7", "amount_eur": 12.5}), None)

    (shown,) = client.get(f"/api/projects/{pid}/reviews").get_json()["reviews"]
    modified = client.post(f"/api/reviews/{opened.review_id}", json={"action": "modify", "instructions": "less"})
    refused = client.post(f"/api/reviews/{opened.review_id}", json={"action": "reject", "reason": "not today"})

    assert (shown["kind"], shown["plan"]) == ("tool_call", None)
    assert shown["tool_call"] == {"tool": "refund", "arguments": {"order": "A-7", "amount_eur": 12.5}}
    assert modified.status_code == 400
    assert modified.get_json()["error"]["message"] == (
        "field 'action': a tool call is approved or refused ('approve' or 'reject'), not modified"
    )
    assert refused.status_code == 200 and refused.get_json()["decision"]["action"] == "reject"
    assert service.review(opened.review_id).engine_decision() == Reject("not today")
