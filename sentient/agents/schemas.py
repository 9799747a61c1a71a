"""Structured agent outputs. Every agent answers with one of these; anything else is retried."""

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


class AtomizerOutput(BaseModel):
    """Whether a goal is small enough to be executed directly."""

    is_atomic: bool = Field(description="true if one executor can do this directly, false if it needs a plan.")


class Citation(BaseModel):
    """Evidence for an answer: which source, and words copied exactly from it."""

    source: int = Field(description="The number n of the source, as in [n].")
    quote: str = Field(min_length=1, description="A short phrase copied word for word from that source.")


class ExecutionOutput(BaseModel):
    """An executor's answer. ``citations`` come first so the model picks its evidence, then answers
    from it; each quote is checked against its source in code (sentient.context.grounding).

    The schema a model is given requires both fields: grammar-constrained decoding emits required
    properties first, which would put the answer before its evidence.
    """

    model_config = ConfigDict(json_schema_extra={"required": ["citations", "answer"]})

    citations: list[Citation] = Field(default_factory=list, max_length=4)
    answer: str = Field(min_length=1)


class AggregationOutput(BaseModel):
    """An aggregator's synthesis of its children's results, citing sources with [n]."""

    answer: str = Field(min_length=1)
