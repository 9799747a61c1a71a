"""The report is a value: references with their verification, the missing parts and the partial
flag are data, and every renderer (Markdown, HTML, JSON) works from that one value."""

from __future__ import annotations

import json

from sentient.context.grounding import VERIFIED_MEANS
from sentient.graph.node import NodeType, Source, TaskType
from sentient.graph.plan import SubTask
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.report import Report, build_report, to_markdown
from sentient.report.html import to_html

LISTS = Source(ref="/docs/lists.md", title="Lists\nand more", snippet="...", verified=True)
TUPLES = Source(ref="https://docs.python.org/3/tuples", title="Tuples", snippet="...")
HASH = Source(ref="/docs/hash.md", snippet="...", verified=False)


def two_subtasks(*statuses: TaskStatus) -> TaskGraph:
    graph = TaskGraph()
    graph.add_root("Compare lists and tuples", TaskType.WRITE, NodeType.PLAN)
    goals = [SubTask(goal=f" Subtask {i} ", task_type=TaskType.SEARCH) for i in range(len(statuses))]
    graph.add_children("root", goals, [NodeType.EXECUTE] * len(statuses))
    for child, status in zip(graph.children("root"), statuses, strict=True):
        child.status = status
    return graph


def test_a_complete_report_numbers_cited_sources_with_their_verification_and_lists_the_rest() -> None:
    graph = two_subtasks(TaskStatus.DONE, TaskStatus.FAILED)
    done, failed = graph.children("root")
    done.sources = [HASH]
    failed.error = "model error:\n  timed out " + "x" * 300
    graph.root.status, graph.root.sources = TaskStatus.DONE, [LISTS, TUPLES, HASH]
    graph.root.result = "  Tuples are immutable [2]. Lists grow in place [1][2].  "

    report = build_report(graph)

    assert (report.partial, report.status, report.title) == (False, TaskStatus.DONE, "Compare lists and tuples")
    assert report.answer == "Tuples are immutable [1]. Lists grow in place [2][1]."
    tuples, lists = report.references
    assert (tuples.n, tuples.ref, tuples.kind, tuples.verified) == (1, TUPLES.ref, "url", False)
    assert (lists.n, lists.title, lists.kind, lists.verified) == (2, "Lists and more", "path", True)
    assert [(c.ref, c.kind, c.title) for c in report.consulted] == [(HASH.ref, "path", "")]
    assert [(m.task_id, m.goal) for m in report.missing] == [("root.1", "Subtask 1")]
    assert report.missing[0].error == "model error: timed out " + "x" * 300  # whole: only Markdown shortens it
    assert (report.sections, report.stopped, report.error) == ([], None, None)
    markdown = to_markdown(report)
    assert "2. Lists and more — verified — `/docs/lists.md`" in markdown
    assert f"*{VERIFIED_MEANS}*" in markdown
    assert "- root.1: Subtask 1 — model error: timed out " + "x" * 176 + "…\n" in markdown


def test_a_partial_report_has_sections_with_their_own_references_and_says_why() -> None:
    graph = two_subtasks(TaskStatus.DONE, TaskStatus.CANCELLED)
    done = graph.children("root")[0]
    done.result, done.sources = "Lists grow [2].", [HASH, LISTS]
    graph.root.status = TaskStatus.CANCELLED

    report = build_report(graph, stopped="the cost budget of $0.10 was spent")

    assert (report.partial, report.answer, report.references, report.missing) == (True, None, [], [])
    assert report.stopped == "the cost budget of $0.10 was spent"
    (section,) = report.sections
    assert (section.task_id, section.goal, section.text) == ("root.0", " Subtask 0 ", "Lists grow [1].")
    assert [(r.n, r.ref, r.verified) for r in section.references] == [(1, LISTS.ref, True)]
    assert [c.ref for c in section.consulted] == [HASH.ref]
    assert to_markdown(report).startswith(
        "# Compare lists and tuples\n\n> **Partial report** — the run was stopped early: the cost budget of $0.10"
    )


def test_the_json_holds_every_field_and_reads_back_as_the_same_report() -> None:
    graph = two_subtasks(TaskStatus.DONE)
    graph.children("root")[0].result = "Done [1]."
    graph.children("root")[0].sources = [LISTS]
    graph.root.status, graph.root.error = TaskStatus.FAILED, "aggregation failed"
    report = build_report(graph)

    data = json.loads(report.model_dump_json())

    assert set(data) == {
        "title", "status", "partial", "stopped", "error", "answer", "references", "consulted", "sections", "missing",
        "confirmed", "structured",
    }  # fmt: skip
    assert (data["status"], data["error"], data["answer"], data["stopped"]) == (
        "FAILED",
        "aggregation failed",
        None,
        None,
    )
    assert data["sections"][0]["references"][0]["verified"] is True
    assert Report.model_validate(data) == report
    assert to_markdown(Report.model_validate(data)) == to_markdown(report)


def test_a_report_is_titled_by_its_goal_in_markdown_html_and_json() -> None:
    graph = two_subtasks()
    graph.root.status, graph.root.result, graph.root.sources = TaskStatus.DONE, "Answer <b>bold</b> [1].", [TUPLES]
    report = build_report(graph)

    assert report.title == json.loads(report.model_dump_json())["title"] == "Compare lists and tuples"
    assert to_markdown(report).startswith("# Compare lists and tuples\n\nAnswer <b>bold</b> [1].\n")
    page = to_html(report)
    assert "<title>Compare lists and tuples</title>" in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "<main>\n<h1>Compare lists and tuples</h1>" in page


def test_the_heading_an_answer_opens_with_titles_the_report_once() -> None:
    graph = two_subtasks()
    graph.root.status, graph.root.sources = TaskStatus.DONE, [TUPLES]
    graph.root.result = "# Lists and tuples\n\nLists change; tuples do not [1]."

    report = build_report(graph)

    assert (report.title, report.answer) == ("Lists and tuples", graph.root.result)
    markdown = to_markdown(report)
    assert markdown.startswith("# Lists and tuples\n\nLists change") and markdown.count("# Lists and tuples") == 1


def test_a_long_goal_is_shortened_at_a_word_to_title_the_report() -> None:
    graph = TaskGraph()
    goal = "Compare   lists\nand tuples " + "in every respect that matters to a working programmer " * 6
    graph.add_root(goal, TaskType.WRITE, NodeType.EXECUTE)
    graph.root.status, graph.root.result = TaskStatus.DONE, "They differ."

    title = build_report(graph).title

    assert title.startswith("Compare lists and tuples in every respect") and title.endswith("…")
    assert len(title) <= 150 and "\n" not in title and title[:-1] == title[:-1].rstrip()
    assert " ".join(goal.split()).startswith(title[:-1])
