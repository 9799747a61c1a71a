"""The final report: every [n] resolves to a numbered reference, and failed runs still report."""

from __future__ import annotations

import json
import re

from sentient.context.citations import cited_numbers
from sentient.graph.node import NodeType, Source, TaskType
from sentient.graph.plan import SubTask
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.report import Reference, Report, StructuredAnswer
from sentient.report.build import build_report as build
from sentient.report.markdown import UNCONFIRMED, to_markdown
from sentient.report.markdown import markdown_report as build_report

A = Source(ref="/docs/list.md", title="Lists", snippet="...")
B = Source(ref="/docs/tuple.md", title="Tuples", snippet="...")
C = Source(ref="/docs/hash.md", title="", snippet="...")
D = Source(ref="/docs/unused.md", title="Never cited")

_REFERENCE = re.compile(r"^(\d+)\. (?:.* — )?`([^`]+)`$")


def graph_with_children(*results: tuple[str, list[Source], TaskStatus]) -> TaskGraph:
    graph = TaskGraph()
    graph.add_root("Compare lists and tuples", TaskType.WRITE, NodeType.PLAN)
    subtasks = [SubTask(goal=f"Subtask {i}", task_type=TaskType.SEARCH) for i in range(len(results))]
    graph.add_children("root", subtasks, [NodeType.EXECUTE] * len(results))
    for child, (result, sources, status) in zip(graph.children("root"), results, strict=True):
        child.status = status
        child.result = result if status is TaskStatus.DONE else None
        child.error = None if status is TaskStatus.DONE else result
        child.sources = sources
    return graph


def references(report: str) -> dict[int, str]:
    """Number -> ref of the References list, checking every line has the expected shape."""
    _, sep, tail = report.partition("\n## References\n\n")
    assert sep, "the report has no References section"
    tail = tail.partition("\n## Other sources consulted")[0]
    entries = {}
    for line in tail.strip().splitlines():
        match = _REFERENCE.match(line)
        assert match, f"malformed reference line: {line!r}"
        entries[int(match.group(1))] = match.group(2)
    return entries


def test_every_citation_resolves_to_a_numbered_reference_in_order_of_first_appearance() -> None:
    graph = graph_with_children()
    root = graph.root
    root.status = TaskStatus.DONE
    root.result = "# Lists and tuples\n\nTuples hash [3]. Lists grow [1][3]. Both index [1, 2]. Invented [9]."
    root.sources = [A, B, C, D]
    report = build_report(graph)
    body = report.partition("\n## References")[0].rstrip()
    assert body.endswith("Tuples hash [1]. Lists grow [2][1]. Both index [2][3]. Invented.\n\n" + UNCONFIRMED)
    refs = references(report)
    assert refs == {1: C.ref, 2: A.ref, 3: B.ref}
    assert set(cited_numbers(body)) == set(refs)
    assert all(ref in {s.ref for s in root.sources} for ref in refs.values())
    assert D.ref not in report.partition("## Other sources consulted")[0], "uncited sources are not numbered"
    assert report.endswith("## Other sources consulted\n\n- Never cited — `/docs/unused.md`\n")
    assert "2. Lists — `/docs/list.md`" in report
    assert "1. `/docs/hash.md`" in report, "a source without a title is listed by its ref"


def test_report_without_citations_lists_the_sources_consulted_without_numbers() -> None:
    graph = graph_with_children()
    graph.root.status = TaskStatus.DONE
    graph.root.result = "Lists are mutable; tuples are not."
    graph.root.sources = [A]
    report = build_report(graph)
    assert report == (
        "# Compare lists and tuples\n\n"
        f"Lists are mutable; tuples are not.\n\n{UNCONFIRMED}\n\n## Other sources consulted\n\n- Lists — `/docs/list.md`\n"
    )
    assert "## References" not in report


def test_an_answer_that_cites_no_verified_source_is_marked_as_resting_on_the_model() -> None:
    graph = graph_with_children()
    root = graph.root
    root.status = TaskStatus.DONE
    root.result = "Lists grow in place [1]."
    root.sources = [A.model_copy(update={"verified": True})]
    assert UNCONFIRMED not in build_report(graph)

    root.sources = [A.model_copy(update={"verified": False})]  # cited, but not found to state it
    report = build_report(graph)
    assert report.startswith(
        f"# Compare lists and tuples\n\nLists grow in place [1].\n\n{UNCONFIRMED}\n\n## References\n"
    )


