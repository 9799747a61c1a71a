"""Structured agent outputs. Every agent answers with one of these; anything else is retried.

Planners and plan modifiers answer with a plan, whose vocabulary lives in :mod:`sentient.graph.plan`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model

from sentient.context.citations import renumber
from sentient.graph.plan import PlanOutput, SubTask


class AtomizerOutput(BaseModel):
    """Whether a goal is small enough to be executed directly."""

    is_atomic: bool = Field(description="true if one executor can do this directly, false if it needs a plan.")


def _says_something(answer: str) -> str:
    """An answer must state something besides citation markers: "[2]" alone names no fact."""
    if not any(ch.isalnum() for ch in renumber(answer, {})):
        raise ValueError("the answer is only a citation number: write the answer itself (the name, number or value)")
    return answer


Answer = Annotated[str, Field(min_length=1), AfterValidator(_says_something)]


class ExecutionOutput(BaseModel):
    """An executor's answer that cites the numbered results or sources it was given as [n]."""

    answer: Answer


class SourcedAnswer(BaseModel):
    """An executor's answer to a task from the numbered passages it was shown, and which passage
    states it: 0 when none does, so the answer comes from the model's own knowledge. The
    verifier then reads that passage (sentient.context.grounding)."""

    answer: Answer = Field(description="The answer in words, without citation numbers.")
    source: int = Field(ge=0, description="The number n of the passage that states the answer; 0 if none does.")


def sourced_schema(count: int) -> type[SourcedAnswer]:
    """``SourcedAnswer`` whose ``source`` can only be 0 or one of ``count`` passages (a model
    decoded under a grammar cannot name a passage it was not shown)."""
    allowed: Any = Literal[tuple(range(count + 1))]
    return create_model(
        "SourcedAnswer",
        __base__=SourcedAnswer,
        source=(allowed, Field(description="The number n of the passage that states the answer; 0 if none does.")),
    )


class AggregationOutput(BaseModel):
    """An aggregator's synthesis of its children's results, citing sources with [n]."""

    answer: Answer


# A planner's reply. Its schema is PlanOutput's, so a model is asked for two or more subtasks (the
# embedded model's grammar enforces it) and cached replies still match; a reply of one subtask is
# accepted too: one stopped as soon as it listed the goal itself, which splits nothing (the goal is
# executed directly: sentient.agents.plans.lists_goal).
class PlanReply(PlanOutput):
    """A plan: the subtasks that together achieve the parent goal."""

    model_config = ConfigDict(title="PlanOutput")

    subtasks: list[SubTask] = Field(min_length=1, max_length=12, json_schema_extra={"minItems": 2})
