"""Leases: a running project is held by one owner, renewed by a heartbeat, taken over once it expires.

"Another machine" is an owner whose host name is not this one's: its pid means nothing here, so
only its lease counts. Leases are short (0.5 s) and real time passes; no clock is mocked.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.old_store import sqlite_store_at

from sentient.events import NodeCreated, snapshot
from sentient.graph.node import NodeType, TaskNode, TaskType
from sentient.store import (
    Heartbeat,
    LeaseLostError,
    Owner,
    ProjectBusyError,
    ProjectStatus,
    ProjectStore,
    StoreWriter,
    StoreWriterError,
    owner_alive,
)
from sentient.store.schema import SCHEMA_VERSION

LEASE_S = 0.5


def elsewhere(pid: int = 4242) -> Owner:
    """An owner on another machine."""
    return Owner("another-machine", pid)


@pytest.fixture
def stores(tmp_path: Path, database_url: str | None) -> Iterator[tuple[ProjectStore, ProjectStore]]:
    """Two workers on one database (two connections, two owners), with short leases."""
    pair = tuple(ProjectStore.open(tmp_path, database_url, lease_s=LEASE_S) for _ in range(2))
    pair[0].create_project("p", "goal", "general_agent", {})
    yield pair  # type: ignore[misc]
    for store in pair:
        store.close()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_an_expired_lease_lets_another_worker_take_the_project_over(
    stores: tuple[ProjectStore, ProjectStore],
) -> None:
    first, second = stores
    away = elsewhere()
    first.claim("p", away)
    with pytest.raises(ProjectBusyError, match="process 4242 on another-machine"):
        second.claim("p")

    time.sleep(LEASE_S + 0.1)

    record = second.claim("p")
    assert (record.owner_token, record.owner_pid) == (second.owner.token, second.owner.pid)
    with pytest.raises(LeaseLostError, match="claimed it after"):
        first.renew("p", away)


def test_a_live_heartbeat_keeps_the_project_and_its_end_lets_it_go(stores: tuple[ProjectStore, ProjectStore]) -> None:
    first, second = stores
    away = elsewhere()
    first.claim("p", away)
    lost: list[LeaseLostError] = []
    heartbeat = Heartbeat(first, "p", away, lost.append)
    heartbeat.start()
    try:
        deadline = time.monotonic() + 3 * LEASE_S  # three leases' time: only renewals keep it
        while time.monotonic() < deadline:
            with pytest.raises(ProjectBusyError):
                second.claim("p")
            time.sleep(0.05)
    finally:
        heartbeat.stop()
    assert lost == [] and heartbeat.lost is None

    time.sleep(LEASE_S + 0.1)  # no more renewals: the lease runs out
    assert second.claim("p").owner_token == second.owner.token


def test_a_heartbeat_that_finds_its_lease_taken_reports_it_once(stores: tuple[ProjectStore, ProjectStore]) -> None:
    first, second = stores
    first.claim("p")
    lost: list[LeaseLostError] = []
    heartbeat = Heartbeat(first, "p", first.owner, lost.append)
    heartbeat.start()
    # As if the lease had expired while the holder was frozen, and another worker had claimed it.
    second._update("p", "UPDATE projects SET owner_token = ?, owner_host = ?", [second.owner.token, "another-machine"])
    deadline = time.monotonic() + 5
    while not lost and time.monotonic() < deadline:
        time.sleep(0.02)
    heartbeat.stop()

    assert len(lost) == 1 and heartbeat.lost is lost[0]
    assert "no longer held by this process" in str(lost[0])


def test_only_the_owner_renews_and_releases(stores: tuple[ProjectStore, ProjectStore]) -> None:
    first, second = stores
    first.claim("p")
    with pytest.raises(LeaseLostError):
        second.renew("p")
    assert not second.release("p", "failed", "not mine")
    assert first.get_project("p").status is ProjectStatus.RUNNING

    first.renew("p")
    assert first.release("p", "completed")
    record = first.get_project("p")
    assert (record.status, record.owner_token, record.lease_expires_at) == (ProjectStatus.COMPLETED, None, None)
    assert record.owner_pid == first.owner.pid, "who ran it last stays readable"
    with pytest.raises(LeaseLostError, match="it is completed now"):
        first.renew("p")


def test_a_worker_that_lost_the_project_does_not_record_its_end(stores: tuple[ProjectStore, ProjectStore]) -> None:
    first, second = stores
    away = elsewhere()
    first.claim("p", away)
    time.sleep(LEASE_S + 0.1)
    second.claim("p")

    assert not first.release("p", "failed", "lost", owner=away)
    assert not first.set_status("p", "interrupted", owner=away)
    record = second.get_project("p")
    assert (record.status, record.owner_token) == (ProjectStatus.RUNNING, second.owner.token)


def test_another_machines_live_lease_holds_whatever_its_pid_is_here(
    stores: tuple[ProjectStore, ProjectStore],
) -> None:
    first, second = stores
    dead_here = _dead_pid()
    first.claim("p", elsewhere(dead_here))  # that pid is no process here: it says nothing about the owner there
    assert owner_alive(second.get_project("p"))
    assert second.stale_running() == []
    with pytest.raises(ProjectBusyError):
        second.claim("p")


def test_a_dead_process_of_this_machine_is_taken_over_before_its_lease_ends(
    stores: tuple[ProjectStore, ProjectStore],
) -> None:
    first, second = stores
    first.claim("p", Owner.local(_dead_pid()))  # a kill -9 on this machine: no need to wait for the lease
    assert [r.project_id for r in second.stale_running()] == ["p"]
    assert second.claim("p").owner_token == second.owner.token


def test_an_expired_lease_makes_the_project_stale(stores: tuple[ProjectStore, ProjectStore]) -> None:
    first, second = stores
    first.claim("p", elsewhere())
    assert second.stale_running() == []
    time.sleep(LEASE_S + 0.1)
    assert [r.project_id for r in second.stale_running()] == ["p"]


def _claim_at_once(workers: list[ProjectStore], project_id: str) -> list[int]:
    """Each worker claims the project, all released at the same moment: the indexes of the winners."""
    start = threading.Barrier(len(workers))
    won: list[int] = []

    def claim(i: int) -> None:
        start.wait()
        try:
            workers[i].claim(project_id)
            won.append(i)
        except ProjectBusyError:
            pass

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return won


def test_of_two_workers_taking_over_an_expired_lease_at_once_exactly_one_wins(
    tmp_path: Path, database_url: str | None
) -> None:
    workers = [ProjectStore.open(tmp_path, database_url, lease_s=LEASE_S) for _ in range(2)]
    try:
        for round in range(5):
            project_id = f"p{round}"
            workers[0].create_project(project_id, "goal", "general_agent", {})
            workers[0].claim(project_id, elsewhere())
        time.sleep(LEASE_S + 0.1)
        for round in range(5):
            project_id = f"p{round}"
            won = _claim_at_once(workers, project_id)
            assert len(won) == 1, won
            assert workers[1].get_project(project_id).owner_token == workers[won[0]].owner.token
    finally:
        for worker in workers:
            worker.close()


def test_a_writer_writes_nothing_once_its_owner_lost_the_project(stores: tuple[ProjectStore, ProjectStore]) -> None:
    first, second = stores
    first.claim("p")
    writer = StoreWriter(first, "p", owner=first.owner)
    root = TaskNode(task_id="root", goal="goal", task_type=TaskType.SEARCH, node_type=NodeType.PLAN, layer=0)
    writer(NodeCreated(snapshot(root)))
    writer.flush()
    assert [n.task_id for n in first.load_graph("p")] == ["root"]

    second._update("p", "UPDATE projects SET owner_token = ?", [second.owner.token])  # taken over
    child = TaskNode(
        task_id="root.0", goal="sub", task_type=TaskType.SEARCH, node_type=NodeType.EXECUTE, layer=1, parent_id="root"
    )
    writer(NodeCreated(snapshot(child)))
    with pytest.raises(StoreWriterError, match="another worker holds it"):
        writer.close()
    assert [n.task_id for n in second.load_graph("p")] == ["root"]


def test_a_v3_file_gains_leases_and_keeps_a_running_projects_pid_owner(tmp_path: Path) -> None:
    path = tmp_path / "sentient.db"
    sqlite_store_at(
        path,
        3,
        "INSERT INTO projects (project_id, goal, profile, status, owner_pid, created_at, updated_at)"
        " VALUES ('old', 'goal', 'general_agent', 'running', 1, 1, 1)",  # pid 1 always runs
    )

    with ProjectStore.open(tmp_path) as store:
        old = store.get_project("old")
        assert (old.owner_pid, old.owner_token, old.lease_expires_at) == (1, None, None)
        assert owner_alive(old), "a claim from before leases is judged by its process, as then"
        with pytest.raises(ProjectBusyError):
            store.claim("old")
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
