"""NodeProcessor: what the scheduler needs from whoever runs the phases of a node.

The engine decides *when* a phase runs; a processor decides *how*. The engine defines this
protocol and never imports an implementation: the agent-driven one is
:class:`sentient.agents.processor.AgentProcessor`, and the engine's tests drive the scheduler
with a small processor of their own.

A phase may take as long as it likes and may be cancelled at any await. When it returns, the
node must be where the scheduler can take it on from:

- :meth:`plan` and :meth:`replan` leave it PLAN_DONE with its children in the graph, or FAILED;
- :meth:`execute` and :meth:`aggregate` leave it DONE or FAILED.

Every status change goes through :meth:`move` (or :meth:`fail`), so that it follows the
transition table and subscribers hear of it.
"""

from __future__ import annotations

from typing import Protocol

from sentient.graph.node import TaskNode
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph


class NodeProcessor(Protocol):
    """Runs the phases of the nodes of one graph for :class:`sentient.engine.scheduler.ExecutionEngine`."""

    @property
    def graph(self) -> TaskGraph:
        """The graph whose nodes this processor runs (the engine schedules the same one)."""
        ...

    def move(self, node: TaskNode, target: TaskStatus, error: str | None = None) -> None:
        """Change a node's status through the transition table (recording ``error``) and publish it."""
        ...

    def announce(self, node: TaskNode) -> None:
        """Publish that ``node`` exists (the engine announces the root; a processor its children)."""
        ...

    def fail(self, node: TaskNode, error: str) -> None:
        """Move ``node`` to FAILED with ``error``."""
        ...

    async def decide_root_type(self, root: TaskNode) -> None:
        """Set the root's node type (PLAN or EXECUTE) before its first phase."""
        ...

    async def plan(self, node: TaskNode) -> None:
        """READY -> ... -> PLAN_DONE with children added to the graph, or FAILED."""
        ...

    async def replan(self, node: TaskNode, feedback: str) -> None:
        """NEEDS_REPLAN -> ... -> PLAN_DONE with the unfinished children rebuilt, or FAILED."""
        ...

    async def execute(self, node: TaskNode) -> None:
        """READY -> EXECUTING -> DONE, or FAILED."""
        ...

    async def aggregate(self, node: TaskNode) -> None:
        """PLAN_DONE (every child terminal) -> AGGREGATING -> DONE, or FAILED."""
        ...
