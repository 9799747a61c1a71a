"""The plan vocabulary: a plan is a list of subtasks with backward dependency indices.

Plans are what the graph grows from (:meth:`TaskGraph.add_children`), what events carry and what
reviewers read and edit; the planner and plan-modifier agents answer with them. They live beside
the graph so that nothing below the agents has to import the agent package.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sentient.graph.node import TaskType


class SubTask(BaseModel):
    """One planned subtask. ``depends_on_indices`` point at earlier subtasks of the same plan."""

    goal: str = Field(min_length=1, description="What this subtask must find out or produce.")
    task_type: TaskType = Field(description="SEARCH to look things up, THINK to reason, WRITE to write.")
    depends_on_indices: list[int] = Field(
        default_factory=list, description="Indices (0-based) of earlier subtasks whose results this one needs."
    )


class PlanOutput(BaseModel):
    """A plan: the subtasks that together achieve the parent goal."""

    model_config = ConfigDict(title="PlanOutput")

    subtasks: list[SubTask] = Field(min_length=2, max_length=12)
