"""The final report: the root's answer, with citations renumbered to the sources it really cites."""

from __future__ import annotations

from sentient.context.citations import cited_numbers, renumber
from sentient.graph.node import Source, TaskNode
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph


def build_report(graph: TaskGraph, stopped: str | None = None) -> str:
    """Markdown for the run: the answer and a References list in which every [n] resolves.

    ``stopped`` is the reason a budget ended the run early; the partial report says so.
    """
    root = graph.root
    consulted = [s for node in graph for s in node.sources]
    if root.status is TaskStatus.DONE and root.result:
        return _with_references(root.result, root.sources, consulted) + _not_covered(graph)
    return _partial_report(graph, root, stopped, consulted) + _not_covered(graph)


def _with_references(text: str, sources: list[Source], consulted: list[Source]) -> str:
    """Renumber citations by first appearance; list cited sources, then the others consulted."""
    order = [n for n in cited_numbers(text) if 1 <= n <= len(sources)]
    mapping = {old: new for new, old in enumerate(order, start=1)}
    parts = [renumber(text, mapping).strip()]
    if order:
        parts.append("## References\n\n" + "\n".join(_reference(new, sources[old - 1]) for old, new in mapping.items()))
    # What the research read but the answer does not cite is still part of its provenance.
    cited = {sources[old - 1].ref for old in mapping}
    uncited = list({s.ref: s for s in [*sources, *consulted] if s.ref not in cited}.values())
    if uncited:
        parts.append("## Other sources consulted\n\n" + "\n".join(f"- {_describe(s)}" for s in uncited))
    return "\n\n".join(parts) + "\n"


def _reference(number: int, source: Source) -> str:
    """A numbered reference; a verified one shows the quote that was checked against the source."""
    if source.verified and source.quote:
        # The path stays last on the line: the server reads references back by it.
        quote = " ".join(source.quote.split())
        title = source.title.replace("\n", " ").strip() or source.ref
        return f"{number}. {title} — verified: “{quote}” — `{source.ref}`"
    return f"{number}. {_describe(source)}"


def _describe(source: Source) -> str:
    title = source.title.replace("\n", " ").strip()
    return f"{title} — `{source.ref}`" if title and title != source.ref else f"`{source.ref}`"


def _partial_report(graph: TaskGraph, root: TaskNode, stopped: str | None, consulted: list[Source]) -> str:
    """What the run did achieve when the root did not finish: each completed top-level result."""
    if stopped:
        lines = [f"# {root.goal}", "", f"> **Partial report** — the run was stopped early: {stopped}."]
        lines.append("> Only the subtasks that finished are included. Resume the project to complete it.")
    else:
        lines = [f"# {root.goal}", "", f"> **Incomplete run** — the root task ended {root.status.value}."]
        if root.error:
            lines.append(f"> Reason: {root.error}")
    done = _topmost_done(graph, root)
    for node in done:
        lines += ["", f"## {node.goal}", "", _with_references(node.result or "", node.sources, []).strip()]
    if not done:
        lines += ["", "No subtask finished."]
    return "\n".join(lines) + "\n"


def _topmost_done(graph: TaskGraph, node: TaskNode) -> list[TaskNode]:
    """The finished nodes nearest the root under ``node``, in plan order (their results cover their subtrees)."""
    found: list[TaskNode] = []
    for child in graph.children(node.task_id):
        if child.status is TaskStatus.DONE and child.result:
            found.append(child)
        else:
            found += _topmost_done(graph, child)
    return found


def _not_covered(graph: TaskGraph) -> str:
    """A "Not covered" section naming the failed subtasks (the topmost of each failed branch)."""
    failed: list[TaskNode] = []
    stack = list(reversed(graph.children(graph.root.task_id)))
    while stack:
        node = stack.pop()
        if node.status is TaskStatus.FAILED:
            failed.append(node)
        else:
            stack.extend(reversed(graph.children(node.task_id)))
    if not failed:
        return ""
    lines = ["", "## Not covered", "", "These subtasks failed, so this report does not cover them:", ""]
    for node in failed:
        error = " ".join((node.error or "failed").split())
        error = error if len(error) <= 200 else error[:199] + "…"
        lines.append(f"- {node.task_id}: {node.goal.strip()} — {error}")
    return "\n".join(lines) + "\n"
