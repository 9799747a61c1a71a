"""Schema v2 (options and spent with each project), its migration from v1 files, claims, and the
budget that reserves before each call and settles after."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from pathlib import Path

import pytest
from fakes.old_store import sqlite_store_at

from sentient.budget import Budget, Spent
from sentient.settings import EngineSettings
from sentient.store import Owner, ProjectBusyError, ProjectStatus, ProjectStore
from sentient.store.schema import SCHEMA_VERSION


def test_a_v1_file_is_migrated_and_keeps_its_projects(tmp_path: Path) -> None:
    path = tmp_path / "sentient.db"
    sqlite_store_at(
        path,
        1,
        "INSERT INTO projects (project_id, goal, profile, status, created_at, updated_at)"
        " VALUES ('old', 'an old goal', 'general_agent', 'stopped', 1, 1)",
    )

    with ProjectStore.open(tmp_path) as store:
        old = store.get_project("old")
        assert (old.goal, old.status, old.options, old.spent) == ("an old goal", ProjectStatus.STOPPED, {}, {})
        assert store.get_report_data("old") is None  # v3: no report data until a run stores one
        store.set_options("old", {"model": "scripted"})
        store.set_spent("old", Spent(1.5, 7, 30.0).to_dict())
        again = store.get_project("old")
    assert again.options == {"model": "scripted"}
    assert Spent.from_dict(again.spent) == Spent(1.5, 7, 30.0)
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


def test_options_are_stored_at_creation(tmp_path: Path, database_url: str | None) -> None:
    with ProjectStore.open(tmp_path, database_url) as store:
        store.create_project("p", "goal", "general_agent", {}, {"model": "openai:gpt-4o-mini", "offline": True})
        assert store.get_project("p").options == {"model": "openai:gpt-4o-mini", "offline": True}


def test_a_claim_by_the_owner_itself_or_over_a_dead_owner_succeeds(tmp_path: Path, database_url: str | None) -> None:
    with ProjectStore.open(tmp_path, database_url) as store:
        store.create_project("p", "goal", "general_agent", {})
        me = os.getpid()
        assert store.claim("p").status is ProjectStatus.RUNNING
        assert store.claim("p").owner_pid == me, "the server claims, then its run claims again"
        dead = Owner.local(2**22 + 12345)  # no such process here: its live lease does not keep the project
        store._update(
            "p", "UPDATE projects SET owner_pid = ?, owner_start = ?, owner_token = ?", [dead.pid, "1", dead.token]
        )
        assert store.claim("p").owner_pid == me, "a dead owner's project is taken over"


def test_a_claim_over_a_live_owner_is_refused(tmp_path: Path, database_url: str | None) -> None:
    with ProjectStore.open(tmp_path, database_url) as store:
        store.create_project("p", "goal", "general_agent", {})
        store.claim("p", Owner.local(1))  # pid 1 always runs
        with pytest.raises(ProjectBusyError, match="already being run by process 1"):
            store.claim("p")


# Two live processes: this one and its parent.
OWNERS = (Owner.local(os.getpid()), Owner.local(os.getppid()))


def test_a_claim_that_read_the_project_before_another_committed_its_claim_loses(
    tmp_path: Path, database_url: str | None
) -> None:
    """The interleaving that matters: both read the project unclaimed, then both write."""
    first, second = (ProjectStore.open(tmp_path, database_url) for _ in range(2))  # two connections
    first.create_project("p", "goal", "general_agent", {})
    outcome: list[BaseException | ProjectStatus] = []

    def claim_second() -> None:
        try:
            outcome.append(second.claim("p", OWNERS[1]).status)
        except BaseException as exc:
            outcome.append(exc)

    with first.transaction() as conn:  # the first claim's UPDATE, not committed yet
        conn.execute("UPDATE projects SET status = 'running', owner_pid = ? WHERE project_id = 'p'", (OWNERS[0].pid,))
        thread = threading.Thread(target=claim_second)
        thread.start()
        thread.join(0.5)  # it reads 'created', then waits for the write lock (SQLite) or the row (PostgreSQL)
        assert thread.is_alive(), "the second claim must wait for the first to commit"
    thread.join(10)

    (result,) = outcome
    assert isinstance(result, ProjectBusyError) and result.owner_pid == OWNERS[0].pid
    assert second.get_project("p").owner_pid == OWNERS[0].pid
    first.close()
    second.close()


def _claim_at_once(stores: list[ProjectStore], project_id: str) -> tuple[list[int], list[int]]:
    """Each store claims the project for its owner, all released at the same moment: (won, refused)."""
    start = threading.Barrier(len(stores))
    won: list[int] = []
    refused: list[int] = []

    def claim(i: int) -> None:
        start.wait()
        try:
            stores[i].claim(project_id, OWNERS[i])
            won.append(i)
        except ProjectBusyError:
            refused.append(i)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return won, refused


def test_of_two_connections_claiming_at_once_exactly_one_wins(tmp_path: Path, database_url: str | None) -> None:
    stores = [ProjectStore.open(tmp_path, database_url) for _ in OWNERS]
    for round in range(10):
        project_id = f"p{round}"
        stores[0].create_project(project_id, "goal", "general_agent", {})

        won, refused = _claim_at_once(stores, project_id)

        assert len(won) == 1 and len(refused) == 1, (won, refused)
        for store in stores:
            assert store.get_project(project_id).owner_pid == OWNERS[won[0]].pid
    for store in stores:
        store.close()


# -- budget ------------------------------------------------------------------------------------------


def budget(**limits: float) -> Budget:
    return Budget(EngineSettings(**limits))


async def test_calls_wait_for_those_in_flight_near_the_cost_limit() -> None:
    b = budget(max_cost_usd=1.0)
    stops: list[str] = []
    b.on_exhausted = stops.append
    assert await b.reserve(0.6)
    waiting = asyncio.create_task(b.reserve(0.6))  # 0 spent + 0.6 reserved: room for one more call
    await asyncio.sleep(0)
    assert waiting.done() and waiting.result()
    third = asyncio.create_task(b.reserve(0.6))  # 1.2 reserved >= 1.0: waits for a call to settle
    await asyncio.sleep(0)
    assert not third.done()
    b.settle(0.6, 0.5)  # spent 0.5, reserved 0.6: still at the limit
    await asyncio.sleep(0)
    assert not third.done()
    b.settle(0.6, 0.55)  # spent 1.05: the limit is reached, nothing more starts
    assert await third is False
    assert stops and stops[0].startswith("cost budget reached")
    assert b.cost_usd == pytest.approx(1.05)


async def test_the_call_limit_counts_retries_and_earlier_runs() -> None:
    b = Budget(EngineSettings(max_llm_calls=4), spent=Spent(0.0, 2, 0.0))
    assert await b.reserve(0.0)  # 3
    assert b.count_retry()  # 4
    assert not b.count_retry()
    assert b.exhausted == "call budget reached (4 of 4 model requests)"
    assert b.spent().requests == 4


def test_the_time_limit_counts_earlier_runs() -> None:
    now = [100.0]
    b = Budget(EngineSettings(max_time_s=60), clock=lambda: now[0], spent=Spent(0.0, 0, 50.0))
    assert b.time_left_s() == pytest.approx(10.0)
    now[0] += 11
    assert b.check() == "time budget reached (60 s)"
