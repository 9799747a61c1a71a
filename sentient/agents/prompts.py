"""The task part of each agent's prompt. The system prompt comes from agents.yaml; the context
(overall goal, ancestors, dependency results, sources) is rendered by the ContextBuilder."""

from __future__ import annotations

from collections.abc import Sequence

from sentient.agents.schemas import PlanOutput
from sentient.graph.node import TaskNode


def plan_task(node: TaskNode, max_subtasks: int) -> str:
    return (
        f"Break this goal into 2 to {max_subtasks} subtasks that together achieve it:\n{node.goal}\n\n"
        "Each subtask has a goal (one specific sentence), a task_type (SEARCH to look something up, "
        "THINK to reason or analyse, WRITE to write a part of the answer) and depends_on_indices "
        "(0-based indices of EARLIER subtasks whose results it needs, [] if none). Independent subtasks "
        "run in parallel, so add only the dependencies that are needed.\n"
        'Answer with JSON: {"subtasks": [{"goal": "...", "task_type": "SEARCH", "depends_on_indices": []}]}'
    )


def atomize_task(goal: str, task_type: str) -> str:
    return (
        f"Can one agent complete this {task_type} subtask directly, in one step, or does it need to be "
        f"broken into smaller subtasks first?\n{goal}\n\n"
        'Answer with JSON: {"is_atomic": true} if it can be done directly, otherwise {"is_atomic": false}.'
    )


def execute_task(node: TaskNode, has_sources: bool) -> str:
    cite = (
        "Base your answer on the sources listed above and cite them with their numbers, like [1]. "
        "Do not invent sources or numbers."
        if has_sources
        else "Cite a source number like [1] only if the context above lists that source."
    )
    return (
        f"Complete this {node.task_type.value} task:\n{node.goal}\n\n{cite}\n"
        'Answer with JSON: {"answer": "<your answer in Markdown>"}'
    )


def aggregate_task(node: TaskNode, is_root: bool) -> str:
    shape = (
        "Write the final report: a title, a short summary, then sections that answer the overall goal. "
        if is_root
        else "Combine them into one coherent answer. "
    )
    return (
        f"The subtask results above all serve this goal:\n{node.goal}\n\n{shape}"
        "Keep each citation [n] next to the fact it supports; do not invent new citation numbers. "
        "Do not repeat the same point twice.\n"
        'Answer with JSON: {"answer": "<Markdown>"}'
    )


def modify_task(node: TaskNode, plan: PlanOutput | None, instructions: str) -> str:
    current = _render_plan(plan.subtasks) if plan else "(no plan yet)"
    return (
        f"Revise the plan for this goal:\n{node.goal}\n\nCurrent plan:\n{current}\n\n"
        f"Instructions:\n{instructions}\n\n"
        "Return the complete revised plan of the work that still has to be done "
        "(work listed as already done is kept and must not be repeated).\n"
        'Answer with JSON: {"subtasks": [{"goal": "...", "task_type": "SEARCH", "depends_on_indices": []}]}'
    )


def _render_plan(subtasks: Sequence[object]) -> str:
    lines = []
    for i, sub in enumerate(subtasks):
        deps = getattr(sub, "depends_on_indices", [])
        after = f" (after {', '.join(map(str, deps))})" if deps else ""
        lines.append(f"{i}. [{getattr(sub, 'task_type', '')}] {getattr(sub, 'goal', '')}{after}")
    return "\n".join(lines)
