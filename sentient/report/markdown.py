"""A :class:`Report` as Markdown: what ``report.md``, the CLI and the Markdown download show."""

from __future__ import annotations

from sentient.graph.task_graph import TaskGraph
from sentient.report.build import build_report
from sentient.report.model import Consulted, Missing, Reference, Report

_ERROR_CHARS = 200  # a failed subtask's error is shortened to this in the "Not covered" list
UNCONFIRMED = (
    "> **Not confirmed by the sources:** no source the research consulted was found to state this "
    "answer, so it rests on the model alone."
)


def to_markdown(report: Report) -> str:
    """The report as Markdown: the answer (or the finished sections), References, and what is not
    covered. An answer that is not confirmed by a source says so under it (:attr:`Report.confirmed`)."""
    text = _partial(report) if report.partial else _answer(report) + "\n"
    return text + _not_covered(report.missing)


def _answer(report: Report) -> str:
    """The answer, its References and the other sources consulted; an unconfirmed answer says so."""
    answer = report.answer or ""
    if not report.confirmed:
        answer += "\n\n" + UNCONFIRMED
    return _cited(answer, report.references, report.consulted)


def markdown_report(graph: TaskGraph, stopped: str | None = None) -> str:
    """The Markdown report of ``graph`` (``to_markdown(build_report(graph, stopped))``)."""
    return to_markdown(build_report(graph, stopped))


def _cited(text: str, references: list[Reference], consulted: list[Consulted]) -> str:
    """A text, its numbered References, then the other sources consulted."""
    parts = [text]
    if references:
        parts.append("## References\n\n" + "\n".join(_reference(r) for r in references))
    if consulted:
        parts.append("## Other sources consulted\n\n" + "\n".join(f"- {_describe(s.title, s.ref)}" for s in consulted))
    return "\n\n".join(parts)


def _reference(reference: Reference) -> str:
    """A numbered reference; a verified one shows the quote that was checked against the source."""
    if reference.verified and reference.quote is not None:
        return f"{reference.n}. {reference.title or reference.ref} — verified: “{reference.quote}” — `{reference.ref}`"
    return f"{reference.n}. {_describe(reference.title, reference.ref)}"


def _describe(title: str, ref: str) -> str:
    return f"{title} — `{ref}`" if title and title != ref else f"`{ref}`"


def _partial(report: Report) -> str:
    """Why the report is partial, then each finished top-level result under its goal."""
    if report.stopped:
        lines = [f"# {report.title}", "", f"> **Partial report** — the run was stopped early: {report.stopped}."]
        included = (
            "the direct answer and the subtasks that finished are"
            if report.answer
            else "the subtasks that finished are"
        )
        lines.append(f"> Only {included} included. Resume the project to complete it.")
    else:
        lines = [f"# {report.title}", "", f"> **Incomplete run** — the root task ended {report.status.value}."]
        if report.error:
            lines.append(f"> Reason: {report.error}")
    if report.answer:
        lines += ["", "## Direct answer, before the research was planned", "", _answer(report)]
    for section in report.sections:
        lines += ["", f"## {section.goal}", "", _cited(section.text, section.references, section.consulted).strip()]
    if not report.sections:
        lines += ["", "No subtask finished."]
    return "\n".join(lines) + "\n"


def _not_covered(missing: list[Missing]) -> str:
    """A "Not covered" section naming the failed subtasks."""
    if not missing:
        return ""
    lines = ["", "## Not covered", "", "These subtasks failed, so this report does not cover them:", ""]
    for part in missing:
        error = part.error if len(part.error) <= _ERROR_CHARS else part.error[: _ERROR_CHARS - 1] + "…"
        lines.append(f"- {part.task_id}: {part.goal} — {error}")
    return "\n".join(lines) + "\n"
