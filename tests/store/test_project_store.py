"""ProjectStore: projects, reviews, owners, ids and the file itself."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.old_store import sqlite_store_at

from sentient.events import AgentCallFinished, EventBus, NodeCreated, NodeStatusChanged, snapshot
from sentient.graph.node import NodeType, TaskType
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.store import (
    PROJECT_ACTIVE,
    PROJECT_FINISHED,
    PROJECT_RESUMABLE,
    InvalidProjectIdError,
    NodeNotFoundError,
    Owner,
    ProjectExistsError,
    ProjectNotFoundError,
    ProjectStatus,
    ProjectStore,
    ReviewAlreadyAnsweredError,
    ReviewNotFoundError,
    StoreError,
    StoreWriter,
    check_project_id,
)
from sentient.store.schema import SCHEMA_VERSION

PROJECT_KEYS = {
    "project_id",
    "goal",
    "profile",
    "status",
    "created_at",
    "updated_at",
    "error",
    "settings",
    "stats",
    "pending_reviews",
}
REVIEW_KEYS = {
    "review_id",
    "project_id",
    "task_id",
    "goal",
    "layer",
    "round",
    "plan",
    "context",
    "created_at",
    "deadline",
    "status",
}
PLAN = {"subtasks": [{"goal": "look it up", "task_type": "SEARCH", "depends_on_indices": []}]}


@pytest.fixture
def store(tmp_path: Path, database_url: str | None) -> Iterator[ProjectStore]:
    """A new store on each backend: SQLite, then PostgreSQL."""
    store = ProjectStore.open(tmp_path, database_url)
    yield store
    store.close()


def _review(review_id: str = "r1", project_id: str = "p1", **changes: object) -> dict[str, object]:
    return {
        "review_id": review_id,
        "project_id": project_id,
        "task_id": "root",
        "round": 1,
        "goal": "Explain asyncio",
        "layer": 0,
        "plan": PLAN,
        "context": "what the planner saw",
        **changes,
    }


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _fill(store: ProjectStore, project_id: str) -> None:
    """A node with history, a call, knowledge and a review."""
    graph = TaskGraph()
    root = graph.add_root("goal", TaskType.WRITE, NodeType.EXECUTE)
    bus = EventBus()
    with StoreWriter(store, project_id) as writer:
        bus.subscribe(writer)
        bus.publish(NodeCreated(snapshot(root)))
        for target in (TaskStatus.EXECUTING, TaskStatus.DONE):
            if target is TaskStatus.DONE:
                root.result = "answer"
            old = root.move_to(target)
            bus.publish(NodeStatusChanged(snapshot(root), old, root.history[-1].at))
        store.add_knowledge(project_id, "root", root.goal, "answer", [])
        root.agent_calls, root.input_tokens, root.output_tokens = 1, 10, 2
        bus.publish(
            AgentCallFinished(
                "root",
                "executor",
                "a",
                "m",
                "prompt",
                {},
                "answer",
                None,
                1,
                10,
                2,
                time.time(),
                0.1,
                node=snapshot(root),
            )
        )
    store.add_review(_review(f"review-{project_id}", project_id))


# -- projects ------------------------------------------------------------------------------


def test_new_file_gets_the_current_schema_in_wal_mode(tmp_path: Path) -> None:
    with ProjectStore.open(tmp_path) as store:
        assert store.location == str(tmp_path / "sentient.db")
    conn = sqlite3.connect(tmp_path / "sentient.db")
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()


def test_a_file_from_a_newer_sentient_is_refused(tmp_path: Path) -> None:
    ProjectStore.open(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "sentient.db")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()

    with pytest.raises(StoreError, match="newer than this Sentient"):
        ProjectStore.open(tmp_path)


def test_an_empty_file_is_refused_naming_it_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "sentient.db"
    db.touch()
    with pytest.raises(StoreError, match=rf"the project store {re.escape(str(db))} is an empty file \(0 bytes\)"):
        ProjectStore.open(tmp_path)
    assert db.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sentient.db"]


def test_stores_opened_at_once_on_a_new_folder_all_open_and_leave_no_temporary_files(tmp_path: Path) -> None:
    """A new file is linked into place whole: no opener sees it empty (and refuses it) half-made."""
    for round_ in range(10):
        folder = tmp_path / str(round_)
        assert _open_at_once(folder, 6) == []
        assert [p.name for p in folder.iterdir() if p.name.endswith(".new")] == []


def _open_at_once(folder: Path, count: int) -> list[StoreError]:
    """Open the store of ``folder`` from ``count`` threads released together; the errors raised."""
    start = threading.Barrier(count)
    errors: list[StoreError] = []

    def open_store() -> None:
        start.wait()
        try:
            ProjectStore.open(folder).close()
        except StoreError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_created_project_has_the_protocol_shape_and_survives_reopening(
    tmp_path: Path, database_url: str | None
) -> None:
    with ProjectStore.open(tmp_path, database_url) as store:
        created = store.create_project("p1", "Explain asyncio", "general_agent", {"max_depth": 1})

    with ProjectStore.open(tmp_path, database_url) as store:
        record = store.get_project("p1")

    assert record == created
    data = record.to_dict()
    assert set(data) == PROJECT_KEYS
    assert data["status"] == "created" and data["settings"] == {"max_depth": 1} and data["pending_reviews"] == 0
    assert data["stats"]["nodes"] == 0


def test_projects_are_listed_newest_first(store: ProjectStore) -> None:
    for project_id in ("a", "b", "c"):
        store.create_project(project_id, "goal", "general_agent", {})

    assert [p.project_id for p in store.list_projects()] == ["c", "b", "a"]


def test_projects_with_an_option_are_found_oldest_first(store: ProjectStore) -> None:
    store.create_project("a", "goal", "general_agent", {}, {"follows": "p1", "model": "scripted"})
    store.create_project("b", "goal", "general_agent", {}, {"follows": "p2"})
    store.create_project("c", "goal", "general_agent", {})
    store.create_project("d", "goal", "general_agent", {}, {"follows": "p1"})
    store.create_project("e", "goal", "general_agent", {}, {"model": "p1"})

    assert [p.project_id for p in store.projects_with_option("follows", "p1")] == ["a", "d"]
    assert [p.project_id for p in store.projects_with_option("model", "scripted")] == ["a"]
    assert store.projects_with_option("follows", "p3") == []
    store.set_options("b", {"follows": "p1"})
    assert [p.project_id for p in store.projects_with_option("follows", "p1")] == ["a", "b", "d"]


def test_creating_an_existing_project_fails(store: ProjectStore) -> None:
    store.create_project("p1", "goal", "general_agent", {})

    with pytest.raises(ProjectExistsError, match="p1"):
        store.create_project("p1", "other", "general_agent", {})


def test_unknown_project_error_names_it_and_says_how_to_list(store: ProjectStore) -> None:
    for call in (
        lambda: store.get_project("nope"),
        lambda: store.set_status("nope", "failed"),
        lambda: store.set_stats("nope", {}),
        lambda: store.set_report("nope", "# r"),
        lambda: store.get_report("nope"),
        lambda: store.delete_project("nope"),
        lambda: store.load_graph("nope"),
        lambda: store.node("nope", "root"),
    ):
        with pytest.raises(ProjectNotFoundError, match=r"'nope'.*sentient projects list"):
            call()


def test_unknown_node_of_a_known_project(store: ProjectStore) -> None:
    store.create_project("p1", "goal", "general_agent", {})

    with pytest.raises(NodeNotFoundError, match=r"root\.7"):
        store.node("p1", "root.7")


def test_status_error_owner_stats_and_report_are_stored(store: ProjectStore) -> None:
    created = store.create_project("p1", "goal", "general_agent", {})
    store.claim("p1")
    store.set_status("p1", "failed", error="root failed")
    store.set_stats("p1", {"nodes": 3, "agent_calls": 7, "elapsed_s": 1.5})
    store.set_report("p1", "# Report\n")

    record = store.get_project("p1")

    assert (record.status, record.error, record.owner_pid) == (ProjectStatus.FAILED, "root failed", os.getpid())
    assert record.to_dict()["stats"] == {
        "nodes": 3,
        "agent_calls": 7,
        "elapsed_s": 1.5,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
        "failed_nodes": 0,
    }
    assert record.has_report and store.get_report("p1") == "# Report\n"
    assert record.updated_at >= created.updated_at
    store.claim("p1")
    assert store.get_project("p1").error is None  # a new status clears the old error


def test_report_data_is_stored_beside_the_markdown_and_reset_forgets_both(store: ProjectStore) -> None:
    store.create_project("p1", "goal", "general_agent", {})
    store.set_report("p1", "# Markdown only\n")
    assert store.get_report_data("p1") is None  # a report stored without its data

    store.set_report("p1", "Answer [1].\n", {"title": "goal", "references": [{"n": 1, "ref": "/d/a.md"}]})

    assert store.get_report("p1") == "Answer [1].\n"
    assert store.get_report_data("p1") == {"title": "goal", "references": [{"n": 1, "ref": "/d/a.md"}]}
    store.reset_project("p1")
    assert (store.get_report("p1"), store.get_report_data("p1")) == (None, None)
    with pytest.raises(ProjectNotFoundError):
        store.get_report_data("nope")


def test_unknown_status_is_refused(store: ProjectStore) -> None:
    store.create_project("p1", "goal", "general_agent", {})

    with pytest.raises(StoreError, match="unknown project status 'paused'"):
        store.set_status("p1", "paused")


def test_live_stats_count_stored_nodes_and_calls(store: ProjectStore) -> None:
    store.create_project("p1", "goal", "general_agent", {})
    _fill(store, "p1")

    stats = store.get_project("p1").to_dict()["stats"]

    assert (stats["nodes"], stats["agent_calls"], stats["input_tokens"], stats["output_tokens"]) == (1, 1, 10, 2)


def test_project_status_sets_cover_the_enum() -> None:
    assert set(ProjectStatus) == PROJECT_ACTIVE | PROJECT_FINISHED | PROJECT_RESUMABLE
    assert not (PROJECT_ACTIVE & PROJECT_FINISHED or PROJECT_ACTIVE & PROJECT_RESUMABLE)
    assert not PROJECT_FINISHED & PROJECT_RESUMABLE


# -- deleting ------------------------------------------------------------------------------


def test_delete_cascades_to_every_table_and_spares_other_projects(store: ProjectStore) -> None:
    for project_id in ("doomed", "kept"):
        store.create_project(project_id, "goal", "general_agent", {})
        _fill(store, project_id)

    store.delete_project("doomed")

    with store.transaction() as conn:
        for table in ("projects", "nodes", "status_changes", "calls", "knowledge", "reviews"):
            rows = conn.execute(f"SELECT project_id, COUNT(*) FROM {table} GROUP BY project_id").fetchall()
            counts = {project_id: count for project_id, count in rows}
            assert "doomed" not in counts and counts["kept"] >= 1, table
    with pytest.raises(ProjectNotFoundError):
        store.get_project("doomed")


def test_reset_forgets_the_run_but_keeps_the_project(store: ProjectStore) -> None:
    store.create_project("p1", "goal", "general_agent", {"max_depth": 1})
    _fill(store, "p1")
    store.set_report("p1", "# r")
    store.set_status("p1", "completed")

    store.reset_project("p1")

    record = store.get_project("p1")
    assert (record.status, record.nodes, record.pending_reviews, record.has_report) == ("created", 0, 0, False)
    assert record.settings == {"max_depth": 1}
    assert store.calls("p1") == [] and store.knowledge("p1") == []


# -- owners --------------------------------------------------------------------------------


def test_running_project_with_a_dead_owner_is_stale(store: ProjectStore) -> None:
    for project_id in ("dead", "alive", "done"):
        store.create_project(project_id, "goal", "general_agent", {})
    store.claim("dead", Owner.local(_dead_pid()))  # its lease is live, but it ran here and its process is gone
    store.claim("alive")
    store.claim("done", Owner.local(_dead_pid()))
    store.set_status("done", "completed")

    assert [p.project_id for p in store.stale_running()] == ["dead"]


def test_a_reused_pid_is_not_taken_for_the_owner(store: ProjectStore) -> None:
    if not Path(f"/proc/{os.getpid()}/stat").exists():
        pytest.skip("needs /proc to tell processes with the same pid apart")
    store.create_project("p1", "goal", "general_agent", {})
    store.claim("p1")
    with store.transaction() as conn:
        conn.execute("UPDATE projects SET owner_start = 'another process' WHERE project_id = 'p1'")

    assert [p.project_id for p in store.stale_running()] == ["p1"]


# -- ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize("project_id", ["p", "20261121-190405-python-asyncio-3f2a9c", "A.b_c-1", "x" * 128])
def test_valid_project_ids(project_id: str) -> None:
    assert check_project_id(project_id) == project_id


@pytest.mark.parametrize(
    "project_id", ["", "../etc", "a/b", "a\\b", ".hidden", "-flag", "_x", "x" * 129, "ok\n", "sp ace", "é", None, 7]
)
def test_invalid_project_ids_are_refused_clearly(store: ProjectStore, project_id: object) -> None:
    with pytest.raises(InvalidProjectIdError, match="invalid project id"):
        check_project_id(project_id)
    with pytest.raises(InvalidProjectIdError):
        store.create_project(project_id, "goal", "general_agent", {})  # type: ignore[arg-type]


def test_project_files_are_in_the_results_folder_whatever_the_database(store: ProjectStore, tmp_path: Path) -> None:
    assert store.results_dir == tmp_path
    assert store.project_dir("p1") == tmp_path / "p1"
    with pytest.raises(InvalidProjectIdError):
        store.project_dir("../outside")


# -- reviews -------------------------------------------------------------------------------


def test_review_lifecycle(store: ProjectStore) -> None:
    store.create_project("p1", "goal", "general_agent", {})
    store.add_review(_review("r1", deadline=None))
    store.add_review(_review("r2", task_id="root.1", round=2, layer=1))

    pending = store.pending_reviews("p1")
    assert [r["review_id"] for r in pending] == ["r1", "r2"]
    assert set(pending[0]) >= REVIEW_KEYS and pending[0]["plan"] == PLAN and pending[0]["status"] == "pending"
    assert store.get_project("p1").pending_reviews == 2
    assert store.find_review("p1", "root.1", 2)["review_id"] == "r2"  # type: ignore[index]
    assert store.find_review("p1", "root.1", 1) is None

    answered = store.answer_review("r1", {"action": "approve"})

    assert answered["status"] == "answered" and answered["decision"] == {"action": "approve"}
    assert answered["answered_at"] is not None
    assert [r["review_id"] for r in store.pending_reviews()] == ["r2"]
    assert store.get_project("p1").pending_reviews == 1
    assert [r["review_id"] for r in store.reviews("p1", "root")] == ["r1"]
    with pytest.raises(ReviewAlreadyAnsweredError, match="r1"):
        store.answer_review("r1", {"action": "reject", "reason": "late"})
    assert store.get_review("r1")["decision"] == {"action": "approve"}  # the first answer stands


def test_a_tool_call_review_keeps_its_kind_and_call_and_no_plan(store: ProjectStore) -> None:
    store.create_project("p1", "goal", "general_agent", {})
    call = {"tool": "refund", "arguments": {"order": "A-7"}}
    store.add_review(_review("r1", round=1_000_007, plan=None, kind="tool_call", tool_call=call))
    store.add_review(_review("r2"))

    first, second = store.pending_reviews("p1")

    assert (first["kind"], first["tool_call"], first["plan"]) == ("tool_call", call, None)
    assert (second["kind"], second["tool_call"], second["plan"]) == ("plan", None, PLAN)
    assert store.find_review("p1", "root", 1_000_007) == first


def test_a_v4_file_keeps_its_reviews_as_plan_reviews(tmp_path: Path) -> None:
    path = tmp_path / "sentient.db"
    sqlite_store_at(
        path,
        4,
        "INSERT INTO projects (project_id, goal, profile, status, created_at, updated_at)"
        " VALUES ('old', 'goal', 'general_agent', 'stopped', 1, 1)",
        "INSERT INTO reviews (review_id, project_id, task_id, round, goal, layer, plan, status, created_at)"
        " VALUES ('r1', 'old', 'root', 1, 'goal', 0, '{\"subtasks\": []}', 'pending', 1)",
    )

    with ProjectStore.open(tmp_path) as store:
        review = store.get_review("r1")
    assert (review["kind"], review["tool_call"], review["plan"]) == ("plan", None, {"subtasks": []})
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


def test_a_v5_files_nodes_restate_nothing(tmp_path: Path) -> None:
    sqlite_store_at(
        tmp_path / "sentient.db",
        5,
        "INSERT INTO projects (project_id, goal, profile, status, created_at, updated_at)"
        " VALUES ('old', 'goal?', 'general_agent', 'stopped', 1, 1)",
        "INSERT INTO nodes (project_id, task_id, seq, goal, task_type, node_type, layer, status, created_at)"
        " VALUES ('old', 'root', 0, 'goal?', 'SEARCH', 'EXECUTE', 0, 'DONE', 1)",
    )
    with ProjectStore.open(tmp_path) as store:
        root = store.node("old", "root")
    assert (root.goal, root.restates, root.answered_from_memory) == ("goal?", None, False)


def test_a_v6_files_question_under_research_keeps_its_direct_answer(tmp_path: Path) -> None:
    # Whether its unconfirmed direct answer was the model's own is not known: it is kept over
    # unconfirmed research, as the version that started the run did. Finished nodes are untouched.
    sqlite_store_at(
        tmp_path / "sentient.db",
        6,
        "INSERT INTO projects (project_id, goal, profile, status, created_at, updated_at)"
        " VALUES ('old', 'goal?', 'general_agent', 'stopped', 1, 1)",
        "INSERT INTO nodes (project_id, task_id, seq, goal, task_type, node_type, layer, status, result, created_at)"
        " VALUES ('old', 'root', 0, 'goal?', 'SEARCH', 'PLAN', 0, 'PLAN_DONE', 'The else clause.', 1)",
        "INSERT INTO nodes (project_id, task_id, seq, goal, task_type, node_type, layer, status, result, created_at)"
        " VALUES ('old', 'root.0', 1, 'sub?', 'SEARCH', 'EXECUTE', 1, 'DONE', 'An answer.', 1)",
    )
    with ProjectStore.open(tmp_path) as store:
        root, lookup = store.node("old", "root"), store.node("old", "root.0")
    assert (root.unconfirmed_answer, root.answered_from_memory) == ("The else clause.", True)
    assert lookup.answered_from_memory is False


def test_review_errors(store: ProjectStore) -> None:
    store.create_project("p1", "goal", "general_agent", {})
    store.add_review(_review("r1"))

    with pytest.raises(ReviewNotFoundError):
        store.get_review("nope")
    with pytest.raises(ReviewNotFoundError):
        store.answer_review("nope", {"action": "approve"})
    with pytest.raises(StoreError, match="already exists"):
        store.add_review(_review("r1"))
    with pytest.raises(StoreError, match=r"tool_call: .*a plan review has a plan"):
        store.add_review(_review("r3", plan=None))
    with pytest.raises(StoreError, match="a tool call's review has a tool call and no plan"):
        store.add_review(_review("r6", kind="tool_call", tool_call={"tool": "refund", "arguments": {}}))
    with pytest.raises(StoreError, match="colour"):
        store.add_review(_review("r4", colour="red"))
    with pytest.raises(ProjectNotFoundError):
        store.add_review(_review("r5", project_id="nope"))


def test_a_closed_store_says_so(tmp_path: Path, database_url: str | None) -> None:
    store = ProjectStore.open(tmp_path, database_url)
    store.close()

    with pytest.raises(StoreError, match="closed"):
        store.list_projects()
