"""Preparing an interrupted run's graph (Ctrl-C, kill -9, a budget stop) to be resumed.

Finished work is kept: DONE and FAILED nodes (and everything under them) stay as they are.
Every other node is put back where the engine can pick it up: a planned node whose children
exist waits for them again (PLAN_DONE), anything else starts over (READY, or PENDING while a
dependency is unfinished). This is the one place statuses move outside the transition table;
each reset is appended to the node's history and returned as an event for the store.
"""

from __future__ import annotations

import time

from sentient.events import NodeStatusChanged
from sentient.graph.node import StatusChange, TaskNode
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph

_S = TaskStatus
_KEPT = frozenset({_S.DONE, _S.FAILED})


def prepare_resume(graph: TaskGraph) -> list[NodeStatusChanged]:
    """Reset the unfinished nodes of ``graph`` in place; returns one event per reset."""
    changes: list[NodeStatusChanged] = []
    _visit(graph, graph.root, changes)
    return changes


def _visit(graph: TaskGraph, node: TaskNode, changes: list[NodeStatusChanged]) -> None:
    if node.status in _KEPT:
        return
    children = graph.children(node.task_id)
    if children:
        _reset(node, _S.PLAN_DONE, changes)
        for child in children:  # plan order: a child's dependencies are reset before it
            _visit(graph, child, changes)
        return
    waiting = any(not dep.is_terminal for dep in graph.dependencies(node.task_id))
    _reset(node, _S.PENDING if waiting else _S.READY, changes)


def _reset(node: TaskNode, target: TaskStatus, changes: list[NodeStatusChanged]) -> None:
    if node.status is target:
        return
    old, now = node.status, time.time()
    node.status = target
    node.error = None
    node.history.append(StatusChange(status=target, at=now))
    changes.append(NodeStatusChanged(node.task_id, old, target, now))
