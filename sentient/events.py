"""Typed events the engine publishes, and the bus subscribers listen on.

The engine knows no subscriber: the CLI display, the trace writer, the project store and the
Socket.IO emitter all receive the same events through an :class:`EventBus`.

The stream of one run is self-sufficient. :class:`RunStarted` carries the graph as the run
found it, and every event that changes a node carries a :class:`NodeSnapshot` of it, taken at
the moment of the event: a subscriber builds its own view of the graph from events alone (see
:class:`sentient.replica.GraphReplica`) and never reads the engine's live, mutable graph.
Counters in a snapshot are the node's totals, not increments, so nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from loguru import logger

from sentient.graph.node import NodeType, Source, StatusChange, TaskNode, TaskType
from sentient.graph.plan import PlanOutput
from sentient.graph.status import TaskStatus


class NodeSnapshot(NamedTuple):
    """Every field of a :class:`TaskNode` at one moment, immutable.

    A named tuple rather than a frozen dataclass or model: one is built per node event on the
    engine's loop, and a tuple is the cheapest immutable record to build. Lists become tuples
    (sources and status changes are frozen models already, so nothing is deep-copied).
    """

    task_id: str
    goal: str
    restates: str | None
    task_type: TaskType
    node_type: NodeType
    layer: int
    parent_id: str | None
    depends_on: tuple[str, ...]
    children: tuple[str, ...]
    status: TaskStatus
    history: tuple[StatusChange, ...]
    result: str | None
    error: str | None
    sources: tuple[Source, ...]
    warnings: tuple[str, ...]
    replans: int
    answered_from_memory: bool
    agent_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    created_at: float

    def to_node(self) -> TaskNode:
        """A new :class:`TaskNode` with these fields (not validated again: they came from one)."""
        return TaskNode.model_construct(
            task_id=self.task_id,
            goal=self.goal,
            restates=self.restates,
            task_type=self.task_type,
            node_type=self.node_type,
            layer=self.layer,
            parent_id=self.parent_id,
            depends_on=list(self.depends_on),
            children=list(self.children),
            status=self.status,
            history=list(self.history),
            result=self.result,
            error=self.error,
            sources=list(self.sources),
            warnings=list(self.warnings),
            replans=self.replans,
            answered_from_memory=self.answered_from_memory,
            agent_calls=self.agent_calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
            created_at=self.created_at,
        )


def snapshot(node: TaskNode) -> NodeSnapshot:
    """``node`` as it is now."""
    return NodeSnapshot(
        node.task_id,
        node.goal,
        node.restates,
        node.task_type,
        node.node_type,
        node.layer,
        node.parent_id,
        tuple(node.depends_on),
        tuple(node.children),
        node.status,
        tuple(node.history),
        node.result,
        node.error,
        tuple(node.sources),
        tuple(node.warnings),
        node.replans,
        node.answered_from_memory,
        node.agent_calls,
        node.input_tokens,
        node.output_tokens,
        node.cost_usd,
        node.created_at,
    )


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run (new or resumed) begins with these nodes, before any other event of the run.

    A resumed run's nodes are as stored: the resets that make unfinished work runnable again
    follow as :class:`NodeStatusChanged` events.
    """

    project_id: str
    nodes: tuple[NodeSnapshot, ...]  # parents before children, children in plan order
    resumed: bool = False


@dataclass(frozen=True, slots=True)
class NodeCreated:
    """A node joined the graph (the root at the start of a new run, children when a plan is adopted)."""

    node: NodeSnapshot

    @property
    def task_id(self) -> str:
        return self.node.task_id

    @property
    def status(self) -> TaskStatus:
        return self.node.status


@dataclass(frozen=True, slots=True)
class NodeStatusChanged:
    """A node moved from ``old`` to ``node.status``; ``node`` holds everything it has now (its
    result once DONE, its counters so far)."""

    node: NodeSnapshot
    old: TaskStatus
    at: float
    error: str | None = None  # the error this move recorded

    @property
    def task_id(self) -> str:
        return self.node.task_id

    @property
    def new(self) -> TaskStatus:
        return self.node.status

    @property
    def learned(self) -> bool:
        """Whether the node is now DONE with a result: what it learned is a knowledge entry."""
        return self.node.status is TaskStatus.DONE and self.node.result is not None


@dataclass(frozen=True, slots=True)
class NodesRemoved:
    """Nodes deleted because their parent's plan was rebuilt.

    ``task_ids`` are whole subtrees; the tops of them leave the child list of ``parent_id``.
    """

    parent_id: str
    task_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PlanProposed:
    task_id: str
    plan: PlanOutput
    by: Literal["planner", "plan_modifier", "reviewer"]


@dataclass(frozen=True, slots=True)
class ReviewRequested:
    task_id: str
    plan: PlanOutput


@dataclass(frozen=True, slots=True)
class ReviewAnswered:
    task_id: str
    action: Literal["approve", "modify", "reject"]
    detail: str = ""


@dataclass(frozen=True, slots=True)
class AgentCallFinished:
    """One agent call (all its validation attempts), with what it saw and what it said."""

    task_id: str
    role: str
    agent: str
    model: str
    prompt: str
    context: dict[str, Any]
    response: str | None
    error: str | None
    attempts: int
    input_tokens: int
    output_tokens: int
    started_at: float
    latency_s: float
    cost_usd: float = 0.0
    cached: bool = False  # answered from the response cache: no model call, no cost
    tool_calls: tuple[dict[str, Any], ...] = ()  # {"tool", "arguments", "result" (truncated), "error"}
    node: NodeSnapshot | None = None  # the node charged with the call, its counters included (None: no node)


@dataclass(frozen=True, slots=True)
class RunFinished:
    status: Literal["completed", "completed_with_failures", "failed", "cancelled", "stopped"]
    reason: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)


Event = (
    RunStarted
    | NodeCreated
    | NodeStatusChanged
    | NodesRemoved
    | PlanProposed
    | ReviewRequested
    | ReviewAnswered
    | AgentCallFinished
    | RunFinished
)
Subscriber = Callable[[Event], None]


class EventBus:
    """Synchronous fan-out of events to subscribers, in subscription order.

    Subscribers must be quick (they run on the engine's loop); slow work belongs in a thread.
    A subscriber that raises is logged and skipped so one broken display cannot stop a run.
    """

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns a function that removes it."""
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def publish(self, event: Event) -> None:
        for subscriber in tuple(self._subscribers):
            try:
                subscriber(event)
            except Exception:
                logger.opt(exception=True).error("event subscriber {} failed on {}", subscriber, type(event).__name__)
