"""Scale-out with real processes: two web processes, two ``sentient worker`` processes, one Redis and
one PostgreSQL. Clients of one web process follow, complete and in order, every project submitted
to the other; and the provider limits of one hosted key hold for both workers together."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cluster import Cluster, ran
from server_helpers import Recorder, wait_for

PROJECTS = 10


def followed(received: Recorder, project_id: str) -> dict[str, dict[str, Any]]:
    """Rebuild the project's graph from what a client received, checking the protocol's order on
    the way: the snapshot comes first, nothing follows ``project_completed``, and each node's
    ``history`` (its status changes, oldest first) only ever grows: a node that arrives again
    extends what the client holds, so no diff came late or twice."""
    nodes: dict[str, dict[str, Any]] = {}
    snapshot, completed = False, False
    with received.lock:
        events = list(received.events)
    for name, data in events:
        if name == "project_snapshot" and data["project"]["project_id"] == project_id:
            assert not completed, f"{project_id}: a snapshot after project_completed"
            incoming, removed = list(data["graph"]["nodes"].values()), []
            snapshot = True
        elif name == "node_update" and data["project_id"] == project_id:
            assert snapshot and not completed, f"{project_id}: a diff outside snapshot..project_completed"
            incoming, removed = data["nodes"], data["removed"]
        elif name == "project_completed" and data["project"]["project_id"] == project_id:
            completed = True
            continue
        else:
            continue
        for node in incoming:
            held = nodes.get(node["task_id"])
            if held is not None:
                assert node["history"][: len(held["history"])] == held["history"], (
                    f"{project_id}/{node['task_id']}: {held['history']} then {node['history']}"
                )
            nodes[node["task_id"]] = node
        for task_id in removed:
            nodes.pop(task_id, None)
    assert completed, f"{project_id}: no project_completed"
    return nodes


def diffs(received: Recorder, project_id: str) -> list[dict[str, Any]]:
    return [update for update in received.of("node_update") if update["project_id"] == project_id]


def test_clients_of_one_web_process_follow_every_update_of_ten_projects_run_through_the_other(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    web_a, web_b = built.web(), built.web()
    workers = [built.worker(name, latency_s=0.02, jobs=4) for name in ("w1", "w2")]
    built.wait_listening(4)  # both web processes and both workers
    projects = [built.create(f"How does asyncio schedule tasks? ({n})", max_subtasks=2) for n in range(PROJECTS)]
    # Two clients of web B, and one of web A to compare with: every diff reaches every client.
    clients = [built.connect(on=web) for web in (web_b, web_b, web_a)]
    for sio, _ in clients:
        for project_id in projects:
            built.join(sio, project_id)  # not started yet: each web process serves the join from the store
    for project_id in projects:
        built.execute(project_id)  # through web A
    for project_id in projects:
        built.wait_status(project_id, "completed", timeout=60)

    for _, received in clients:
        for project_id in projects:
            wait_for(lambda r=received, p=project_id: r.completed(p), what=f"project_completed of {project_id}")
    (_, on_b), (_, also_on_b), (_, on_a) = clients
    for project_id in projects:
        stored = built.api("GET", f"/api/projects/{project_id}/graph", on=web_b).json()["nodes"]
        assert len(stored) > 1 and all(node["status"] == "DONE" for node in stored.values())
        for received in (on_b, also_on_b):
            first_snapshot = next(
                s for s in received.of("project_snapshot") if s["project"]["project_id"] == project_id
            )
            assert first_snapshot["graph"]["nodes"] == {}, "joined before the start: every node came in a diff"
            assert followed(received, project_id) == stored
            assert diffs(received, project_id) == diffs(on_a, project_id)
    outputs = [worker.stop() for worker in workers]
    assert all(any(ran(output, p) for p in projects) for output in outputs), "both workers ran projects"
