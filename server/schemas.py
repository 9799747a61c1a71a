"""pydantic models of every REST body and Socket.IO payload the server accepts.

Each is strict (``extra="forbid"``) so a typo is a 400 naming the field, not a silent default.
Ids are checked here, before they reach the store or the filesystem.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from sentient.projects import ReviewAnswer
from sentient.text import goal_problem

PROJECT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
NODE_ID_PATTERN = r"^root(\.[0-9]{1,4}){0,16}$"
REVIEW_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
PROFILE_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"

ProjectId = Annotated[str, StringConstraints(pattern=PROJECT_ID_PATTERN)]
ProfileName = Annotated[str, StringConstraints(pattern=PROFILE_PATTERN)]


def _researchable(goal: str) -> str:
    problem = goal_problem(goal)
    if problem is not None:
        raise ValueError(problem)
    return goal.strip()


# The document's view of a goal (for clients and fuzzers): no control characters but tab and
# newlines, and at least one visible character. The validator below gives the clear message.
GOAL_PATTERN = (
    r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*$"
)
Goal = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=4000),
    AfterValidator(_researchable),
    Field(json_schema_extra={"pattern": GOAL_PATTERN}),
]


def valid_project_id(value: str) -> bool:
    # ".." is allowed by the pattern's alphabet but never as a whole id.
    return bool(re.fullmatch(PROJECT_ID_PATTERN, value)) and value not in (".", "..")


def valid_node_id(value: str) -> bool:
    return bool(re.fullmatch(NODE_ID_PATTERN, value))


def valid_profile_name(value: str) -> bool:
    return bool(re.fullmatch(PROFILE_PATTERN, value))


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateProject(_Body):
    """``POST /api/projects``: ``config`` holds engine setting overrides and ``docs`` (a folder)."""

    goal: Goal
    profile: ProfileName | None = None
    # Engine setting overrides (and ``docs``): free-form here, checked by the service's settings merge.
    config: dict[str, Any] = Field(default_factory=dict)


class ExecuteProject(_Body):
    """``POST /api/projects/{id}/execute``: optionally a new goal or profile for the fresh run."""

    goal: Goal | None = None
    profile: ProfileName | None = None


class RerunNode(_Body):
    """``POST /api/projects/{id}/nodes/{node_id}/rerun``: plan the node again (``replan``) or
    execute it again, with ``instructions`` for its agents."""

    replan: bool = False
    instructions: Annotated[str, StringConstraints(strip_whitespace=True, max_length=4000)] | None = None


class AskFollowup(_Body):
    """``POST /api/projects/{id}/followups``: a follow-up question of the project (checked by the service)."""

    question: Annotated[str, StringConstraints(max_length=4000)]


class HitlResponse(ReviewAnswer):
    """The ``hitl_response`` event: an answer to the review ``review_id``."""

    review_id: Annotated[str, StringConstraints(pattern=REVIEW_ID_PATTERN)]


class JoinProject(_Body):
    project_id: ProjectId


class ExecuteTask(_Body):
    """The ``execute_task`` event: create (when no id) and start a project."""

    project_id: ProjectId | None = None
    goal: Goal
    profile: ProfileName | None = None
    # Engine setting overrides (and ``docs``): free-form here, checked by the service's settings merge.
    config: dict[str, Any] = Field(default_factory=dict)
