"""The task tree: statuses, nodes, plans, and the graph that links them."""

from sentient.graph.node import NodeType, Source, TaskNode, TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import ACTIVE, TERMINAL, TRANSITIONS, WAITING, TaskStatus, check_transition
from sentient.graph.task_graph import TaskGraph

__all__ = [
    "ACTIVE",
    "TERMINAL",
    "TRANSITIONS",
    "WAITING",
    "NodeType",
    "PlanOutput",
    "Source",
    "SubTask",
    "TaskGraph",
    "TaskNode",
    "TaskStatus",
    "TaskType",
    "check_transition",
]
