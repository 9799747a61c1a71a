"""TaskGraph: the nodes of one run, their parent/child links and sibling dependency edges."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from sentient.exceptions import GraphError
from sentient.graph.node import NodeType, TaskNode, TaskType
from sentient.graph.status import TERMINAL, TaskStatus

if TYPE_CHECKING:
    from sentient.graph.plan import SubTask

ROOT_ID = "root"


class TaskGraph:
    """Holds every node of a run. Pure data: no I/O, no scheduling, no events."""

    def __init__(self) -> None:
        self._nodes: dict[str, TaskNode] = {}
        self._dependents: dict[str, list[str]] = {}
        self._next_child_index: dict[str, int] = {}

    @classmethod
    def from_nodes(cls, nodes: Sequence[TaskNode]) -> TaskGraph:
        """Rebuild a graph from stored nodes (parents before children, children in plan order).

        ``children`` lists are rebuilt from ``parent_id``, so the stored nodes need not carry them.
        """
        graph = cls()
        for node in nodes:
            node.children = []
            graph._nodes[node.task_id] = node
        for node in nodes:
            if node.parent_id is None:
                continue
            if node.parent_id not in graph._nodes:
                raise GraphError(f"task '{node.task_id}' names a parent '{node.parent_id}' that is not in the graph")
            graph._nodes[node.parent_id].children.append(node.task_id)
            index = int(node.task_id.rsplit(".", 1)[1])
            graph._next_child_index[node.parent_id] = max(graph._next_child_index.get(node.parent_id, 0), index + 1)
            for dep_id in node.depends_on:
                graph._dependents.setdefault(dep_id, []).append(node.task_id)
        if nodes and ROOT_ID not in graph._nodes:
            raise GraphError("the stored graph has no root")
        return graph

    # -- reading -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[TaskNode]:
        return iter(self._nodes.values())

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._nodes

    def get(self, task_id: str) -> TaskNode:
        try:
            return self._nodes[task_id]
        except KeyError:
            raise GraphError(f"no task '{task_id}' in the graph") from None

    @property
    def root(self) -> TaskNode:
        return self.get(ROOT_ID)

    def children(self, task_id: str) -> list[TaskNode]:
        return [self._nodes[c] for c in self.get(task_id).children]

    def parent(self, task_id: str) -> TaskNode | None:
        parent_id = self.get(task_id).parent_id
        return self._nodes[parent_id] if parent_id else None

    def dependencies(self, task_id: str) -> list[TaskNode]:
        return [self._nodes[d] for d in self.get(task_id).depends_on]

    def dependents(self, task_id: str) -> list[TaskNode]:
        return [self._nodes[d] for d in self._dependents.get(task_id, ())]

    def ancestors(self, task_id: str) -> list[TaskNode]:
        """Ancestors from the root down to the direct parent."""
        chain: list[TaskNode] = []
        node = self.parent(task_id)
        while node is not None:
            chain.append(node)
            node = self.parent(node.task_id)
        chain.reverse()
        return chain

    def subtree(self, task_id: str) -> list[TaskNode]:
        """The node and all its descendants, parents before children."""
        out: list[TaskNode] = []
        stack = [task_id]
        while stack:
            node = self.get(stack.pop())
            out.append(node)
            stack.extend(reversed(node.children))
        return out

    def all_children_terminal(self, task_id: str) -> bool:
        return all(self._nodes[c].status in TERMINAL for c in self.get(task_id).children)

    # -- building ----------------------------------------------------------------------------

    def add_root(self, goal: str, task_type: TaskType, node_type: NodeType) -> TaskNode:
        if ROOT_ID in self._nodes:
            raise GraphError("the graph already has a root")
        root = TaskNode(task_id=ROOT_ID, goal=goal, task_type=task_type, node_type=node_type, status=TaskStatus.READY)
        self._nodes[ROOT_ID] = root
        return root

    def add_children(
        self, parent_id: str, subtasks: Sequence[SubTask], node_types: Sequence[NodeType]
    ) -> list[TaskNode]:
        """Create children from a plan; ``depends_on_indices`` become sibling edges.

        Invalid indices (self, forward, out of range, duplicates) are dropped and a warning is
        recorded on the child. Only backward edges are kept, so the sibling graph is acyclic
        by construction. A THINK or WRITE child left with no dependency depends on the SEARCH
        children before it. Children with no dependencies start READY, the others PENDING.
        """
        if len(subtasks) != len(node_types):
            raise GraphError("one node type is needed per subtask")
        parent = self.get(parent_id)
        first = self._next_child_index.get(parent_id, 0)
        self._next_child_index[parent_id] = first + len(subtasks)
        created: list[TaskNode] = []
        for i, (sub, node_type) in enumerate(zip(subtasks, node_types, strict=True)):
            deps, warnings = _valid_dependencies(i, sub.depends_on_indices, len(subtasks))
            if not deps and sub.task_type is not TaskType.SEARCH:
                # A reasoning or writing step that waits for nothing answers from memory beside the
                # research: it gets the results of the searches planned before it.
                deps = [j for j in range(i) if subtasks[j].task_type is TaskType.SEARCH]
                if deps:
                    warnings.append(f"depends on the earlier searches {deps}: it needs their results")
            child = TaskNode(
                task_id=f"{parent_id}.{first + i}",
                goal=sub.goal,
                task_type=sub.task_type,
                node_type=node_type,
                layer=parent.layer + 1,
                parent_id=parent_id,
                depends_on=[created[d].task_id for d in deps],
                status=TaskStatus.PENDING if deps else TaskStatus.READY,
                warnings=warnings,
            )
            self._nodes[child.task_id] = child
            parent.children.append(child.task_id)
            for dep_id in child.depends_on:
                self._dependents.setdefault(dep_id, []).append(child.task_id)
            created.append(child)
        return created

    def remove_subtree(self, task_id: str) -> list[str]:
        """Delete a node and its descendants (used when a plan is rebuilt). Returns removed ids."""
        doomed = [n.task_id for n in self.subtree(task_id)]
        node = self.get(task_id)
        if node.parent_id is not None:
            self._nodes[node.parent_id].children.remove(task_id)
        for dep_id in node.depends_on:
            siblings = self._dependents.get(dep_id)
            if siblings and task_id in siblings:
                siblings.remove(task_id)
        for removed in doomed:
            del self._nodes[removed]
            self._dependents.pop(removed, None)
            self._next_child_index.pop(removed, None)
        return doomed

    # -- export ------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready snapshot (what ``graph.json`` holds)."""
        return {
            "root_id": ROOT_ID if ROOT_ID in self._nodes else None,
            "nodes": [node.model_dump(mode="json") for node in self._nodes.values()],
        }


def _valid_dependencies(index: int, indices: Sequence[int], count: int) -> tuple[list[int], list[str]]:
    kept: list[int] = []
    warnings: list[str] = []
    for dep in indices:
        if dep == index:
            warnings.append(f"dropped dependency on itself (index {dep})")
        elif dep < 0 or dep >= count:
            warnings.append(f"dropped dependency {dep}: out of range (plan has {count} subtasks)")
        elif dep > index:
            warnings.append(f"dropped dependency {dep}: a later subtask (only earlier ones keep the plan acyclic)")
        elif dep in kept:
            warnings.append(f"dropped duplicate dependency {dep}")
        else:
            kept.append(dep)
    return kept, warnings
