"""A web process that queues its projects (SENTIENT_QUEUE_URL) and ``sentient worker`` processes that
run them, on a real Redis and a real PostgreSQL: every project runs on exactly one worker; cancels
and review answers made on the web process reach the worker; a worker killed with SIGKILL or
stopped with SIGTERM loses nothing, and another worker finishes its project without re-running a
finished node."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cluster import CLI, Cluster, ran
from fakes.redis_server import RedisServer
from server_helpers import Recorder, free_port, serve_env, wait_for

from sentient.store import ProjectStore


def calls_per_task(store: ProjectStore, project_id: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for call in store.calls(project_id):
        counts[call["task_id"]] = counts.get(call["task_id"], 0) + 1
    return counts


def done_nodes(store: ProjectStore, project_id: str) -> set[str]:
    return {node.task_id for node in store.load_graph(project_id) if node.status.value == "DONE"}


def test_projects_queued_on_the_web_process_all_complete_each_on_exactly_one_worker(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    built.web()
    workers = [built.worker(name, latency_s=0.2, jobs=1) for name in ("w1", "w2")]
    built.wait_listening(3)  # the web process and both workers: none takes every job before the other is up
    projects = [built.submit(f"Explain how asyncio schedules tasks ({n})", max_subtasks=2) for n in range(4)]
    for project_id in projects:
        built.wait_status(project_id, "completed", timeout=45)
    outputs = [worker.stop() for worker in workers]
    assert [worker.proc.returncode for worker in workers] == [0, 0], outputs
    for project_id in projects:
        assert sum(ran(output, project_id) for output in outputs) == 1, f"{project_id} did not run exactly once"
    assert all(any(ran(output, p) for p in projects) for output in outputs), "both workers took projects"
    web = built.processes[0]
    web.stop()
    assert web.proc.returncode == 0


def test_a_cancel_made_on_the_web_process_stops_the_project_on_its_worker_within_two_seconds(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    built.web()
    built.worker("w1", latency_s=0.5)
    project_id = built.submit("Explain how asyncio schedules tasks", max_subtasks=4)
    built.wait_status(project_id, "running")
    asked = time.monotonic()
    cancelled = built.api("POST", f"/api/projects/{project_id}/cancel")
    assert cancelled.status_code == 202, cancelled.text
    built.wait_status(project_id, "cancelled", timeout=2)
    assert time.monotonic() - asked < 2


def test_a_delete_made_on_the_web_process_stops_the_project_on_its_worker_which_deletes_it(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    built.web()
    worker = built.worker("w1", latency_s=0.5)
    project_id = built.submit("Explain how asyncio schedules tasks", max_subtasks=4)
    built.wait_status(project_id, "running")

    deleted = built.api("DELETE", f"/api/projects/{project_id}")

    assert deleted.status_code == 200, deleted.text
    assert built.api("GET", f"/api/projects/{project_id}").status_code == 404
    assert not list((built.tmp_path / "w1").rglob(f"{project_id}*"))  # its files went, none written after
    output = worker.stop()
    assert "forwarded delete not served" not in output


def test_a_project_cancelled_while_queued_is_not_run_by_the_worker_that_starts_later(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    built.web()
    cancelled = built.submit("Explain how asyncio schedules tasks", max_subtasks=2)  # no worker yet
    answer = built.api("POST", f"/api/projects/{cancelled}/cancel")
    assert answer.status_code == 202, answer.text
    assert answer.json()["status"] == "cancelled"
    kept = built.submit("What does the GIL serialise?", max_subtasks=2)

    worker = built.worker("w1", latency_s=0.02)
    built.wait_status(kept, "completed", timeout=60)  # jobs are taken in order: the cancelled one's first

    assert built.status(cancelled) == "cancelled"
    output = worker.stop()
    assert ran(output, kept) and not ran(output, cancelled)
    assert f"project {cancelled}: not run" in output


def test_a_review_answered_on_the_web_process_wakes_the_project_on_its_worker_whose_updates_reach_clients(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    built.web()
    built.worker("w1", latency_s=0.05)
    project_id = built.create("Explain how asyncio schedules tasks", max_subtasks=2, review="root")
    _, early = built.client(project_id)  # not running yet: the web process serves the join from the store
    built.execute(project_id)

    def pending() -> list[dict[str, Any]]:
        reviews: list[dict[str, Any]] = built.api("GET", f"/api/projects/{project_id}/reviews").json()["reviews"]
        return reviews

    (review,) = wait_for(pending, timeout=30, what="the root plan's review")
    _, late = built.client(project_id)  # running on the worker: the join is forwarded there
    time.sleep(0.5)  # the run waits on the review, and would wait for good without the wake-up
    assert built.status(project_id) == "running"
    answered = built.api("POST", f"/api/reviews/{review['review_id']}", json={"action": "approve"})
    assert answered.status_code == 200, answered.text
    built.wait_status(project_id, "completed", timeout=30)

    # The worker's announcements and diffs reached the web process's clients, through Redis.
    for seen in (early, late):
        wait_for(lambda s=seen: s.completed(project_id), what="project_completed")  # type: ignore[misc]
    assert [r["review"]["review_id"] for r in early.of("hitl_request")] == [review["review_id"]]
    (snapshot,) = late.of("project_snapshot")
    assert snapshot["project"]["status"] == "running" and late.names()[-1] == "project_completed"
    stored = built.api("GET", f"/api/projects/{project_id}/graph").json()["nodes"]
    assert len(stored) > 1 and all(node["status"] == "DONE" for node in stored.values())
    for seen in (early, late):
        assert {k: n["status"] for k, n in seen.graph_view(project_id).items()} == {
            k: n["status"] for k, n in stored.items()
        }


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_a_worker_that_dies_or_is_stopped_mid_run_loses_nothing_and_another_finishes_its_project(
    cluster: Callable[..., Cluster], stop: int
) -> None:
    built = cluster(lease_s=2)
    built.web()
    first = built.worker("w1", latency_s=0.3)
    project_id = built.submit("Explain how asyncio schedules tasks", max_subtasks=4)
    store = built.store()
    try:
        wait_for(lambda: len(done_nodes(store, project_id)) >= 2, timeout=30, what="finished nodes")
        second = built.worker("w2", latency_s=0.05)  # only now: the first one took the project
        finished = done_nodes(store, project_id)
        calls_before = calls_per_task(store, project_id)
        started = time.monotonic()
        output = first.stop(stop)
        if stop == signal.SIGTERM:
            assert first.proc.returncode == 0, output
            assert time.monotonic() - started < 10, "a stopped worker hands its project back at once"
        built.wait_status(project_id, "completed", timeout=40)
        calls_after = calls_per_task(store, project_id)
        assert {task: calls_after[task] for task in finished} == {task: calls_before[task] for task in finished}
        assert finished <= done_nodes(store, project_id)
        assert ran(second.stop(), project_id), "the other worker resumed the project"
    finally:
        store.close()


def test_a_worker_without_a_reachable_queue_stops_at_once_with_one_line_naming_the_variable(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    env = serve_env(tmp_path, SENTIENT_REDIS_URL=redis_server.url)
    missing = subprocess.run([*CLI, "worker"], env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "SENTIENT_QUEUE_URL" in missing.stderr, missing.stderr
    env["SENTIENT_QUEUE_URL"] = f"redis://127.0.0.1:{free_port()}/0"
    unreachable = subprocess.run([*CLI, "worker"], env=env, capture_output=True, text=True, timeout=60)
    assert unreachable.returncode == 2 and "SENTIENT_QUEUE_URL" in unreachable.stderr, unreachable.stderr
    assert "does not answer" in unreachable.stderr and "Traceback" not in unreachable.stderr


def test_a_project_that_a_worker_cannot_run_fails_saying_why_instead_of_waiting_forever(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    built.web()
    # The web process checks the project with its own settings; this worker has a hosted model and no key.
    built.cli_worker("w1", SENTIENT_MODEL="openai:gpt-4o-mini", OPENAI_API_KEY="")
    project_id = built.submit("Explain how asyncio schedules tasks")
    built.wait_status(project_id, "failed")
    error = built.api("GET", f"/api/projects/{project_id}").json()["error"]
    assert "cannot run it" in error and "OPENAI_API_KEY" in error, error


def test_with_two_web_processes_clients_of_both_get_the_same_updates_and_either_takes_cancels_and_answers(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    web_a, web_b = built.web(), built.web()
    built.worker("w1", latency_s=0.1)
    built.worker("w2", latency_s=0.1)
    reviewed = built.create("Explain how asyncio schedules tasks", max_subtasks=2, review="root")
    _, on_a = built.client(reviewed, on=web_a)
    _, on_b = built.client(reviewed, on=web_b)
    built.execute(reviewed)  # through web A
    # Held by its plan review until it is cancelled: a run of the scripted model alone can end
    # between being seen running and the cancel.
    # A task, not a question: a question is answered first, with no plan to review.
    cancelled = built.submit("Summarise what the GIL serialises", max_subtasks=4, review="root")

    (review,) = wait_for(
        lambda: built.api("GET", f"/api/projects/{reviewed}/reviews", on=web_b).json()["reviews"],
        timeout=30,
        what="the root plan's review",
    )
    answered = built.api("POST", f"/api/reviews/{review['review_id']}", on=web_b, json={"action": "approve"})
    assert answered.status_code == 200, answered.text
    wait_for(
        lambda: built.api("GET", f"/api/projects/{cancelled}/reviews", on=web_a).json()["reviews"],
        timeout=30,
        what="the review that holds the project to cancel",
    )
    built.wait_status(cancelled, "running")
    # Held by its review, the run sends nothing until the cancel. A diff sent before B's snapshot
    # can still reach A after A's own: wait until neither client hears anything, then compare what
    # the cancel sends them.
    _, cancelled_on_a = built.client(cancelled, on=web_a)
    _, cancelled_on_b = built.client(cancelled, on=web_b)
    _wait_quiet(cancelled_on_a, cancelled_on_b)
    seen_a, seen_b = len(cancelled_on_a.events), len(cancelled_on_b.events)
    asked = time.monotonic()
    cancel = built.api("POST", f"/api/projects/{cancelled}/cancel", on=web_b)
    assert cancel.status_code == 202, cancel.text
    built.wait_status(cancelled, "cancelled", timeout=2)
    assert time.monotonic() - asked < 2
    built.wait_status(reviewed, "completed", timeout=30)
    # The worker that runs it ends it and says so, in order with its diffs, to the clients of both.
    for seen in (cancelled_on_a, cancelled_on_b):
        wait_for(lambda s=seen: s.completed(cancelled), what="project_completed")  # type: ignore[misc]
    assert cancelled_on_a.events[seen_a:] == cancelled_on_b.events[seen_b:]
    assert cancelled_on_b.completed(cancelled)["project"]["status"] == "cancelled"

    # Both clients got every update of the worker's run, in the same order, after their own snapshot.
    for seen in (on_a, on_b):
        wait_for(lambda s=seen: s.completed(reviewed), what="project_completed")  # type: ignore[misc]
    assert on_a.names()[0] == on_b.names()[0] == "project_snapshot"
    assert on_a.events[1:] == on_b.events[1:]
    assert len(on_b.of("node_update")) >= 2 and on_b.names()[-1] == "project_completed"
    stored = built.api("GET", f"/api/projects/{reviewed}/graph", on=web_b).json()["nodes"]
    assert {k: n["status"] for k, n in on_b.graph_view(reviewed).items()} == {k: n["status"] for k, n in stored.items()}


def _wait_quiet(*recorders: Recorder, quiet_s: float = 1.0, timeout: float = 30) -> None:
    """Wait until none of ``recorders`` has received an event for ``quiet_s`` seconds."""
    counts, since = [len(r.events) for r in recorders], time.monotonic()
    deadline = since + timeout
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, "the clients kept receiving events"
        time.sleep(0.05)
        now = [len(r.events) for r in recorders]
        if now != counts:
            counts, since = now, time.monotonic()
