"""Review (human in the loop): the protocol the engine awaits, and its decisions.

A review is of one of two kinds: a node's proposed plan (approve, modify or reject it), or a
call of a tool marked ``confirm: true`` (approve or refuse it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from sentient.graph.plan import PlanOutput

ReviewKind = Literal["plan", "tool_call"]


@dataclass(frozen=True)
class CallToConfirm:
    """A call of a tool marked ``confirm: true``, waiting for approval."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReviewRequest:
    """A plan, or a tool call, waiting for a decision: exactly one of ``plan`` and ``tool_call``."""

    task_id: str
    goal: str
    layer: int
    plan: PlanOutput | None
    round: int  # 1 for the first proposal, +1 after every modification
    context: str = ""  # what the planner (or the agent that calls) saw, for the reviewer
    tool_call: CallToConfirm | None = None

    def __post_init__(self) -> None:
        if (self.plan is None) == (self.tool_call is None):
            raise ValueError("a review request has exactly one of a plan or a tool call")

    @property
    def kind(self) -> ReviewKind:
        return "plan" if self.tool_call is None else "tool_call"


@dataclass(frozen=True)
class Approve:
    """Go ahead with the plan as proposed."""


@dataclass(frozen=True)
class Modify:
    """Change the plan: free-text instructions for the plan modifier, or an edited plan."""

    instructions: str | None = None
    plan: PlanOutput | None = None

    def __post_init__(self) -> None:
        if (self.instructions is None) == (self.plan is None):
            raise ValueError("Modify needs exactly one of instructions or plan")


@dataclass(frozen=True)
class Reject:
    """Refuse the plan; the node fails with the reason."""

    reason: str


ReviewDecision = Approve | Modify | Reject


class PlanReviewer(Protocol):
    """Anything that can decide on a proposed plan or a tool call (auto, terminal, Socket.IO, REST).

    A tool call is approved by :class:`Approve`; any other decision refuses it.
    """

    async def review_plan(self, request: ReviewRequest) -> ReviewDecision: ...


class AutoApprove:
    """The default reviewer: approves every plan (a run without a reviewer refuses confirmed tool calls)."""

    async def review_plan(self, request: ReviewRequest) -> ReviewDecision:
        return Approve()


def plan_problems(plan: PlanOutput) -> list[str]:
    """Why an edited plan cannot be used (empty goals, bad or cyclic dependency indices)."""
    problems = []
    count = len(plan.subtasks)
    for i, sub in enumerate(plan.subtasks):
        if not sub.goal.strip():
            problems.append(f"subtask {i} has an empty goal")
        for dep in sub.depends_on_indices:
            if dep == i:
                problems.append(f"subtask {i} depends on itself")
            elif not 0 <= dep < count:
                problems.append(f"subtask {i} depends on {dep}, which does not exist")
            elif dep > i:
                problems.append(f"subtask {i} depends on later subtask {dep} (dependencies must point backwards)")
    return problems
