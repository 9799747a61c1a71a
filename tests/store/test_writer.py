"""StoreWriter: events become rows, promptly and atomically; failures surface on flush."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sentient.events import (
    AgentCallFinished,
    EventBus,
    NodeCreated,
    NodesRemoved,
    NodeStatusChanged,
    RunFinished,
    snapshot,
)
from sentient.graph.node import NodeType, Source, TaskNode, TaskType
from sentient.graph.plan import SubTask
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.store import NodeNotFoundError, ProjectStore, StoreWriter, StoreWriterError

S = TaskStatus
PROJECT = "p-1"


class FakeRun:
    """Mutates a graph and publishes events the way the engine's processor does."""

    def __init__(self, store: ProjectStore, project_id: str = PROJECT) -> None:
        self.graph = TaskGraph()
        self.bus = EventBus()
        self.writer = StoreWriter(store, project_id)
        self.bus.subscribe(self.writer)

    def root(self, goal: str = "Explain asyncio") -> TaskNode:
        root = self.graph.add_root(goal, TaskType.WRITE, NodeType.PLAN)
        self.announce(root)
        return root

    def plan(self, parent: TaskNode, *subtasks: tuple[str, list[int]]) -> list[TaskNode]:
        subs = [SubTask(goal=goal, task_type=TaskType.SEARCH, depends_on_indices=deps) for goal, deps in subtasks]
        children = self.graph.add_children(parent.task_id, subs, [NodeType.EXECUTE] * len(subs))
        for child in children:
            self.announce(child)
        return children

    def announce(self, node: TaskNode) -> None:
        self.bus.publish(NodeCreated(snapshot(node)))

    def move(self, node: TaskNode, *targets: TaskStatus, error: str | None = None) -> None:
        for target in targets:
            old = node.move_to(target)
            reason = error if target is targets[-1] else None
            if reason is not None:
                node.error = reason
            self.bus.publish(NodeStatusChanged(snapshot(node), old, node.history[-1].at, reason))

    def call(self, node: TaskNode, *, tokens: tuple[int, int] = (100, 20), cost: float = 0.0, **extra: Any) -> None:
        node.agent_calls += 1  # the engine charges the node, then publishes the call with its snapshot
        node.input_tokens += tokens[0]
        node.output_tokens += tokens[1]
        node.cost_usd += cost
        self.bus.publish(
            AgentCallFinished(
                task_id=node.task_id,
                role="executor",
                agent="search_executor",
                model="scripted",
                prompt=f"prompt for {node.task_id}",
                context={"goal": node.goal, "siblings": ["a", "b"]},
                response="answer",
                error=None,
                attempts=1,
                input_tokens=tokens[0],
                output_tokens=tokens[1],
                started_at=time.time(),
                latency_s=0.01,
                cost_usd=cost,
                node=snapshot(node),
                **extra,
            )
        )

    def finish(self, node: TaskNode, result: str, sources: list[Source] = ()) -> None:  # type: ignore[assignment]
        node.result = result
        node.sources = list(sources)
        self.move(node, S.DONE)


@pytest.fixture
def store(tmp_path: Path, database_url: str | None) -> Iterator[ProjectStore]:
    """A store with the project, on each backend: SQLite, then PostgreSQL."""
    store = ProjectStore.open(tmp_path, database_url)
    store.create_project(PROJECT, "Explain asyncio", "general_agent", {})
    yield store
    store.close()


