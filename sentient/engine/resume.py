"""Preparing a run's graph to be resumed (Ctrl-C, kill -9, a budget stop, failed work) or to
run one chosen node again (:func:`prepare_rerun`).

Finished work is kept: DONE nodes (and everything under them) stay as they are, unless a
subtask below them FAILED. Every other node, FAILED ones included, is put back where the engine
can pick it up: a node whose children exist waits for them again (PLAN_DONE; a failed
aggregation whose children are all DONE is so only aggregated again, and a DONE node above a
failed subtask aggregates again once it is redone), anything else starts over (READY, or
PENDING while a dependency is unfinished). This is the one place statuses move outside the transition table; each reset is
appended to the node's history and returned as an event for the store.

A rerun discards the chosen node's subtree, puts the node back to start again (planned again, or
executed again) and its ancestors to aggregate again once it is done; every other node keeps its
status and result.
"""

from __future__ import annotations

import time

from sentient.events import NodesRemoved, NodeStatusChanged, snapshot
from sentient.graph.node import NodeType, StatusChange, TaskNode
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph

_S = TaskStatus


def prepare_resume(graph: TaskGraph) -> list[NodeStatusChanged]:
    """Reset the unfinished nodes of ``graph`` in place; returns one event per reset."""
    changes: list[NodeStatusChanged] = []
    redo: set[str] = set()  # DONE nodes above a failure: aggregated without a subtask's result
    for node in graph:
        if node.status is _S.FAILED:
            redo.update(a.task_id for a in graph.ancestors(node.task_id))
    _visit(graph, graph.root, changes, redo)
    return changes


def prepare_rerun(graph: TaskGraph, task_id: str, *, replan: bool) -> list[NodesRemoved | NodeStatusChanged]:
    """Make ``task_id`` run again in place: its descendants removed, it planned again (``replan``)
    or executed again, its ancestors waiting for it to aggregate again. Returns the events to
    publish (the removal first), so the store, the knowledge and the dashboard follow."""
    node = graph.get(task_id)
    events: list[NodesRemoved | NodeStatusChanged] = []
    removed: list[str] = []
    for child in list(graph.children(task_id)):
        removed += graph.remove_subtree(child.task_id)
    if removed:
        events.append(NodesRemoved(task_id, tuple(removed)))
    node.node_type = NodeType.PLAN if replan else NodeType.EXECUTE
    node.replans = 0  # its new plan may be rebuilt after failures as a first one may
    waiting = any(dep.status is not _S.DONE for dep in graph.dependencies(task_id))
    _redo(node, _S.PENDING if waiting else _S.READY, events)
    for ancestor in reversed(graph.ancestors(task_id)):
        _redo(ancestor, _S.PLAN_DONE, events)
    return events


def _redo(node: TaskNode, target: TaskStatus, changes: list[NodesRemoved | NodeStatusChanged]) -> None:
    """Forget what ``node`` produced (an old result must not stand for the new one) and reset it,
    announced even when its status does not change (its node type or result did)."""
    node.result, node.sources, node.warnings = None, [], []
    changes.append(_reset(node, target))


def _visit(graph: TaskGraph, node: TaskNode, changes: list[NodeStatusChanged], redo: set[str]) -> None:
    if node.status is _S.DONE and node.task_id not in redo:
        return
    children = graph.children(node.task_id)
    if children:
        _reset_unless(node, _S.PLAN_DONE, changes)
        for child in children:  # plan order: a child's dependencies are reset before it
            _visit(graph, child, changes, redo)
        return
    waiting = any(dep.status is not _S.DONE for dep in graph.dependencies(node.task_id))
    _reset_unless(node, _S.PENDING if waiting else _S.READY, changes)


def _reset_unless(node: TaskNode, target: TaskStatus, changes: list[NodeStatusChanged]) -> None:
    """Reset ``node`` to ``target`` unless it is there already."""
    if node.status is not target:
        changes.append(_reset(node, target))


def _reset(node: TaskNode, target: TaskStatus) -> NodeStatusChanged:
    old, now = node.status, time.time()
    node.status = target
    node.error = None
    node.history.append(StatusChange(status=target, at=now))
    return NodeStatusChanged(snapshot(node), old, now)
