"""The plan vocabulary: a plan is a list of subtasks with backward dependency indices.

Plans are what the graph grows from (:meth:`TaskGraph.add_children`), what events carry and what
reviewers read and edit; the planner and plan-modifier agents answer with them. They live beside
the graph so that nothing below the agents has to import the agent package.
"""

from __future__ import annotations

import re

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


def answer_last(goal: str, plan: PlanOutput) -> PlanOutput:
    """Move a subtask that restates ``goal`` to the end, depending on every other subtask.

    Small planners often open a plan with the goal itself. First, it answers without what the
    other steps find (for "the title of the person who leads team X", it guesses from the first
    name it sees) and the steps after it build on that guess. Last, it is the step that answers
    the goal with every finding in view. Further restatements are dropped.
    """
    wanted = _words(goal)
    restated = [i for i, sub in enumerate(plan.subtasks) if _words(sub.goal) == wanted]
    if not restated or len(restated) == len(plan.subtasks):
        return plan
    gone = set(restated)
    index = {old: new for new, old in enumerate(i for i in range(len(plan.subtasks)) if i not in gone)}
    kept = [
        sub.model_copy(update={"depends_on_indices": [index[d] for d in sub.depends_on_indices if d in index]})
        for i, sub in enumerate(plan.subtasks)
        if i not in gone
    ]
    answer = plan.subtasks[restated[0]].model_copy(update={"depends_on_indices": list(range(len(kept)))})
    return PlanOutput(subtasks=[*kept, answer])


def _words(text: str) -> str:
    return " ".join(re.findall(r"[0-9a-z]+", text.lower()))
