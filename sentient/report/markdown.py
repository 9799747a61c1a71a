"""A :class:`Report` as Markdown: what ``report.md``, the CLI and the Markdown download show.

The report is laid out once, by :func:`report_blocks`: Markdown texts and :class:`Cited` parts
(a text with its numbered references). :func:`to_markdown` writes them as Markdown; the HTML
renderer (:mod:`sentient.report.html`) renders the same blocks, its citations linked to the
references.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from sentient.context.grounding import VERIFIED_MEANS
from sentient.graph.task_graph import TaskGraph
from sentient.report.build import build_report, opening_heading
from sentient.report.model import Consulted, Missing, Reference, Report, StructuredAnswer

_ERROR_CHARS = 200  # a failed subtask's error is shortened to this in the "Not covered" list
_STRUCTURED_SCOPE = "structured-"  # the anchors of the structured answer's own references
_BACKTICKS = re.compile(r"`+")
UNCONFIRMED = (
    "> **Not confirmed by the sources:** no passage the research consulted could be shown to state this "
    "answer; treat it as the model's own."
)


@dataclass(frozen=True)
class Cited:
    """A Markdown text whose ``[n]`` markers refer to ``references``, a note under it, and the
    other sources consulted.

    ``scope`` starts the anchors of its references (``<scope>ref-<n>``), which tells apart the
    references of several texts on one page, as the dashboard does: "" for the answer, the task
    id and "-" for a section.
    """

    text: str
    references: list[Reference]
    consulted: list[Consulted]
    scope: str = ""
    note: str | None = None


Block = str | Cited  # Markdown, or a cited text


def to_markdown(report: Report) -> str:
    """The report as Markdown: its title, the answer (or the finished sections), References, and
    what is not covered. An answer that is not confirmed by a source says so under it
    (:attr:`Report.confirmed`)."""
    return "\n\n".join(_markdown(block) for block in report_blocks(report)) + "\n"


def markdown_report(graph: TaskGraph, stopped: str | None = None) -> str:
    """The Markdown report of ``graph`` (``to_markdown(build_report(graph, stopped))``)."""
    return to_markdown(build_report(graph, stopped))


def report_blocks(report: Report) -> list[Block]:
    """The report's parts in order: the title, then the answer with its references or why the
    report is partial and the finished sections, the structured answer (runs with an output
    schema), then what is not covered."""
    blocks: list[Block] = [f"# {report.title}"]
    if report.partial:
        blocks += _partial(report)
    else:
        blocks.append(_answer(report))
    if report.structured is not None:
        blocks += ["## Structured answer", _structured(report.structured)]
    return blocks + _not_covered(report.missing)


def _answer(report: Report) -> Cited:
    """The answer (less the heading the title repeats), its References and the other sources
    consulted; an unconfirmed answer says so."""
    heading, body = opening_heading(report.answer or "")
    text = body if heading is not None and heading == report.title else report.answer or ""
    note = None if report.confirmed else UNCONFIRMED
    return Cited(text, report.references, report.consulted, note=note)


def _structured(structured: StructuredAnswer) -> Cited:
    """The JSON value, pretty-printed in a code block, then the citations of each of its strings
    (by JSON pointer), which number the structured answer's own references."""
    text = "```json\n" + json.dumps(structured.value, ensure_ascii=False, indent=2) + "\n```"
    if structured.citations:
        cited = "\n".join(
            f"- {_code(pointer)} [{', '.join(map(str, numbers))}]" for pointer, numbers in structured.citations.items()
        )
        text += "\n\nCitations per field:\n\n" + cited
    return Cited(text, structured.references, [], scope=_STRUCTURED_SCOPE)


def _code(text: str) -> str:
    """``text`` as a Markdown code span, whatever backticks it holds."""
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def _partial(report: Report) -> list[Block]:
    """Why the report is partial, then each finished top-level result under its goal."""
    if report.stopped:
        included = (
            "the direct answer and the subtasks that finished are"
            if report.answer
            else "the subtasks that finished are"
        )
        why = (
            f"> **Partial report** — the run was stopped early: {report.stopped}.\n"
            f"> Only {included} included. Resume the project to complete it."
        )
    else:
        why = f"> **Incomplete run** — the root task ended {report.status.value}."
        if report.error:
            why += f"\n> Reason: {report.error}"
    blocks: list[Block] = [why]
    if report.answer:
        blocks += ["## Direct answer, before the research was planned", _answer(report)]
    for section in report.sections:
        cited = Cited(section.text, section.references, section.consulted, scope=f"{section.task_id}-")
        blocks += [f"## {section.goal}", cited]
    if not report.sections:
        blocks.append("No subtask finished.")
    return blocks


def _not_covered(missing: list[Missing]) -> list[Block]:
    """A "Not covered" section naming the failed subtasks."""
    if not missing:
        return []
    lines = []
    for part in missing:
        error = part.error if len(part.error) <= _ERROR_CHARS else part.error[: _ERROR_CHARS - 1] + "…"
        lines.append(f"- {part.task_id}: {part.goal} — {error}")
    return ["## Not covered", "These subtasks failed, so this report does not cover them:", "\n".join(lines)]


def _markdown(block: Block) -> str:
    """A block as Markdown: a cited text, its note, its numbered References, the other sources."""
    if isinstance(block, str):
        return block
    parts = [block.text.strip()]
    if block.note:
        parts.append(block.note)
    if block.references:
        parts.append("## References\n\n" + "\n".join(_reference(r) for r in block.references))
        if any(r.verified for r in block.references):
            parts.append(f"*{VERIFIED_MEANS}*")
    if block.consulted:
        described = "\n".join(f"- {_describe(s.title, s.ref)}" for s in block.consulted)
        parts.append("## Other sources consulted\n\n" + described)
    return "\n\n".join(part for part in parts if part)


def _reference(reference: Reference) -> str:
    """A numbered reference, marked when the verifier found that it supports what cites it."""
    if reference.verified:
        return f"{reference.n}. {reference.title or reference.ref} — verified — `{reference.ref}`"
    return f"{reference.n}. {_describe(reference.title, reference.ref)}"


def _describe(title: str, ref: str) -> str:
    return f"{title} — `{ref}`" if title and title != ref else f"`{ref}`"