def _replanned_run(store: ProjectStore, prepare: Callable[[FakeRun], None] = lambda run: None) -> FakeRun:
    """A root whose plan is rebuilt after a failure: history, sources, warnings, calls, removals."""
    run = FakeRun(store)
    prepare(run)
    root = run.root()
    run.move(root, S.PLANNING)
    run.call(root, tokens=(500, 80), cost=0.002)
    run.move(root, S.ATOMIZATION)
    first, second, third = run.plan(root, ("event loop", []), ("tasks", [2]), ("cancellation", [0]))
    run.move(root, S.PLAN_DONE)
    run.move(first, S.EXECUTING)
    run.call(first, cost=0.001, cached=True, tool_calls=({"tool": "docs_search", "arguments": {"q": "loop"}},))
    run.finish(
        first, "The loop runs tasks [1].", [Source(ref="asyncio.md", title="Asyncio", snippet="loop", verified=True)]
    )
    run.move(second, S.EXECUTING)
    run.call(second)
    run.move(second, S.FAILED, error="model error: boom")
    run.move(third, S.READY)
    run.move(root, S.NEEDS_REPLAN)
    root.replans += 1
    run.move(root, S.PLAN_MODIFICATION)
    run.call(root)
    removed = run.graph.remove_subtree(second.task_id) + run.graph.remove_subtree(third.task_id)
    run.bus.publish(NodesRemoved(root.task_id, tuple(removed)))
    run.move(root, S.ATOMIZATION)
    (fourth,) = run.plan(root, ("tasks, retried", []))
    run.move(root, S.PLAN_DONE)
    run.move(fourth, S.EXECUTING)
    run.call(fourth)
    run.finish(fourth, "Tasks wrap coroutines.")
    run.move(root, S.AGGREGATING)
    run.call(root, tokens=(900, 300), cost=0.004)
    run.finish(root, "# Asyncio\n\nThe loop runs tasks [1].", list(first.sources))
    run.bus.publish(RunFinished("completed"))
    return run


@contextmanager
def _batching(store: ProjectStore, mode: str) -> Iterator[Callable[[FakeRun], None]]:
    """``one``: every event in a single transaction; ``each``: one transaction per event."""

    def flush_after_each_event(run: FakeRun) -> None:
        run.bus.subscribe(lambda event: run.writer.flush())

    if mode == "one":
        with store.transaction():  # the writer thread waits on the store until the run is over
            yield lambda run: None
    else:
        yield flush_after_each_event


@pytest.mark.parametrize("mode", ["one", "each"])
def test_graph_round_trips_with_history_sources_replans_and_removed_nodes(store: ProjectStore, mode: str) -> None:
    with _batching(store, mode) as prepare:
        run = _replanned_run(store, prepare)
    run.writer.close()

    loaded = store.load_graph(PROJECT)

    assert loaded.to_dict() == run.graph.to_dict()
    assert [n.task_id for n in loaded] == ["root", "root.0", "root.3"]
    assert loaded.root.replans == 1
    assert loaded.get("root.0").sources == [Source(ref="asyncio.md", title="Asyncio", snippet="loop", verified=True)]
    assert [h.status for h in loaded.root.history][-3:] == [S.PLAN_DONE, S.AGGREGATING, S.DONE]


def test_warnings_and_dependencies_round_trip(store: ProjectStore) -> None:
    run = FakeRun(store)
    root = run.root()
    run.move(root, S.PLANNING, S.ATOMIZATION)
    _, dependent = run.plan(root, ("first", []), ("second", [0, 5]))
    run.writer.close()

    stored = store.node(PROJECT, dependent.task_id)

    assert stored.depends_on == ["root.0"]
    assert stored.warnings == dependent.warnings and stored.warnings  # the dropped index 5
    assert store.node(PROJECT, "root").children == ["root.0", "root.1"]


def test_a_question_restated_on_execution_is_stored_as_restated_with_the_question_it_restates(
    store: ProjectStore,
) -> None:
    run = FakeRun(store)
    root = run.root("Who leads the team that owns the router?")
    run.move(root, S.PLANNING, S.ATOMIZATION)
    _, then = run.plan(root, ("Which team owns the router?", []), (root.goal, [0]))
    then.restates, then.goal = then.goal, "Who leads Dispatch?"
    run.move(then, S.READY, S.EXECUTING)
    run.writer.close()

    stored = store.node(PROJECT, then.task_id)
    assert (stored.goal, stored.restates) == ("Who leads Dispatch?", "Who leads the team that owns the router?")
    assert store.node(PROJECT, "root.0").restates is None


