"""TaskGraph: hierarchical ids, sibling dependency edges, initial statuses, subtree removal."""

from __future__ import annotations

import pytest

from sentient.exceptions import GraphError
from sentient.graph.node import NodeType, TaskType
from sentient.graph.plan import SubTask
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph


def subtasks(*deps: list[int]) -> list[SubTask]:
    """One THINK subtask per argument, with those ``depends_on_indices``."""
    return [SubTask(goal=f"step {i}", task_type=TaskType.THINK, depends_on_indices=d) for i, d in enumerate(deps)]


def add(graph: TaskGraph, parent_id: str, *deps: list[int], node_type: NodeType = NodeType.EXECUTE):
    subs = subtasks(*deps)
    return graph.add_children(parent_id, subs, [node_type] * len(subs))


@pytest.fixture
def graph() -> TaskGraph:
    g = TaskGraph()
    g.add_root("research asyncio", TaskType.WRITE, NodeType.PLAN)
    return g


def test_ids_are_hierarchical(graph: TaskGraph) -> None:
    (first, second) = add(graph, "root", [], [], node_type=NodeType.PLAN)
    grandchildren = add(graph, first.task_id, [], [])
    assert graph.root.task_id == "root"
    assert [first.task_id, second.task_id] == ["root.0", "root.1"]
    assert [g.task_id for g in grandchildren] == ["root.0.0", "root.0.1"]
    assert graph.root.children == ["root.0", "root.1"]
    assert [a.task_id for a in graph.ancestors("root.0.1")] == ["root", "root.0"]
    assert [n.layer for n in (graph.root, first, grandchildren[1])] == [0, 1, 2]
    assert graph.parent("root.0.1") is first


def test_a_second_root_is_refused(graph: TaskGraph) -> None:
    with pytest.raises(GraphError):
        graph.add_root("again", TaskType.WRITE, NodeType.PLAN)


def test_dependency_indices_become_sibling_edges(graph: TaskGraph) -> None:
    a, b, c = add(graph, "root", [], [0], [0, 1])
    assert a.depends_on == []
    assert b.depends_on == ["root.0"]
    assert c.depends_on == ["root.0", "root.1"]
    assert [d.task_id for d in graph.dependents("root.0")] == ["root.1", "root.2"]
    assert [d.task_id for d in graph.dependencies("root.2")] == ["root.0", "root.1"]
    assert all(not n.warnings for n in (a, b, c))


@pytest.mark.parametrize(
    ("deps", "kept", "warning"),
    [
        ([1], [], "itself"),
        ([2], [], "later subtask"),
        ([7], [], "out of range"),
        ([-1], [], "out of range"),
        ([0, 0], ["root.0"], "duplicate"),
        ([3, 0, 1, -5], ["root.0"], "out of range"),
    ],
    ids=["self", "forward", "out-of-range", "negative", "duplicate", "mixed"],
)
def test_invalid_dependency_indices_are_dropped_with_a_warning(
    graph: TaskGraph, deps: list[int], kept: list[str], warning: str
) -> None:
    _, second, _ = add(graph, "root", [], deps, [])
    assert second.depends_on == kept
    assert second.warnings
    assert any(warning in w for w in second.warnings)
    assert second.status is (TaskStatus.PENDING if kept else TaskStatus.READY)


def test_mixed_invalid_indices_record_one_warning_each(graph: TaskGraph) -> None:
    _, second, _ = add(graph, "root", [], [3, 0, 1, -5, 0], [])
    assert second.depends_on == ["root.0"]
    assert len(second.warnings) == 4  # 3 and -5 (range), 1 (self), the second 0 (duplicate)


def test_children_without_dependencies_are_ready_and_the_others_pending(graph: TaskGraph) -> None:
    nodes = add(graph, "root", [], [], [0], [1, 0])
    assert [n.status for n in nodes] == [TaskStatus.READY, TaskStatus.READY, TaskStatus.PENDING, TaskStatus.PENDING]


def test_a_plan_needs_one_node_type_per_subtask(graph: TaskGraph) -> None:
    with pytest.raises(GraphError):
        graph.add_children("root", subtasks([], []), [NodeType.EXECUTE])


def test_remove_subtree_deletes_the_node_its_descendants_and_their_edges(graph: TaskGraph) -> None:
    add(graph, "root", [], [0], [1], node_type=NodeType.PLAN)
    add(graph, "root.1", [], [0])
    removed = graph.remove_subtree("root.1")
    assert sorted(removed) == ["root.1", "root.1.0", "root.1.1"]
    assert graph.root.children == ["root.0", "root.2"]
    assert "root.1.0" not in graph
    assert len(graph) == 3
    assert graph.dependents("root.0") == []  # the edge root.0 -> root.1 is gone
    with pytest.raises(GraphError):
        graph.get("root.1")


def test_replanned_children_get_fresh_ids(graph: TaskGraph) -> None:
    add(graph, "root", [], [0], [])
    graph.remove_subtree("root.1")
    graph.remove_subtree("root.2")
    new = add(graph, "root", [], [0])
    assert [n.task_id for n in new] == ["root.3", "root.4"]
    assert new[1].depends_on == ["root.3"]  # indices refer to the new plan, not the old one
    assert graph.root.children == ["root.0", "root.3", "root.4"]


def test_subtree_lists_parents_before_children(graph: TaskGraph) -> None:
    add(graph, "root", [], [], node_type=NodeType.PLAN)
    add(graph, "root.0", [])
    assert [n.task_id for n in graph.subtree("root")] == ["root", "root.0", "root.0.0", "root.1"]


def test_all_children_terminal_follows_the_children(graph: TaskGraph) -> None:
    a, b = add(graph, "root", [], [])
    assert not graph.all_children_terminal("root")
    a.move_to(TaskStatus.EXECUTING)
    a.move_to(TaskStatus.DONE)
    assert not graph.all_children_terminal("root")
    b.move_to(TaskStatus.CANCELLED)
    assert graph.all_children_terminal("root")


def test_to_dict_is_a_json_ready_snapshot(graph: TaskGraph) -> None:
    add(graph, "root", [], [0])
    snapshot = graph.to_dict()
    assert snapshot["root_id"] == "root"
    assert [n["task_id"] for n in snapshot["nodes"]] == ["root", "root.0", "root.1"]
    assert snapshot["nodes"][2]["depends_on"] == ["root.0"]
    assert snapshot["nodes"][2]["status"] == "PENDING"