def test_an_answer_is_confirmed_by_any_verified_source_it_cites() -> None:
    graph = graph_with_children()
    root = graph.root
    root.status = TaskStatus.DONE
    root.sources = [A.model_copy(update={"verified": True})]
    root.result = "Tuples are faster. Lists grow in place [1]."
    assert build(graph).confirmed is True
    root.result = "# Lists\n\nAn overview.\n\nLists grow in place [1]."
    assert build(graph).confirmed is True
    assert UNCONFIRMED not in to_markdown(build(graph))
    root.result = "Tuples are faster."  # cites nothing
    report = build(graph)
    assert report.confirmed is False and report.model_dump(mode="json")["confirmed"] is False
    assert to_markdown(report).startswith(f"# Compare lists and tuples\n\n{root.result}\n\n{UNCONFIRMED}")


def test_partial_report_of_a_failed_root_lists_finished_children_and_the_reason() -> None:
    graph = graph_with_children(
        ("Lists grow in place [2].", [D, A], TaskStatus.DONE),
        ("agent call timed out after 300s", [], TaskStatus.FAILED),
        ("Tuples never change [1].", [B], TaskStatus.DONE),
    )
    root = graph.root
    root.status = TaskStatus.FAILED
    root.error = "aggregation failed: model crashed"
    report = build_report(graph)
    assert report.startswith("# Compare lists and tuples\n")
    assert "Incomplete run" in report and "FAILED" in report
    assert "> Reason: aggregation failed: model crashed" in report
    assert "## Subtask 0" in report and "Lists grow in place [1]." in report
    assert "## Subtask 2" in report and "Tuples never change [1]." in report
    assert "## Subtask 1" not in report, "a failed subtask has no result section"
    not_covered = report.split("## Not covered", 1)[1]
    assert "- root.1: Subtask 1 — agent call timed out after 300s" in not_covered, "but it is listed as missing"
    assert "Subtask 0" not in not_covered
    assert "1. Lists — `/docs/list.md`" in report
    assert "1. Tuples — `/docs/tuple.md`" in report
    assert "- Never cited — `/docs/unused.md`" in report, "an uncited source is listed, unnumbered"


def test_partial_report_says_so_when_no_subtask_finished() -> None:
    graph = graph_with_children(("rejected", [], TaskStatus.CANCELLED))
    graph.root.status = TaskStatus.CANCELLED
    report = build_report(graph)
    assert "the root task ended CANCELLED" in report
    assert "No subtask finished." in report
    assert "Reason:" not in report


def test_partial_report_keeps_the_unconfirmed_direct_answer_with_its_own_sources() -> None:
    # The question was answered first from C (uncited), then planned; one subtask finished, citing B.
    graph = graph_with_children(("Tuples never change [1].", [B], TaskStatus.DONE))
    root = graph.root
    root.status, root.error = TaskStatus.FAILED, "aggregation failed: model crashed"
    root.result, root.sources = "Lists and tuples differ in mutability.", [C]
    report = build(graph)
    assert report.answer == "Lists and tuples differ in mutability."
    assert report.references == [] and [c.ref for c in report.consulted] == ["/docs/hash.md"]
    [section] = report.sections
    assert [r.ref for r in section.references] == ["/docs/tuple.md"]
    markdown = to_markdown(report)
    direct = markdown.split("## Direct answer, before the research was planned\n\n", 1)[1].split("## Subtask 0")[0]
    assert direct.startswith("Lists and tuples differ in mutability.\n\n" + UNCONFIRMED)
    assert "/docs/hash.md" in direct and "/docs/tuple.md" not in direct


STRUCTURED = StructuredAnswer(
    value={"mutable": "lists", "kinds": ["list", "tuple"], "count": 2},
    citations={"/mutable": [1], "/kinds/0": [1, 2]},
    references=[
        Reference(n=1, ref="/docs/list.md", kind="path", title="Lists", verified=True),
        Reference(n=2, ref="/docs/tuple.md", kind="path", title="Tuples", verified=False),
    ],
)


def test_a_structured_answer_is_shown_as_pretty_json_with_its_citations_per_field() -> None:
    report = Report(title="Lists", status=TaskStatus.DONE, partial=False, answer="Lists [1].", structured=STRUCTURED)

    markdown = to_markdown(report)

    _, heading, structured = markdown.partition("\n## Structured answer\n\n")
    assert heading, "the report has a Structured answer section"
    block = structured.partition("```json\n")[2].partition("\n```")[0]
    assert block == json.dumps(STRUCTURED.value, indent=2)
    assert "Citations per field:\n\n- `/mutable` [1]\n- `/kinds/0` [1, 2]" in structured
    assert "1. Lists — verified — `/docs/list.md`\n2. Tuples — `/docs/tuple.md`" in structured
    assert "## Structured answer" not in to_markdown(report.model_copy(update={"structured": None}))