def test_a_questions_direct_answer_is_stored_with_whether_it_is_the_models_own(store: ProjectStore) -> None:
    # Planned after its direct answer: the answer stands if the research finds nothing better, and
    # a resumed run must know whether it is the model's own (research does not replace that one).
    run = FakeRun(store)
    root = run.root("Which clause of a for loop runs when it ends without a break?")
    run.move(root, S.EXECUTING)
    root.node_type, root.result, root.answered_from_memory = NodeType.PLAN, "The else clause.", True
    run.move(root, S.PLANNING)
    run.writer.close()

    stored = store.node(PROJECT, "root")
    assert (stored.unconfirmed_answer, stored.answered_from_memory) == ("The else clause.", True)


def test_removed_nodes_lose_their_rows_but_keep_their_calls(store: ProjectStore) -> None:
    run = _replanned_run(store)
    run.writer.close()

    assert [c["task_id"] for c in store.calls(PROJECT, "root.1")] == ["root.1"]
    with store.transaction() as conn:
        removed = conn.execute("SELECT COUNT(*) FROM status_changes WHERE task_id IN ('root.1', 'root.2')")
        assert removed.fetchone()[0] == 0


def test_calls_are_stored_with_cost_cache_flag_tool_calls_and_added_to_node_totals(store: ProjectStore) -> None:
    run = _replanned_run(store)
    run.writer.close()

    (call,) = store.calls(PROJECT, "root.0")
    assert call["cached"] is True
    assert call["cost_usd"] == pytest.approx(0.001)
    assert call["tool_calls"] == [{"tool": "docs_search", "arguments": {"q": "loop"}}]
    assert call["context"] == {"goal": "event loop", "siblings": ["a", "b"]}
    root = store.node(PROJECT, "root")
    assert (root.agent_calls, root.input_tokens, root.output_tokens) == (3, 1500, 400)
    assert root.cost_usd == pytest.approx(0.006)
    assert len(store.calls(PROJECT)) == 6


def test_counters_are_the_latest_snapshot_s_totals_never_added_up(store: ProjectStore) -> None:
    run = FakeRun(store)
    root = run.root()
    run.move(root, S.EXECUTING)
    run.call(root, tokens=(100, 20), cost=0.5)
    run.writer.flush()  # the call's snapshot and the status change's carry the same totals
    run.call(root, tokens=(10, 2), cost=0.25)
    run.finish(root, "done")
    run.writer.close()

    stored = store.node(PROJECT, "root")
    assert (stored.agent_calls, stored.input_tokens, stored.output_tokens) == (2, 110, 22)
    assert stored.cost_usd == pytest.approx(0.75)


def test_a_call_charged_to_no_node_is_stored_without_changing_node_counters(store: ProjectStore) -> None:
    run = FakeRun(store)
    root = run.root()
    run.bus.publish(
        AgentCallFinished("root", "executor", "a", "m", "prompt", {}, "answer", None, 1, 10, 2, time.time(), 0.1)
    )
    run.writer.close()

    assert len(store.calls(PROJECT, "root")) == 1
    assert store.node(PROJECT, "root").agent_calls == root.agent_calls == 0


