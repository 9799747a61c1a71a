"""The final report: the root's answer, with citations renumbered to the sources it really cites."""

from __future__ import annotations

from sentient.context.citations import cited_numbers, renumber
from sentient.graph.node import Source, TaskNode
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph


def build_report(graph: TaskGraph) -> str:
    """Markdown for the run: the answer and a References list in which every [n] resolves."""
    root = graph.root
    if root.status is TaskStatus.DONE and root.result:
        return _with_references(root.result, root.sources)
    return _partial_report(graph, root)


def _with_references(text: str, sources: list[Source]) -> str:
    order = [n for n in cited_numbers(text) if 1 <= n <= len(sources)]
    mapping = {old: new for new, old in enumerate(order, start=1)}
    body = renumber(text, mapping).strip()
    if not order:
        return body + "\n"
    refs = "\n".join(_reference(new, sources[old - 1]) for old, new in mapping.items())
    return f"{body}\n\n## References\n\n{refs}\n"


def _reference(number: int, source: Source) -> str:
    title = source.title.replace("\n", " ").strip()
    return f"{number}. {title} — `{source.ref}`" if title and title != source.ref else f"{number}. `{source.ref}`"


def _partial_report(graph: TaskGraph, root: TaskNode) -> str:
    """What the run did achieve when the root did not finish: each completed top-level result."""
    lines = [f"# {root.goal}", "", f"> **Incomplete run** — the root task ended {root.status.value}."]
    if root.error:
        lines.append(f"> Reason: {root.error}")
    done = [c for c in graph.children(root.task_id) if c.status is TaskStatus.DONE and c.result]
    for child in done:
        lines += ["", f"## {child.goal}", "", _with_references(child.result or "", child.sources).strip()]
    if not done:
        lines += ["", "No subtask finished."]
    return "\n".join(lines) + "\n"
