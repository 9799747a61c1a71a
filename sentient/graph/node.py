"""The task node: one unit of work in the tree."""

from __future__ import annotations

import time
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from sentient.graph.status import TERMINAL, TaskStatus, check_transition


class TaskType(StrEnum):
    SEARCH = "SEARCH"  # find information (tools: document search, later the web)
    THINK = "THINK"  # reason over what is known
    WRITE = "WRITE"  # produce prose for the report


class NodeType(StrEnum):
    PLAN = "PLAN"  # decomposed into children, then aggregated
    EXECUTE = "EXECUTE"  # run directly by an executor agent


class Source(BaseModel):
    """A citable source: a document path or URL a tool returned.

    ``snippet`` is the text an agent was shown. ``verified`` is True once the verifier judged
    that the passage supports the answer citing it, False once it judged it does not, and None
    while nobody has cited it (see :mod:`sentient.context.grounding`).
    """

    model_config = ConfigDict(frozen=True)

    ref: str
    title: str = ""
    snippet: str = ""
    verified: bool | None = None


class StatusChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    status: TaskStatus
    at: float


class TaskNode(BaseModel):
    """A node of the task tree. Ids are hierarchical: ``root``, ``root.0``, ``root.0.1``."""

    task_id: str
    goal: str
    # The question this task asks again with what the lookups it depends on found, in place of
    # what the question described: its goal is then the question as restated.
    restates: str | None = None
    task_type: TaskType
    node_type: NodeType
    layer: int = 0
    parent_id: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    children: list[str] = Field(default_factory=list)
    status: TaskStatus = TaskStatus.PENDING
    history: list[StatusChange] = Field(default_factory=list)
    result: str | None = None
    error: str | None = None
    sources: list[Source] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    replans: int = 0
    # Whether the unconfirmed direct answer (:attr:`unconfirmed_answer`) is the model's own,
    # asked without passages, rather than a passage's reading of the question.
    answered_from_memory: bool = False
    agent_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    created_at: float = Field(default_factory=time.time)

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def unconfirmed_answer(self) -> str | None:
        """The direct answer of a question answered first that no source confirmed, while the
        question is planned after all: it stands if the plan comes to nothing. A planned node
        has no result of its own until it is DONE, so this is its result before then."""
        return self.result if self.node_type is NodeType.PLAN and self.status is not TaskStatus.DONE else None

    def move_to(self, target: TaskStatus) -> TaskStatus:
        """Change status through the transition table; returns the previous status."""
        previous = self.status
        check_transition(self.task_id, previous, target)
        self.status = target
        self.history.append(StatusChange(status=target, at=time.time()))
        return previous