@pytest.mark.parametrize("mode", ["one", "each"])
def test_what_done_tasks_learned_is_stored_with_their_status(store: ProjectStore, mode: str) -> None:
    """A task's knowledge entry is written with the status that made it DONE, replaced when it is
    finished again (moving to the end), and deleted when it is redone or removed by a replan."""
    with _batching(store, mode) as prepare:
        run = FakeRun(store)
        prepare(run)
        root = run.root()
        run.move(root, S.PLANNING, S.ATOMIZATION)
        first, second = run.plan(root, ("event loop", []), ("tasks", []))
        run.move(root, S.PLAN_DONE)
        run.move(first, S.EXECUTING)
        run.finish(first, "The loop runs tasks [1].", [Source(ref="asyncio.md", title="Asyncio", snippet="loop")])
        run.move(second, S.EXECUTING)
        run.finish(second, "Tasks wrap coroutines.")
        first.status = S.READY  # as engine.resume resets it, announced as a change from DONE
        run.bus.publish(NodeStatusChanged(snapshot(first), S.DONE, 0.0))
        run.bus.publish(NodesRemoved(root.task_id, tuple(run.graph.remove_subtree(second.task_id))))
        run.move(first, S.EXECUTING)
        run.finish(first, "The loop runs callbacks too.")
        run.move(root, S.AGGREGATING)
        run.finish(root, "# Asyncio")
    run.writer.close()

    assert store.knowledge(PROJECT) == [
        {"task_id": "root.0", "goal": "event loop", "result": "The loop runs callbacks too.", "sources": []},
        {"task_id": "root", "goal": "Explain asyncio", "result": "# Asyncio", "sources": []},
    ]


def test_an_entry_is_stored_exactly_when_its_task_is_stored_done(store: ProjectStore) -> None:
    """After each transaction the stored entries are those of the stored DONE tasks: a process killed
    between two leaves neither one without the other."""
    seen: list[tuple[set[str], set[str]]] = []

    def check(event: object) -> None:
        if isinstance(event, NodeStatusChanged):
            run.writer.flush()
            done = {n.task_id for n in store.load_graph(PROJECT) if n.status is S.DONE}
            seen.append((done, {row["task_id"] for row in store.knowledge(PROJECT)}))

    run = FakeRun(store)
    run.bus.subscribe(check)
    root = run.root()
    run.move(root, S.PLANNING, S.ATOMIZATION)
    (only,) = run.plan(root, ("event loop", []))
    run.move(root, S.PLAN_DONE)
    run.move(only, S.EXECUTING)
    run.finish(only, "The loop runs tasks.", [Source(ref="asyncio.md", title="Asyncio", snippet="loop")])
    run.move(root, S.AGGREGATING)
    run.finish(root, "# Asyncio")
    run.writer.close()

    assert all(done == known for done, known in seen)
    assert seen[-1] == ({"root", "root.0"}, {"root", "root.0"})
    assert store.knowledge(PROJECT)[0]["sources"] == ["asyncio.md"]


def test_node_is_stored_as_it_was_when_its_status_changed(store: ProjectStore) -> None:
    run = FakeRun(store)
    root = run.root()
    with store.transaction():  # hold the writer back until the node has changed again
        run.move(root, S.EXECUTING)
        run.finish(root, "final answer")
        root.result = "changed after the event"
    run.writer.flush()

    assert store.node(PROJECT, "root").result == "final answer"


def test_status_change_is_committed_without_flush_and_visible_to_another_connection(
    store: ProjectStore, database_url: str | None
) -> None:
    run = FakeRun(store)
    root = run.root()
    run.move(root, S.EXECUTING)
    reader = ProjectStore.open(store.results_dir, database_url)  # a second connection to the same database
    deadline = time.monotonic() + 10  # a generous bound for a loaded CI machine; not a timing assertion
    history: list[Any] = []
    while time.monotonic() < deadline:
        with contextlib.suppress(NodeNotFoundError):
            history = [change.status for change in reader.node(PROJECT, "root").history]
        if history:
            break
        time.sleep(0.005)
    reader.close()
    run.writer.close()

    assert history == [S.EXECUTING]


