"""Two passages, about Python lists and tuples, and a scripted model whose answers cite them: for
the tests of what a run returns (the Python API, structured output)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sentient.agents.models.fake import FakeRequest, ScriptedModel, asks_for, default_response, listed_passages
from sentient.agents.schemas import AggregationOutput
from sentient.context.grounding import Reading
from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask

CITED = AggregationOutput(answer="# Lists and tuples\n\nLists change [1]; tuples do not [2].")


def lists_docs(folder: Path) -> Path:
    """``folder``, made, holding ``lists.md`` and ``tuples.md``."""
    folder.mkdir()
    (folder / "lists.md").write_text("# Lists\n\nA list is a mutable sequence: Python lists grow with append.\n")
    (folder / "tuples.md").write_text("# Tuples\n\nA tuple is an immutable sequence; Python tuples can be dict keys.\n")
    return folder


def citing_model(aggregator: Any = CITED) -> ScriptedModel:
    """A plan of one search per sequence type; each executor names the passage about its subject
    and copies its words ("mutable sequence"), which the verifier accepts and, reading the passage
    without the answer, reads the same; the aggregator answers ``aggregator`` (by default
    :data:`CITED`, which cites both)."""

    def execute(request: FakeRequest) -> Any:
        subject = "tuple" if "tuple" in request.goal.lower() else "list"
        passages = listed_passages(request.prompt)
        source = next((n for n, text in passages.items() if subject in text.lower()), 0)
        short = "immutable sequence" if subject == "tuple" else "mutable sequence"
        return {"answer": f"{request.goal}: sequences differ in mutability.", "short": short, "source": source}

    def verify(request: FakeRequest) -> Any:
        if not asks_for(request, "answer"):
            return default_response(request)
        passage = " ".join(listed_passages(request.prompt).values())
        return Reading(answer="immutable sequence" if "immutable" in passage else "mutable sequence")

    return ScriptedModel(
        script={
            "planner": PlanOutput(
                subtasks=[
                    SubTask(goal="How do Python lists behave?", task_type=TaskType.SEARCH),
                    SubTask(goal="How do Python tuples behave?", task_type=TaskType.SEARCH),
                ]
            ),
            "executor": execute,
            "verifier": verify,
            "aggregator": aggregator,
        }
    )
