"""The live task tree: events in, a rendered tree and footer out."""

from __future__ import annotations

import io

from rich.console import Console

from sentient.cli.progress import ProgressDisplay
from sentient.events import (
    AgentCallFinished,
    NodeCreated,
    NodeSnapshot,
    NodesRemoved,
    NodeStatusChanged,
    RunStarted,
    snapshot,
)
from sentient.graph.node import NodeType, TaskNode, TaskType
from sentient.graph.status import TaskStatus


def node(task_id: str, parent_id: str | None, goal: str, node_type: NodeType = NodeType.EXECUTE) -> NodeSnapshot:
    layer = task_id.count(".")
    return snapshot(
        TaskNode(
            task_id=task_id,
            parent_id=parent_id,
            goal=goal,
            task_type=TaskType.SEARCH,
            node_type=node_type,
            layer=layer,
            status=TaskStatus.READY,
        )
    )


def created(task_id: str, parent_id: str | None, goal: str, node_type: NodeType = NodeType.EXECUTE) -> NodeCreated:
    return NodeCreated(node(task_id, parent_id, goal, node_type))


def moved(task_id: str, old: TaskStatus, new: TaskStatus) -> NodeStatusChanged:
    return NodeStatusChanged(node(task_id, "root", "Find list facts")._replace(status=new), old, 0.0)


def render(display: ProgressDisplay) -> str:
    screen = io.StringIO()
    Console(file=screen, width=100).print(display)
    return screen.getvalue()


def display() -> ProgressDisplay:
    return ProgressDisplay(Console(file=io.StringIO(), width=100))


def test_tree_shows_nodes_under_their_parents_with_status_and_footer() -> None:
    shown = display()
    shown(created("root", None, "Compare lists and tuples", NodeType.PLAN))
    shown(created("root.0", "root", "Find list facts"))
    shown(created("root.1", "root", "Find tuple facts"))
    shown(moved("root.0", TaskStatus.READY, TaskStatus.EXECUTING))
    shown(moved("root.0", TaskStatus.EXECUTING, TaskStatus.DONE))
    shown(AgentCallFinished("root.0", "executor", "search_executor", "fake", "p", {}, "r", None, 1, 30, 12, 0.0, 0.1))
    lines = render(shown).splitlines()
    assert "root Compare lists and tuples  ready" in lines[0]
    assert "root.0 Find list facts  done" in lines[1]
    assert "root.1 Find tuple facts  ready" in lines[2]
    assert "1/3 tasks done · 1 agent calls · 42 tokens" in lines[-1]


def test_removed_nodes_disappear_from_the_tree() -> None:
    shown = display()
    shown(created("root", None, "Goal", NodeType.PLAN))
    shown(created("root.0", "root", "Old subtask"))
    shown(NodesRemoved("root", ("root.0",)))
    shown(created("root.1", "root", "New subtask"))
    text = render(shown)
    assert "Old subtask" not in text
    assert "New subtask" in text


def test_a_crowded_tree_folds_finished_subtrees() -> None:
    shown = display()
    shown(created("root", None, "Goal", NodeType.PLAN))
    shown(created("root.0", "root", "Finished branch", NodeType.PLAN))
    for i in range(45):
        shown(created(f"root.0.{i}", "root.0", f"leaf {i}"))
    shown(moved("root.0", TaskStatus.READY, TaskStatus.DONE))
    shown(created("root.1", "root", "Active branch"))
    text = render(shown)
    assert "… 45 finished subtasks" in text
    assert "leaf 7" not in text
    assert "Active branch" in text


def test_nothing_created_yet_reads_starting() -> None:
    assert "Starting…" in render(display())


def test_a_resumed_run_shows_its_stored_tree_from_run_started_without_repeating_the_root() -> None:
    shown = display()
    root = node("root", None, "Compare lists and tuples", NodeType.PLAN)._replace(status=TaskStatus.PLAN_DONE)
    done = node("root.0", "root", "Find list facts")._replace(status=TaskStatus.DONE)
    shown(RunStarted("p", (root, done), resumed=True))
    shown(created("root.1", "root", "Find tuple facts"))
    shown(NodeCreated(root))  # announced again: still one root line
    lines = render(shown).splitlines()
    assert "root Compare lists and tuples  plan_done" in lines[0]
    assert "root.0 Find list facts  done" in lines[1]
    assert "root.1 Find tuple facts  ready" in lines[2]
    assert "1/3 tasks done" in lines[-1]
