"""The task part of each agent's prompt. The system prompt comes from agents.yaml; the context
(overall goal, ancestors, dependency results, sources) is rendered by the ContextBuilder."""

from __future__ import annotations

from collections.abc import Sequence

from sentient.graph.node import TaskNode
from sentient.graph.plan import PlanOutput


def plan_task(node: TaskNode, max_subtasks: int) -> str:
    return (
        f"Break this goal into 2 to {max_subtasks} subtasks that together achieve it:\n{node.goal}\n\n"
        "Each subtask has a goal (one specific question or instruction), a task_type and depends_on_indices.\n"
        "- SEARCH looks facts up in the documents. Write it as a question that keeps the exact names, "
        "numbers and terms of the goal; never state an answer in it.\n"
        "- When a search needs what an earlier one finds (first find which thing the goal means, then look "
        "up the fact about that thing), it lists the earlier subtask's index in depends_on_indices.\n"
        "- THINK compares, combines or calculates results of earlier subtasks (list them as dependencies).\n"
        "- Do not add a subtask that writes the final answer: the results are combined automatically.\n"
        'Answer with JSON: {"subtasks": [{"goal": "...", "task_type": "SEARCH", "depends_on_indices": []}]}'
    )


def atomize_task(goal: str, task_type: str) -> str:
    # What makes a task atomic is the atomizer's instructions (agents.yaml): in the system
    # prompt, the embedded model reads them once per run, not once per call (prompt_states).
    return (
        f"Can this {task_type} task be done in one step, or must it be split into smaller steps first?\n{goal}\n\n"
        'Answer with JSON: {"is_atomic": true} if it is one step, otherwise {"is_atomic": false}.'
    )


def execute_task(node: TaskNode, sourced: bool) -> str:
    """An executor's task. ``sourced``: it answers from the numbered passages it was shown and
    names the one that states the answer (:class:`~sentient.agents.schemas.SourcedAnswer`);
    else it works from the results above and cites them inline as [n]."""
    if sourced:
        return (
            f"Task: {node.goal}\n\n"
            "Answer the task directly and concisely, in one to three sentences, from the numbered sources "
            "above. Then give the number of the source that states the answer, or 0 if none of them states "
            "it (then answer from what you know).\n"
            'Answer with JSON: {"answer": "<the answer, without citation numbers>", "source": <n or 0>}'
        )
    return (
        f"Task: {node.goal}\n\n"
        "Use the results above and keep their citations [n] next to the facts they support; "
        "do not invent citation numbers. Be direct and concise.\n"
        'Answer with JSON: {"answer": "<your answer, citing [n]>"}'
    )


def memory_task(goal: str) -> str:
    """The task of an executor asked from its own knowledge alone (no sources shown)."""
    return (
        f"Question: {goal}\n\n"
        "Answer from what you know, directly and concisely, in one or two sentences.\n"
        'Answer with JSON: {"answer": "<the answer>"}'
    )


def support_task(question: str, answer: str) -> str:
    """The verifier's task: do the sources listed above (those ``answer`` cites) support it?"""
    return (
        f"Question: {question}\nAnswer: {answer}\n\n"
        "Do the sources above state this answer to the question? Different wording is fine; sharing words "
        "with the question is not enough.\n"
        'Answer with JSON: {"supports": true} or {"supports": false}'
    )


def aggregate_task(node: TaskNode, is_root: bool) -> str:
    """An aggregator's task: combine the children's results, keeping their citations."""
    opening = (
        "Start with a direct answer to the goal in one or two sentences. Then give the supporting facts "
        "as short bullet points. "
        if is_root
        else "Answer this goal directly in a few sentences. "
    )
    return (
        f"The results above were gathered for this goal:\n{node.goal}\n\n{opening}"
        "Use only facts from the results, keep every fact that helps answer the goal, and keep each "
        "citation [n] next to the fact it supports; do not invent citation numbers. Do not repeat a point.\n"
        'Answer with JSON: {"answer": "<your answer, citing [n]>"}'
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