def test_flushed_state_is_visible_to_another_process(store: ProjectStore, database_url: str | None) -> None:
    run = FakeRun(store)
    root = run.root()
    run.move(root, S.EXECUTING)
    run.finish(root, "answer")
    run.writer.flush()
    code = (
        "import sys; from sentient.store import ProjectStore;"
        "node = ProjectStore.open(sys.argv[1], sys.argv[2] or None).node(sys.argv[3], 'root');"
        "print(node.status.value, node.result)"
    )
    args = [str(store.results_dir), database_url or "", PROJECT]

    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "DONE answer"
    run.writer.close()


def test_reads_from_other_threads_while_the_writer_writes(store: ProjectStore) -> None:
    run = FakeRun(store)
    root = run.root()
    run.move(root, S.PLANNING, S.ATOMIZATION)
    run.writer.flush()
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set():
                graph = store.load_graph(PROJECT)
                assert graph.root.task_id == "root"
                store.list_projects()
                store.calls(PROJECT)
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for thread in readers:
        thread.start()
    for batch in range(10):
        children = run.plan(root, *[(f"goal {batch}.{i}", []) for i in range(10)])
        for child in children:
            run.move(child, S.EXECUTING)
            run.call(child)
            run.finish(child, f"result {child.task_id}")
    run.writer.flush()
    stop.set()
    for thread in readers:
        thread.join()
    run.writer.close()

    assert errors == []
    assert store.load_graph(PROJECT).to_dict() == run.graph.to_dict()
    assert len(store.calls(PROJECT)) == 100


def test_writer_error_surfaces_on_flush(tmp_path: Path, database_url: str | None) -> None:
    store = ProjectStore.open(tmp_path, database_url)  # no project created: every row breaks the foreign key
    run = FakeRun(store, "missing-project")
    run.root()

    with pytest.raises(StoreWriterError, match=r"missing-project.*could not be persisted"):
        run.writer.flush()
    run.writer.close()  # the error was reported once; closing does not raise it again
    store.close()


def test_one_bad_event_does_not_lose_the_rest_of_its_batch(store: ProjectStore) -> None:
    run = FakeRun(store)
    with store.transaction():  # everything below lands in one batch
        root = run.root()
        child = snapshot(root)._replace(task_id="root.9", parent_id="root", goal=["not", "text"], history=())
        bad = NodeCreated(child)
        run.bus.publish(bad)
        run.move(root, S.EXECUTING)

    with pytest.raises(StoreWriterError, match="1 event"):
        run.writer.flush()
    assert store.node(PROJECT, "root").status is S.EXECUTING
    run.writer.close()


def test_close_flushes_and_later_events_are_refused(store: ProjectStore) -> None:
    run = FakeRun(store)
    root = run.root()
    run.move(root, S.EXECUTING)
    run.writer.close()
    run.writer.close()  # idempotent

    assert store.node(PROJECT, "root").status is S.EXECUTING
    with pytest.raises(StoreWriterError, match="closed"):
        run.writer(NodeStatusChanged(snapshot(root), S.EXECUTING, time.time()))


def test_a_resumed_run_keeps_stored_nodes_and_numbers_new_ones_after_them(store: ProjectStore) -> None:
    first = FakeRun(store)
    root = first.root()
    first.move(root, S.PLANNING, S.ATOMIZATION)
    (child,) = first.plan(root, ("event loop", []))
    first.move(root, S.PLAN_DONE)
    first.move(child, S.EXECUTING)
    first.call(child)
    first.finish(child, "done before the crash")
    first.writer.close()

    graph = store.load_graph(PROJECT)
    second = FakeRun(store)
    second.graph = second.writer.graph = graph
    second.announce(graph.root)  # the engine announces the root again when it resumes
    (extra,) = second.plan(graph.root, ("tasks", []))
    second.move(extra, S.EXECUTING)
    second.writer.close()

    loaded = store.load_graph(PROJECT)
    assert [n.task_id for n in loaded] == ["root", "root.0", "root.1"]
    assert loaded.get("root.0").result == "done before the crash"
    assert loaded.get("root.0").agent_calls == 1
    assert loaded.to_dict() == graph.to_dict()
