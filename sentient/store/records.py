"""What the project store holds, as values: a project's record and status, valid project ids,
the plan review a run asks to store, and the database rows read back as records, task nodes
and reviews."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from sentient.graph.node import NodeType, Source, StatusChange, TaskNode, TaskType
from sentient.graph.status import TaskStatus
from sentient.store.database import Row
from sentient.store.errors import InvalidProjectIdError, StoreError

_PROJECT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


class ProjectStatus(StrEnum):
    CREATED = "created"  # stored, never started
    RUNNING = "running"  # a process (the owner) is running it now, under a lease
    COMPLETED = "completed"  # the root finished with a result
    FAILED = "failed"  # the root failed
    CANCELLED = "cancelled"  # a user cancelled it
    STOPPED = "stopped"  # a budget ended it; the report is partial
    INTERRUPTED = "interrupted"  # its process died while it ran; it can be resumed


PROJECT_FINISHED: frozenset[ProjectStatus] = frozenset(
    {ProjectStatus.COMPLETED, ProjectStatus.FAILED, ProjectStatus.CANCELLED, ProjectStatus.STOPPED}
)
PROJECT_RESUMABLE: frozenset[ProjectStatus] = frozenset({ProjectStatus.CREATED, ProjectStatus.INTERRUPTED})
PROJECT_ACTIVE: frozenset[ProjectStatus] = frozenset({ProjectStatus.RUNNING})


@dataclass(frozen=True)
class ProjectRecord:
    """A stored project. ``nodes`` … ``cost_usd`` are live totals over its stored nodes."""

    project_id: str
    goal: str
    profile: str
    status: ProjectStatus
    error: str | None
    settings: dict[str, Any]
    stats: dict[str, Any]
    owner_pid: int | None
    created_at: float
    updated_at: float
    pending_reviews: int = 0
    has_report: bool = False
    nodes: int = 0
    agent_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    failed_nodes: int = 0
    owner_start: str | None = field(default=None, repr=False)
    owner_host: str | None = None  # with owner_pid: who runs it (or ran it last)
    owner_space: str | None = field(default=None, repr=False)
    owner_token: str | None = field(default=None, repr=False)  # set while a claim holds it
    lease_expires_at: float | None = None  # the database's clock; None: not held, or claimed before leases
    read_at: float = field(
        default=0.0, compare=False, repr=False
    )  # the database's clock when this record was read (to judge the lease)
    options: dict[str, Any] = field(default_factory=dict)  # model, offline, docs; "overrides" on resume
    spent: dict[str, Any] = field(default_factory=dict)  # what the runs spent: cost_usd, requests, elapsed_s

    @property
    def owner(self) -> str | None:
        """Who runs the project (or ran it last), as ``host:pid``, or None."""
        if self.owner_pid is None:
            return None
        return f"{self.owner_host}:{self.owner_pid}" if self.owner_host else str(self.owner_pid)

    def live_stats(self) -> dict[str, Any]:
        """Totals over the stored nodes, overridden by the stats the run stored when it ended."""
        live: dict[str, Any] = {
            "nodes": self.nodes,
            "agent_calls": self.agent_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "failed_nodes": self.failed_nodes,
        }
        return {**live, **self.stats}

    def to_dict(self) -> dict[str, Any]:
        """The Project JSON shape of ``docs/server-protocol.md``."""
        return {
            "project_id": self.project_id,
            "goal": self.goal,
            "profile": self.profile,
            "status": self.status.value,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "error": self.error,
            "settings": dict(self.settings),
            "stats": self.live_stats(),
            "pending_reviews": self.pending_reviews,
        }


class NewReview(BaseModel):
    """What :meth:`ProjectStore.add_review` accepts (a typo in a key fails loudly)."""

    model_config = ConfigDict(extra="forbid")

    review_id: str
    project_id: str
    task_id: str
    round: int
    goal: str
    layer: int
    plan: dict[str, Any] | None  # None for a tool call's review
    context: str = ""
    kind: Literal["plan", "tool_call"] = "plan"
    tool_call: dict[str, Any] | None = Field(None, validate_default=True)
    created_at: float | None = None
    deadline: float | None = None
    status: Literal["pending"] = "pending"

    @field_validator("tool_call")
    @classmethod
    def _plan_or_call(cls, tool_call: dict[str, Any] | None, info: ValidationInfo) -> dict[str, Any] | None:
        plan, kind = info.data.get("plan"), info.data.get("kind")
        if kind == "plan" and (plan is None or tool_call is not None):
            raise ValueError("a plan review has a plan and no tool call")
        if kind == "tool_call" and (plan is not None or tool_call is None):
            raise ValueError("a tool call's review has a tool call and no plan")
        return tool_call


def check_project_id(project_id: object) -> str:
    """Return ``project_id`` if it is a valid id (and so a safe folder name); raise otherwise."""
    if not isinstance(project_id, str) or not _PROJECT_ID.fullmatch(project_id):
        raise InvalidProjectIdError(project_id)
    return project_id


def project_status(status: ProjectStatus | str) -> ProjectStatus:
    try:
        return ProjectStatus(status)
    except ValueError:
        raise StoreError(
            f"unknown project status {status!r}: use one of {', '.join(s.value for s in ProjectStatus)}"
        ) from None


def record_from_row(row: Row) -> ProjectRecord:
    nodes, calls, tokens_in, tokens_out, cost, failed = json.loads(row["live"])  # Dialect.live_totals
    return ProjectRecord(
        project_id=row["project_id"],
        goal=row["goal"],
        profile=row["profile"],
        status=ProjectStatus(row["status"]),
        error=row["error"],
        settings=json.loads(row["settings"]),
        stats=json.loads(row["stats"]),
        owner_pid=row["owner_pid"],
        owner_start=row["owner_start"],
        owner_host=row["owner_host"],
        owner_space=row["owner_space"],
        owner_token=row["owner_token"],
        lease_expires_at=row["lease_expires_at"],
        read_at=row["read_at"],
        options=json.loads(row["options"]),
        spent=json.loads(row["spent"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        pending_reviews=row["pending_reviews"],
        has_report=bool(row["has_report"]),
        nodes=nodes,
        agent_calls=int(calls),
        input_tokens=int(tokens_in),
        output_tokens=int(tokens_out),
        cost_usd=float(cost),
        failed_nodes=int(failed),
    )


def node_from_row(row: Row, history: list[StatusChange]) -> TaskNode:
    return TaskNode(
        task_id=row["task_id"],
        goal=row["goal"],
        restates=row["restates"],
        task_type=TaskType(row["task_type"]),
        node_type=NodeType(row["node_type"]),
        layer=row["layer"],
        parent_id=row["parent_id"],
        depends_on=json.loads(row["depends_on"]),
        status=TaskStatus(row["status"]),
        history=history,
        result=row["result"],
        error=row["error"],
        sources=[Source(**s) for s in json.loads(row["sources"])],
        warnings=json.loads(row["warnings"]),
        replans=row["replans"],
        answered_from_memory=bool(row["answered_from_memory"]),
        agent_calls=row["agent_calls"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cost_usd=row["cost_usd"],
        created_at=row["created_at"],
    )


def review_from_row(row: Row) -> dict[str, Any]:
    review = dict(row)
    review["plan"] = json.loads(review["plan"])
    review["decision"] = json.loads(review["decision"]) if review["decision"] is not None else None
    review["tool_call"] = json.loads(review["tool_call"]) if review["tool_call"] is not None else None
    return review
