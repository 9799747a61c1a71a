"""Re-running one node of a project that ran: what may be re-run, and how the request is kept.

A rerun is a resume with one more step first. The request is stored with the project (its
``options``: ``rerun``, pending until the run has applied it, and ``instructions``, per task id,
for as long as the task exists), then the project is resumed as any other: the run discards the
node's subtree and resets it and its ancestors (:func:`sentient.engine.resume.prepare_rerun`),
and the engine runs what is not finished. So a server's worker, a process that restarts, or a
rerun interrupted half-way all continue it with ``resume``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from sentient.graph.node import NodeType
from sentient.graph.task_graph import ROOT_ID, TaskGraph
from sentient.projects.errors import ProjectRunningError, ProjectStateError, RerunRefusedError
from sentient.store import NodeNotFoundError, ProjectStatus, ProjectStore, owner_alive
from sentient.text import goal_problem

PENDING = "rerun"  # the options key of a rerun not applied yet
INSTRUCTIONS = "instructions"  # the options key of the instructions given per task id
MAX_INSTRUCTIONS_CHARS = 4000


class Rerun(BaseModel):
    """Run ``task_id`` again: its planner (``replan``) or its executor, with ``instructions``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    replan: bool = False
    instructions: str | None = None


def request_rerun(
    store: ProjectStore, project_id: str, task_id: str, *, replan: bool = False, instructions: str | None = None
) -> Rerun:
    """Store a rerun of one node of a project that ran; the project's next resume applies it.

    ProjectNotFoundError, NodeNotFoundError, RerunRefusedError (the root, re-running a planned
    node, bad instructions), ProjectRunningError while a live process runs it, ProjectStateError
    before its first run. The node's plan reviews go: its new plans are reviewed afresh.
    """
    record = store.get_project(project_id)
    if record.status is ProjectStatus.RUNNING and owner_alive(record):
        raise ProjectRunningError(project_id, f"project '{project_id}' is running: re-run a node once it has ended.")
    if record.status is ProjectStatus.CREATED:
        raise ProjectStateError(project_id, f"project '{project_id}' has not run yet: execute it first.")
    graph = store.load_graph(project_id)
    if task_id not in graph:
        raise NodeNotFoundError(project_id, task_id)
    rerun = checked_rerun(graph, task_id, replan=replan, instructions=instructions)
    subtree = [n.task_id for n in graph.subtree(task_id)]
    store.forget_reviews(project_id, subtree)
    store.set_options(project_id, requested(record.options, rerun, subtree[1:]))
    return rerun


def checked_rerun(graph: TaskGraph, task_id: str, *, replan: bool, instructions: str | None) -> Rerun:
    """The rerun of ``task_id`` in ``graph``; RerunRefusedError (one line) when it makes no sense.

    The caller checks that the graph has the node (NodeNotFoundError).
    """
    if task_id == ROOT_ID:
        raise RerunRefusedError(
            task_id, "the root is the whole project: execute the project again, or re-run one of its subtasks."
        )
    node = graph.get(task_id)
    if not replan and node.node_type is NodeType.PLAN:
        raise RerunRefusedError(
            task_id, f"task '{task_id}' is planned, not executed: re-plan it, or re-run one of its subtasks."
        )
    text = (instructions or "").strip()
    if text:
        problem = goal_problem(text, "the instructions", plural=True)
        if problem is not None:
            raise RerunRefusedError(task_id, problem, field="instructions")
        if len(text) > MAX_INSTRUCTIONS_CHARS:
            raise RerunRefusedError(
                task_id,
                f"the instructions are {len(text)} characters; at most {MAX_INSTRUCTIONS_CHARS}.",
                field="instructions",
            )
    return Rerun(task_id=task_id, replan=replan, instructions=text or None)


def requested(options: Mapping[str, Any], rerun: Rerun, discarded: Collection[str]) -> dict[str, Any]:
    """``options`` with ``rerun`` pending, and its instructions in place of the node's earlier ones
    (those of the ``discarded`` subtasks go with them)."""
    given = {k: v for k, v in instructions_of(options).items() if k not in discarded and k != rerun.task_id}
    if rerun.instructions:
        given[rerun.task_id] = rerun.instructions
    return {**options, PENDING: rerun.model_dump(), INSTRUCTIONS: given}


def pending_rerun(options: Mapping[str, Any]) -> Rerun | None:
    """The rerun stored and not applied yet, if any."""
    stored = options.get(PENDING)
    return Rerun.model_validate(stored) if stored else None


def applied(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` once the pending rerun was applied to the stored graph."""
    return {k: v for k, v in options.items() if k != PENDING}


def forgotten(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` without any rerun or instructions (the project starts over: task ids mean new tasks)."""
    return {k: v for k, v in options.items() if k not in (PENDING, INSTRUCTIONS)}


def instructions_of(options: Mapping[str, Any]) -> dict[str, str]:
    """The instructions given per task id (what the context of those tasks and their subtasks shows)."""
    return dict(options.get(INSTRUCTIONS) or {})
