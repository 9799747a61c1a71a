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


def execute_task(node: TaskNode, has_sources: bool, quoting: bool = True, strict: bool = False) -> str:
    """An executor's task. ``quoting``: it gives a quote for each citation (else its citations
    are checked against what the sources state, in code). ``strict``: it answers from the
    sources only (a second look); else, when they do not hold the answer, from what it knows."""
    otherwise = (
        "If the sources do not state the answer, say so."
        if strict
        else "If the sources do not contain the answer, give the best answer you know without a citation and "
        "say that the sources do not confirm it."
    )
    if has_sources and not quoting:
        return (
            f"Task: {node.goal}\n\n"
            "Answer the task from the numbered sources above, directly and concisely, in one to three "
            f"sentences, and cite the source of each fact as [n]. {otherwise}\n"
            'Answer with JSON: {"answer": "<the answer, citing [n]>"}'
        )
    if has_sources:
        return (
            f"Task: {node.goal}\n\n"
            "Use the numbered sources above. First, in citations, give for each source you use its number "
            "and the sentence from it that supports the answer, copied word for word (5 to 25 words). Then, "
            "in answer, answer the task directly in one to three sentences, with the source number in "
            f"brackets after each fact, like [2]. {otherwise}\n"
            'Answer with JSON: {"citations": [{"source": <n>, "quote": "<words copied from source n>"}], '
            '"answer": "<the answer, citing [n]>"}'
        )
    return (
        f"Task: {node.goal}\n\n"
        "Use the results above and keep their citations [n] next to the facts they support; "
        "do not invent citation numbers. Be direct and concise.\n"
        'Answer with JSON: {"citations": [], "answer": "<your answer, citing [n]>"}'
    )


def number_is_not_an_answer(sentence: str) -> str:
    """What an executor is told after answering with a source's number in place of the answer."""
    return (
        f"\n\nYour previous answer said: {sentence}\n"
        "A number in brackets only says which source states a fact; it is not the answer. Write the "
        "answer itself (the name, number or value that the source gives), followed by its [n]."
    )


def aggregate_task(node: TaskNode, is_root: bool, searched: bool = False) -> str:
    """An aggregator's task. ``searched``: numbered sources found for the goal itself are shown
    beside the results, and may answer what the results missed."""
    facts = "the results and the numbered sources" if searched else "the results"
    opening = (
        "Start with a direct answer to the goal in one or two sentences. Then give the supporting facts "
        "as short bullet points. "
        if is_root
        else "Answer this goal directly in a few sentences. "
    )
    return (
        f"The results above were gathered for this goal:\n{node.goal}\n\n{opening}"
        f"Use only facts from {facts}, keep every fact that helps answer the goal, and keep each "
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
