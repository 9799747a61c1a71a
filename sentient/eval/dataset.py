"""Evaluation datasets: questions with accepted answers, read from JSONL or CSV.

Three layouts are recognised, line by line (JSONL) or from the header (CSV):

- Sentient's own: ``{"id", "question", "answers": [...]}`` plus optional ``split``
  (``dev`` | ``heldout``; default ``dev``), ``hops`` (1 | 2), ``also`` (the other parts of a
  question that asks several things, each a list of accepted answers), ``docs`` and any other
  field (kept);
- SimpleQA: ``problem``, ``answer`` (its ``metadata`` column is kept);
- FRAMES: ``Prompt``, ``Answer`` (its other columns are kept).

A question without an ``id`` is numbered by its line. Every problem is an :class:`EvalError`
naming the file and the line.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sentient.exceptions import EvalError

Split = Literal["dev", "heldout"]
SPLITS: tuple[str, ...] = ("dev", "heldout", "all")

# (question field, answer field) of the published layouts, checked in this order.
_LAYOUTS: tuple[tuple[str, str], ...] = (("question", "answers"), ("problem", "answer"), ("Prompt", "Answer"))


class EvalQuestion(BaseModel):
    """One question of a dataset. Unknown fields are kept in ``extra``-allowed attributes."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    answers: list[str] = Field(min_length=1, description="Accepted answers; any one counts.")
    split: Split = "dev"
    hops: Literal[1, 2] | None = None
    also: list[list[str]] = Field(
        default_factory=list,
        description="A question asking several things: accepted answers of each other part; all must be stated.",
    )
    docs: list[str] | str | None = None  # where the answer is written (for the corpus checks)

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value

    @field_validator("answers")
    @classmethod
    def _no_blank_answer(cls, answers: list[str]) -> list[str]:
        if any(not a.strip() for a in answers):
            raise ValueError("an accepted answer is blank")
        return answers

    @field_validator("also")
    @classmethod
    def _no_blank_part(cls, parts: list[list[str]]) -> list[list[str]]:
        if any(not part or any(not a.strip() for a in part) for part in parts):
            raise ValueError("a part has no accepted answer, or a blank one")
        return parts

    @property
    def parts(self) -> list[list[str]]:
        """Every part's accepted answers: ``answers`` first, then ``also``'s."""
        return [self.answers, *self.also]


def load_dataset(path: Path) -> list[EvalQuestion]:
    """Read every question of ``path`` (``.jsonl``/``.json`` lines or ``.csv``).

    Raises:
        EvalError: the file is missing or empty, a line is not valid, or two questions share an id.
    """
    if not path.is_file():
        raise EvalError("dataset file does not exist", file=str(path))
    rows = _csv_rows(path) if path.suffix.lower() == ".csv" else _jsonl_rows(path)
    questions: list[EvalQuestion] = []
    lines: dict[str, int] = {}
    for line, row in rows:
        question = _question(row, path, line)
        if question.id in lines:
            raise EvalError(
                f"duplicate id {question.id!r} (first on line {lines[question.id]})", file=str(path), line=line
            )
        lines[question.id] = line
        questions.append(question)
    if not questions:
        raise EvalError("the dataset has no questions", file=str(path))
    return questions


class _Row(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def split(self) -> str: ...


Row = TypeVar("Row", bound=_Row)


def select(rows: list[Row], split: str, limit: int | None = None, ids: Sequence[str] = ()) -> list[Row]:
    """The questions (or report goals) of ``split`` (``dev``, ``heldout`` or ``all``), only those
    whose id is one of ``ids`` if any are given, the first ``limit`` of them, in dataset order.

    Raises:
        EvalError: an id that names no row of the split.
    """
    chosen = [r for r in rows if split == "all" or r.split == split]
    if ids:
        known = {r.id for r in chosen}
        if unknown := [i for i in dict.fromkeys(ids) if i not in known]:
            raise EvalError(f"no {', '.join(map(repr, unknown))} in the {split} split")
        chosen = [r for r in chosen if r.id in ids]
    return chosen[:limit] if limit is not None else chosen


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalError(f"cannot read the dataset: {exc}", file=str(path)) from None
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise EvalError(f"not valid JSON ({exc.msg}, column {exc.colno})", file=str(path), line=number) from None
        if not isinstance(row, dict):
            raise EvalError(f"expected a JSON object, got {type(row).__name__}", file=str(path), line=number)
        yield number, row


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            for row in reader:
                # The reader's line_num is where the row ended (rows may span lines).
                yield reader.line_num, {k: v for k, v in row.items() if k}
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise EvalError(f"cannot read the CSV dataset: {exc}", file=str(path)) from None


def _question(row: dict[str, Any], path: Path, line: int) -> EvalQuestion:
    layout = next(((q, a) for q, a in _LAYOUTS if q in row), None)
    if layout is None:
        raise EvalError(
            "no question field: expected 'question' (with 'answers'), 'problem' (SimpleQA) or 'Prompt' (FRAMES)",
            file=str(path),
            line=line,
        )
    question_field, answer_field = layout
    data = {k: v for k, v in row.items() if k not in (question_field, answer_field)}
    data["question"] = row[question_field]
    answers = row.get(answer_field, row.get("answer") if answer_field == "answers" else None)
    if answers is None:
        raise EvalError(f"no '{answer_field}' field", file=str(path), line=line)
    data["answers"] = [answers] if isinstance(answers, str) else answers
    data.setdefault("id", str(line))
    if data.get("split") == "":
        data.pop("split")  # an empty CSV cell
    try:
        return EvalQuestion.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"]) or "(line)"
        raise EvalError(f"{field}: {error['msg']} (got {error.get('input')!r})", file=str(path), line=line) from None
