"""GraphReplica: a run's graph rebuilt from its events alone.

The Socket.IO feed keeps one to send full nodes; tests keep one to prove the event stream is
self-sufficient. Applying an event is cheap (a dict update): nodes are only turned into
:class:`TaskNode` objects when asked for.
"""

from __future__ import annotations

from sentient.events import (
    AgentCallFinished,
    Event,
    NodeCreated,
    NodeSnapshot,
    NodesRemoved,
    NodeStatusChanged,
    RunStarted,
)
from sentient.graph.node import TaskNode
from sentient.graph.task_graph import TaskGraph


class GraphReplica:
    """Subscribe it to a run's bus (before the run starts); it holds the graph as the events tell it."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeSnapshot] = {}  # in creation order, as the graph keeps them
        self.started = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, NodeStatusChanged):  # the most frequent first
            self._nodes[event.node.task_id] = event.node
        elif isinstance(event, AgentCallFinished):
            if event.node is not None:
                self._nodes[event.node.task_id] = event.node
        elif isinstance(event, NodeCreated):
            self._created(event.node)
        elif isinstance(event, NodesRemoved):
            self._removed(event)
        elif isinstance(event, RunStarted):
            self._nodes = {node.task_id: node for node in event.nodes}
            self.started = True

    def _created(self, node: NodeSnapshot) -> None:
        self._nodes[node.task_id] = node
        parent = self._nodes.get(node.parent_id) if node.parent_id is not None else None
        # The parent's own next event carries its child list; until then it is kept here.
        if parent is not None and node.task_id not in parent.children:
            self._nodes[parent.task_id] = parent._replace(children=(*parent.children, node.task_id))

    def _removed(self, event: NodesRemoved) -> None:
        gone = set(event.task_ids)
        for task_id in event.task_ids:
            self._nodes.pop(task_id, None)
        parent = self._nodes.get(event.parent_id)
        if parent is not None:
            children = tuple(c for c in parent.children if c not in gone)
            self._nodes[parent.task_id] = parent._replace(children=children)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._nodes

    def __len__(self) -> int:
        return len(self._nodes)

    def snapshot(self, task_id: str) -> NodeSnapshot:
        return self._nodes[task_id]

    def snapshots(self) -> list[NodeSnapshot]:
        return list(self._nodes.values())

    def to_graph(self) -> TaskGraph:
        """A new :class:`TaskGraph` with these nodes (the replica is not changed by using it)."""
        nodes: list[TaskNode] = [n.to_node() for n in self._nodes.values()]
        return TaskGraph.from_nodes(nodes)
