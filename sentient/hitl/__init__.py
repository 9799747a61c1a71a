"""Human review of plans and of confirmed tool calls."""

from sentient.hitl.protocol import (
    Approve,
    AutoApprove,
    CallToConfirm,
    Modify,
    PlanReviewer,
    Reject,
    ReviewDecision,
    ReviewKind,
    ReviewRequest,
    plan_problems,
)

__all__ = [
    "Approve",
    "AutoApprove",
    "CallToConfirm",
    "Modify",
    "PlanReviewer",
    "Reject",
    "ReviewDecision",
    "ReviewKind",
    "ReviewRequest",
    "plan_problems",
]
