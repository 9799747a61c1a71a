"""Plan review (human in the loop): the protocol the engine awaits, and its decisions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sentient.graph.plan import PlanOutput


@dataclass(frozen=True)
class ReviewRequest:
    """A plan waiting for a decision."""

    task_id: str
    goal: str
    layer: int
    plan: PlanOutput
    round: int  # 1 for the first proposal, +1 after every modification
    context: str = ""  # what the planner saw, for the reviewer


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
    """Anything that can decide on a proposed plan (auto, terminal, Socket.IO, REST)."""

    async def review_plan(self, request: ReviewRequest) -> ReviewDecision: ...


class AutoApprove:
    """The default reviewer: approves every plan."""

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
