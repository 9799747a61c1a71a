"""Reviews of stored projects (a plan, or a confirmed tool call): a person's answer, the review as
stored, and its decision.

A review is stored pending when the engine asks for it (so that it survives a restart) and is
answered once: :meth:`~sentient.projects.service.ProjectService.answer_review` refuses a second
answer. The server (REST, Socket.IO) and a review's timeout answer through it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    StringConstraints,
    model_serializer,
    model_validator,
)

from sentient.graph.plan import PlanOutput
from sentient.hitl.protocol import Approve, Modify, Reject, ReviewDecision, ReviewKind, plan_problems

Action = Literal["approve", "modify", "reject"]
# A plan as stored with a review: a PlanOutput when it was written, read back as it is, so that a
# review stored by another version of Sentient still lists (the engine validates it when it uses it).
StoredPlan = dict[str, Any]
DEFAULT_REJECTION = "rejected by the reviewer"


class ReviewAnswer(BaseModel):
    """A person's answer to a plan review (the body of ``POST /api/reviews/{id}``)."""

    model_config = ConfigDict(extra="forbid")

    action: Action
    instructions: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=8000)] | None = None
    plan: PlanOutput | None = None
    reason: Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000)] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ReviewAnswer:
        if self.action == "modify" and (self.instructions is None) == (self.plan is None):
            raise ValueError("modify needs exactly one of 'instructions' (text) or 'plan' (an edited plan)")
        if self.action != "modify" and (self.instructions is not None or self.plan is not None):
            raise ValueError(f"'{self.action}' takes no instructions or plan")
        if self.action != "reject" and self.reason is not None:
            raise ValueError("only 'reject' takes a reason")
        return self

    def problems(self) -> list[str]:
        """Why an edited plan cannot be used (bad indices, cycles, empty goals)."""
        return plan_problems(self.plan) if self.plan is not None else []

    def decision(self, by: str, at: float) -> Decision:
        """The answer as recorded with its review: who gave it (``rest``, ``socket``, ``timeout``) and when."""
        reason = (self.reason or DEFAULT_REJECTION) if self.action == "reject" else None
        return Decision(
            action=self.action,
            instructions=self.instructions,
            plan=self.plan.model_dump(mode="json") if self.plan is not None else None,
            reason=reason,
            by=by,
            answered_at=at,
        )


class Decision(BaseModel):
    """The recorded answer of a review; fields that do not apply are left out of its JSON."""

    action: Action
    instructions: str | None = None
    plan: StoredPlan | None = None
    reason: str | None = None
    by: str
    answered_at: float

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}

    def to_engine(self) -> ReviewDecision:
        """The engine's decision type."""
        if self.action == "approve":
            return Approve()
        if self.action == "reject":
            return Reject(self.reason or DEFAULT_REJECTION)
        if self.plan is not None:
            return Modify(plan=PlanOutput.model_validate(self.plan))
        return Modify(instructions=self.instructions or "")


class ReviewedCall(BaseModel):
    """The call a tool call's review is about: the tool, and its arguments as JSON values."""

    tool: str
    arguments: dict[str, Any]


class Review(BaseModel):
    """A stored review: the plan a node's planner proposed (kind ``plan``), or a call of a tool
    marked ``confirm: true`` (kind ``tool_call``, approved or refused); once answered, its decision."""

    review_id: str
    project_id: str
    task_id: str
    goal: str
    layer: int
    round: int
    kind: ReviewKind = "plan"
    plan: StoredPlan | None  # None for a tool call
    tool_call: ReviewedCall | None = None  # None for a plan
    context: str
    created_at: float
    deadline: float | None
    status: Literal["pending", "answered"]
    decision: Decision | None = None
    answered_at: float | None = None

    @model_validator(mode="after")
    def _decided_once_answered(self) -> Review:
        if (self.status == "answered") != (self.decision is not None):
            raise ValueError(f"review '{self.review_id}' is {self.status} but has {self.decision or 'no decision'}")
        if (self.kind == "tool_call") != (self.tool_call is not None) or (self.plan is None) != (
            self.tool_call is not None
        ):
            raise ValueError(f"review '{self.review_id}' of kind {self.kind} needs a plan or a tool call, as its kind")
        return self

    def unfit(self, answer: ReviewAnswer) -> str | None:
        """Why the answer does not fit the review's kind (a tool call is approved or refused); None if it does."""
        if self.kind == "tool_call" and answer.action == "modify":
            return "a tool call is approved or refused ('approve' or 'reject'), not modified"
        return None

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    def engine_decision(self) -> ReviewDecision | None:
        """The answer as the engine takes it; None while the review is pending."""
        return self.decision.to_engine() if self.decision is not None else None
