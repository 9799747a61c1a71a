"""The report as a value: what a run found, with its references, gaps and completeness.

A :class:`Report` is built once from the task graph (:func:`sentient.report.build_report`) and
rendered by the renderers (Markdown, HTML) or sent as JSON (``Report.model_dump_json``); nothing
reads a rendered report back. Texts (the answer, section texts) are Markdown whose ``[n]``
markers refer to the ``n`` of the references next to them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue, computed_field

from sentient.context.grounding import confirmed
from sentient.graph.status import TaskStatus

SourceKind = Literal["url", "path"]
# Every field is always serialised, so the JSON schema (and the dashboard's generated types) require them all.
# Attribute docstrings become the field descriptions of the JSON schema (and of the generated types).
_CONFIG = ConfigDict(frozen=True, json_schema_serialization_defaults_required=True, use_attribute_docstrings=True)


class Reference(BaseModel):
    """A numbered source the text cites."""

    model_config = _CONFIG

    n: int
    """The number the text's ``[n]`` markers use."""
    ref: str
    """A URL or a document path."""
    kind: SourceKind
    title: str
    """One line; empty when the source has none."""
    verified: bool
    """Whether a model read the passage and judged that it supports the answer citing it."""


class Consulted(BaseModel):
    """A source the research read that the text does not cite."""

    model_config = _CONFIG

    ref: str
    kind: SourceKind
    title: str


class Section(BaseModel):
    """A finished subtask's result, reported on its own because the root did not finish."""

    model_config = _CONFIG

    task_id: str
    goal: str
    text: str
    references: list[Reference]
    consulted: list[Consulted]


class Missing(BaseModel):
    """A failed subtask (the topmost of its failed branch): a part of the goal the report does not cover."""

    model_config = _CONFIG

    task_id: str
    goal: str
    error: str
    """Why it failed, whitespace normalised (not shortened)."""


class StructuredAnswer(BaseModel):
    """The answer as a JSON value that validates against the run's output schema, with the
    sources each of its strings cites (numbered apart from the answer's references)."""

    model_config = _CONFIG

    value: JsonValue
    """The JSON value; its strings hold no citation markers."""
    citations: dict[str, list[int]]
    """Per JSON pointer of a string of ``value`` (``/name``, ``/items/0/title``), the ``n`` of the references it cites."""
    references: list[Reference]


class Report(BaseModel):
    """A run's report.

    A complete report (``partial`` false) has the root's ``answer`` with ``references`` and
    ``consulted``. A partial one (the root did not finish) has ``sections``: the finished
    subtasks nearest the root, each with its own numbered references, and ``stopped`` (a budget
    ended the run) or ``error`` (the root's) says why; its ``answer`` is the unconfirmed direct
    answer of a question planned after it was answered first (with its references), if there
    is one. ``missing`` lists the failed subtasks in both cases.
    """

    model_config = _CONFIG

    title: str
    """The report's title, one line: the heading its answer opens with, else the root goal (shortened when long)."""
    status: TaskStatus
    """The root's status when the report was built."""
    partial: bool
    """True when the root did not finish: only the finished sections (and an unconfirmed answer) are there."""
    stopped: str | None = None
    """Why a budget stopped the run early (partial reports only)."""
    error: str | None = None
    """The root's error (partial reports only)."""
    answer: str | None = None
    """The root's answer; in a partial report, the unconfirmed direct answer of a question that was being planned, if any."""
    references: list[Reference] = []
    consulted: list[Consulted] = []
    sections: list[Section] = []
    missing: list[Missing] = []
    structured: StructuredAnswer | None = None
    """The answer as JSON of the run's output schema (runs with an ``output_schema`` that completed)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def confirmed(self) -> bool:
        """Whether the answer cites a source the verifier judged to support it
        (:func:`sentient.context.grounding.confirmed`). One that does not rests on the model
        alone: the renderers and the dashboard say so under it."""
        return confirmed(self.answer or "", {reference.n for reference in self.references if reference.verified})


def source_kind(ref: str) -> SourceKind:
    """``url`` for http(s) references, ``path`` for everything else (documents on disk)."""
    return "url" if ref.lower().startswith(("http://", "https://")) else "path"
