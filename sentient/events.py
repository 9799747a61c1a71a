"""Typed events the engine publishes, and the bus subscribers listen on.

The engine knows no subscriber: the CLI display, the trace writer, the project store and the
Socket.IO emitter all receive the same events through an :class:`EventBus`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from loguru import logger

from sentient.graph.node import NodeType, TaskType
from sentient.graph.plan import PlanOutput
from sentient.graph.status import TaskStatus


@dataclass(frozen=True, slots=True)
class NodeCreated:
    task_id: str
    parent_id: str | None
    goal: str
    task_type: TaskType
    node_type: NodeType
    layer: int
    status: TaskStatus
    depends_on: tuple[str, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeStatusChanged:
    task_id: str
    old: TaskStatus
    new: TaskStatus
    at: float
    error: str | None = None
    result: str | None = None  # set when the node is DONE


@dataclass(frozen=True, slots=True)
class NodesRemoved:
    """Nodes deleted because their parent's plan was rebuilt."""

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


@dataclass(frozen=True, slots=True)
class RunFinished:
    status: Literal["completed", "completed_with_failures", "failed", "cancelled", "stopped"]
    reason: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)


Event = (
    NodeCreated
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
