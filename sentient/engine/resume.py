"""Preparing a run's graph (Ctrl-C, kill -9, a budget stop, failed work) to be resumed.

Finished work is kept: DONE nodes (and everything under them) stay as they are, unless a
subtask below them FAILED. Every other node, FAILED ones included, is put back where the engine
can pick it up: a node whose children exist waits for them again (PLAN_DONE; a failed
aggregation whose children are all DONE is so only aggregated again, and a DONE node above a
failed subtask aggregates again once it is redone), anything else starts over (READY, or
PENDING while a dependency is unfinished). This is the one place statuses move outside the transition table; each reset is
appended to the node's history and returned as an event for the store.
"""

from __future__ import annotations

import time

from sentient.events import NodeStatusChanged, snapshot
from sentient.graph.node import StatusChange, TaskNode
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


def _visit(graph: TaskGraph, node: TaskNode, changes: list[NodeStatusChanged], redo: set[str]) -> None:
    if node.status is _S.DONE and node.task_id not in redo:
        return
    children = graph.children(node.task_id)
    if children:
        _reset(node, _S.PLAN_DONE, changes)
        for child in children:  # plan order: a child's dependencies are reset before it
            _visit(graph, child, changes, redo)
        return
    waiting = any(dep.status is not _S.DONE for dep in graph.dependencies(node.task_id))
    _reset(node, _S.PENDING if waiting else _S.READY, changes)


def _reset(node: TaskNode, target: TaskStatus, changes: list[NodeStatusChanged]) -> None:
    if node.status is target:
        return
    old, now = node.status, time.time()
    node.status = target
    node.error = None
    node.history.append(StatusChange(status=target, at=now))
    changes.append(NodeStatusChanged(snapshot(node), old, now))
