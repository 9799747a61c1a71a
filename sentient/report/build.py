"""Build the :class:`Report` of a task graph: the root's answer with its citations renumbered to
the sources it really cites, or, when the root did not finish, what the run did achieve."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sentient.context.citations import cited_numbers, renumber
from sentient.graph.node import Source, TaskNode
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.report.model import (
    Consulted,
    Missing,
    Reference,
    Report,
    Section,
    StructuredAnswer,
    source_kind,
)
from sentient.structured import CitedValue

TITLE_CHARS = 150  # a goal longer than this is shortened, at a word, to title the report
# A Markdown heading of level 1 ("# Lists and tuples"), as a model that writes a report opens it.
_HEADING = re.compile(r"#[ \t]+(?P<title>.+?)(?:[ \t]+#+)?[ \t]*")


def build_report(graph: TaskGraph, stopped: str | None = None, structured: CitedValue | None = None) -> Report:
    """The report of ``graph``: complete when the root is done with a result, partial otherwise.

    ``stopped`` is the reason a budget ended the run early; the partial report says so.
    ``structured`` is the root's answer as JSON of the run's output schema, citing the root's sources.
    """
    root = graph.root
    missing = _missing(graph)
    if root.status is TaskStatus.DONE and root.result:
        consulted = [s for node in graph for s in node.sources]
        answer, references, uncited = _cited(root.result, root.sources, consulted)
        heading, _ = opening_heading(answer)
        return Report(
            title=heading or goal_title(root.goal),
            status=root.status,
            partial=False,
            answer=answer,
            references=references,
            consulted=uncited,
            missing=missing,
            structured=None if structured is None else _structured(structured, root.sources),
        )
    sections = []
    for node in _topmost_done(graph, root):
        text, cited, uncited = _cited(node.result or "", node.sources, [])
        sections.append(Section(task_id=node.task_id, goal=node.goal, text=text, references=cited, consulted=uncited))
    report = Report(
        title=goal_title(root.goal),
        status=root.status,
        partial=True,
        stopped=stopped,
        error=root.error,
        sections=sections,
        missing=missing,
    )
    if root.unconfirmed_answer:  # a question answered first and planned after all has an answer already
        answer, references, uncited = _cited(root.unconfirmed_answer, root.sources, [])
        report = report.model_copy(update={"answer": answer, "references": references, "consulted": uncited})
    return report


def _cited(
    text: str, sources: Sequence[Source], consulted: Sequence[Source]
) -> tuple[str, list[Reference], list[Consulted]]:
    """Renumber citations by first appearance; the cited sources numbered, then the others consulted."""
    order = [n for n in cited_numbers(text) if 1 <= n <= len(sources)]
    mapping = {old: new for new, old in enumerate(order, start=1)}
    references = [_reference(new, sources[old - 1]) for old, new in mapping.items()]
    # What the research read but the text does not cite is still part of its provenance.
    cited = {sources[old - 1].ref for old in mapping}
    uncited = {s.ref: s for s in [*sources, *consulted] if s.ref not in cited}.values()
    others = [Consulted(ref=s.ref, kind=source_kind(s.ref), title=_title(s)) for s in uncited]
    return renumber(text, mapping).strip(), references, others


def _structured(cited: CitedValue, sources: Sequence[Source]) -> StructuredAnswer:
    """``cited`` with its citations renumbered by first appearance, and its own references."""
    order = dict.fromkeys(n for numbers in cited.citations.values() for n in numbers if 1 <= n <= len(sources))
    mapping = {old: new for new, old in enumerate(order, start=1)}
    citations = {pointer: [mapping[n] for n in numbers if n in mapping] for pointer, numbers in cited.citations.items()}
    return StructuredAnswer(
        value=cited.value,
        citations={pointer: numbers for pointer, numbers in citations.items() if numbers},
        references=[_reference(new, sources[old - 1]) for old, new in mapping.items()],
    )


def opening_heading(text: str) -> tuple[str | None, str]:
    """The level-1 heading ``text`` opens with (a model writing a report titles it so) and the
    text under it; ``(None, text)`` when it opens otherwise, or is a heading alone."""
    first, _, rest = text.strip().partition("\n")
    heading = _HEADING.fullmatch(first.strip())
    if heading is None or not rest.strip():
        return None, text
    return heading["title"], rest.strip()


def goal_title(goal: str) -> str:
    """``goal`` on one line, shortened at a word to about ``TITLE_CHARS`` characters."""
    line = " ".join(goal.split())
    if len(line) <= TITLE_CHARS:
        return line
    cut = line.rfind(" ", 0, TITLE_CHARS)
    return line[: cut if cut > TITLE_CHARS // 2 else TITLE_CHARS - 1].rstrip(" ,;:") + "…"


def _reference(number: int, source: Source) -> Reference:
    verified = bool(source.verified)
    return Reference(n=number, ref=source.ref, kind=source_kind(source.ref), title=_title(source), verified=verified)


def _title(source: Source) -> str:
    return source.title.replace("\n", " ").strip()


def _topmost_done(graph: TaskGraph, node: TaskNode) -> list[TaskNode]:
    """The finished nodes nearest the root under ``node``, in plan order (their results cover their subtrees)."""
    found: list[TaskNode] = []
    for child in graph.children(node.task_id):
        if child.status is TaskStatus.DONE and child.result:
            found.append(child)
        else:
            found += _topmost_done(graph, child)
    return found


def _missing(graph: TaskGraph) -> list[Missing]:
    """The failed subtasks, the topmost of each failed branch, in plan order."""
    failed: list[Missing] = []
    stack = list(reversed(graph.children(graph.root.task_id)))
    while stack:
        node = stack.pop()
        if node.status is TaskStatus.FAILED:
            error = " ".join((node.error or "failed").split())
            failed.append(Missing(task_id=node.task_id, goal=node.goal.strip(), error=error))
        else:
            stack.extend(reversed(graph.children(node.task_id)))
    return failed
