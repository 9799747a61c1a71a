"""The task tree: statuses, nodes, and the graph that links them."""

from sentient.graph.node import NodeType, Source, TaskNode, TaskType
from sentient.graph.status import ACTIVE, TERMINAL, TRANSITIONS, WAITING, TaskStatus, check_transition
from sentient.graph.task_graph import TaskGraph

__all__ = [
    "ACTIVE",
    "TERMINAL",
    "TRANSITIONS",
    "WAITING",
    "NodeType",
    "Source",
    "TaskGraph",
    "TaskNode",
    "TaskStatus",
    "TaskType",
    "check_transition",
]
