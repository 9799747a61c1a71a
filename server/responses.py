"""pydantic models of what the server sends: REST responses and Socket.IO payloads.

Every record that leaves the server (a project, a graph, a node's detail, a review, an event) is
one of these models, dumped to JSON at the edge (a route, the broadcast thread). Their shapes
are those of ``docs/server-protocol.md``. ``python -m sentient_server.wire_types`` writes the
report's response as TypeScript (``dashboard/src/api/report.generated.ts``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from sentient.agents.config import AgentConfig
from sentient.agents.registry import Profile
from sentient.graph.node import TaskNode, TaskType
from sentient.graph.task_graph import ROOT_ID
from sentient.projects import Review
from sentient.report import Report
from sentient.settings import EngineSettings
from sentient.store import ProjectRecord, ProjectStatus


class ReportResponse(Report):
    """``GET /api/projects/{id}/report?format=json``: the report as data, and its Markdown.

    ``partial`` is also true while the project has not completed, whatever the report says.
    """

    markdown: str
    """The report as Markdown, exactly as ``format=md`` serves it."""


class ProfileSummary(BaseModel):
    """A profile in ``GET /api/profiles``: its name, what it is for, and its engine settings."""

    name: str
    description: str
    settings: EngineSettings

    @classmethod
    def of(cls, profile: Profile) -> ProfileSummary:
        return cls(name=profile.name, description=profile.description, settings=profile.settings)


class ProfileList(BaseModel):
    """``GET /api/profiles``."""

    profiles: list[ProfileSummary]


class ProfileAgents(BaseModel):
    """The agent a profile gives each role (executors by task type), read from the profile's attributes."""

    planner: AgentConfig
    root_planner: AgentConfig
    atomizer: AgentConfig
    executors: dict[TaskType, AgentConfig]
    aggregator: AgentConfig
    root_aggregator: AgentConfig
    plan_modifier: AgentConfig


class ProfileDetail(ProfileSummary):
    """``GET /api/profiles/{name}``: the profile with its agents."""

    agents: ProfileAgents

    @classmethod
    def of(cls, profile: Profile) -> ProfileDetail:
        agents = ProfileAgents.model_validate(profile, from_attributes=True)
        return cls(name=profile.name, description=profile.description, settings=profile.settings, agents=agents)


class ProjectChoices(BaseModel):
    """How a project runs besides its engine settings, as chosen for it (None, false: the server's default)."""

    model: str | None = None
    offline: bool = False
    docs: str | None = None


class ProjectResponse(BaseModel):
    """The protocol's Project: a stored project without what only the server needs (owner, the
    rest of its options)."""

    project_id: str
    goal: str
    profile: str
    status: ProjectStatus
    created_at: float
    updated_at: float
    error: str | None
    # The engine settings stored with the project: a profile's keys and values, free-form to clients.
    settings: dict[str, Any]
    choices: ProjectChoices
    stats: dict[str, int | float]
    pending_reviews: int

    @classmethod
    def of(cls, record: ProjectRecord) -> ProjectResponse:
        options = record.options
        choices = ProjectChoices(
            model=options.get("model") if isinstance(options.get("model"), str) else None,
            offline=options.get("offline") is True,
            docs=options.get("docs") if isinstance(options.get("docs"), str) else None,
        )
        return cls.model_validate({**record.to_dict(), "choices": choices})


class Followup(BaseModel):
    """A follow-up question in ``GET /api/projects/{id}/followups``: the project that researches it
    (its goal is the question) and its answer, once it has one."""

    project: ProjectResponse
    answer: ReportResponse | None = None


class FollowupList(BaseModel):
    """``GET /api/projects/{id}/followups``: the follow-up questions asked of the project, oldest first."""

    followups: list[Followup]


class ProjectList(BaseModel):
    """``GET /api/projects``: every project, newest first."""

    projects: list[ProjectResponse]


class Graph(BaseModel):
    """A task graph as ``{nodes, root}``: every node by id, in creation order."""

    nodes: dict[str, TaskNode]
    root: str = ROOT_ID

    @classmethod
    def of(cls, nodes: Iterable[TaskNode]) -> Graph:
        return cls(nodes={node.task_id: node for node in nodes})


class ReviewResponse(Review):
    """The protocol's Review (``GET …/reviews``, an answer, ``hitl_request``, ``project_snapshot``):
    ``decision`` only once answered, and no ``answered_at`` (the decision says when). A node's
    detail lists its reviews as stored instead (:class:`~sentient.projects.Review`)."""

    answered_at: float | None = Field(default=None, exclude=True)

    @model_serializer(mode="wrap")
    def _decision_once_answered(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("decision") is None:
            data.pop("decision", None)
        return data

    @classmethod
    def of(cls, review: Review) -> ReviewResponse:
        return cls.model_validate(review, from_attributes=True)


class ReviewList(BaseModel):
    """``GET /api/projects/{id}/reviews``: the reviews waiting for an answer, oldest first."""

    reviews: list[ReviewResponse]


class NodeDetail(BaseModel):
    """``GET /api/projects/{id}/nodes/{node_id}``: the node, its agent calls and its reviews."""

    node: TaskNode
    # Trace entries as the store keeps them: what a call was given and the tools it used are free-form.
    calls: list[dict[str, Any]]
    reviews: list[Review]


# -- Socket.IO payloads, server -> client ----------------------------------------------------


class ProjectEvent(BaseModel):
    """``project_status`` and ``project_completed``."""

    project: ProjectResponse


class ProjectSnapshot(BaseModel):
    """``project_snapshot``: what a client joining a project's room starts from."""

    project: ProjectResponse
    graph: Graph
    reviews: list[ReviewResponse]


class NodeUpdate(BaseModel):
    """``node_update``: the nodes that changed since the last one (whole), and those removed."""

    project_id: str
    nodes: list[TaskNode]
    removed: list[str]


class ReviewRequested(BaseModel):
    """``hitl_request``: a plan waits for an answer."""

    project_id: str
    review: ReviewResponse


class ReviewResolved(BaseModel):
    """``hitl_resolved``: a review was answered (by a person or by its timeout)."""

    project_id: str
    review_id: str
    action: str


class Ack(BaseModel):
    """The acknowledgement of a client's event: ``ok`` and what it concerns, or the error; what
    does not apply is left out."""

    ok: bool = True
    project_id: str | None = None
    project: ProjectResponse | None = None
    review: ReviewResponse | None = None
    error: dict[str, str] | None = None

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}
