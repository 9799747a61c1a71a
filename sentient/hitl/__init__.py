"""Human review of plans."""

from sentient.hitl.protocol import (
    Approve,
    AutoApprove,
    Modify,
    PlanReviewer,
    Reject,
    ReviewDecision,
    ReviewRequest,
    plan_problems,
)

__all__ = [
    "Approve",
    "AutoApprove",
    "Modify",
    "PlanReviewer",
    "Reject",
    "ReviewDecision",
    "ReviewRequest",
    "plan_problems",
]
