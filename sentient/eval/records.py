"""One graded result per (system, question), and the file that keeps them (``results.jsonl``).

Where an answer was lost is located by three containment checks on the same accepted
answers: in the sources the model was shown (``in_sources``: retrieval), in some executed
step's result (``in_leaf``: execution) and in the final answer (``in_final``); a fact in a
leaf but not in the final answer was lost in aggregation. A question that asks several things
(``also``) needs every part: in the answer for ``correct``, and each part in some source or
step for the other two.
"""

from __future__ import annotations

import json
from pathlib import Path

from loguru import logger
from pydantic import BaseModel, ConfigDict, ValidationError

from sentient.eval.dataset import EvalQuestion
from sentient.eval.grading import answer_body, citation_markers, looks_not_attempted, states_every_part
from sentient.eval.judge import Grade
from sentient.eval.systems import Outcome


class QuestionRecord(BaseModel):
    """One line of ``results.jsonl``."""

    model_config = ConfigDict(extra="ignore")

    id: str
    question: str
    split: str
    hops: int | None = None
    system: str
    model: str
    answer: str
    correct: bool
    not_attempted: bool
    judge: Grade | None = None  # the LLM judge's grade, with --judge
    wall_s: float
    agent_calls: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    in_sources: bool | None  # None: the system retrieves nothing (closed-book)
    in_leaf: bool
    in_final: bool
    lost_in_aggregation: bool
    citations: int  # [n] markers in the final answer, References excluded
    verified_citations: int  # of those, the ones the pipeline badged verified (its own claim, not a grade)
    judged_citations: int | None = None  # distinct cited passages the eval's citation judge read (--judge)
    supported_citations: int | None = None  # of those, the ones it found to support the answer
    cites_any: bool
    error: str | None = None


def grade(
    question: EvalQuestion,
    system: str,
    model: str,
    outcome: Outcome,
    judge: Grade | None = None,
    support: tuple[int, int] | None = None,
) -> QuestionRecord:
    """Grade ``outcome`` by containment (and ``judge``, when given) and locate any loss.

    ``support``: (cited passages judged, of those supported), from the eval's citation judge."""
    parts = question.parts
    body = answer_body(outcome.answer)
    in_final = states_every_part([body], parts)
    in_leaf = states_every_part(outcome.leaves, parts)
    markers = citation_markers(body)
    verified = sum(
        1 for n in markers if 1 <= n <= len(outcome.cited) and getattr(outcome.cited[n - 1], "verified", None) is True
    )
    # Without a judge, declining is detected by a heuristic, and only for answers that are wrong.
    heuristic = not in_final and looks_not_attempted(body)
    not_attempted = judge is Grade.NOT_ATTEMPTED if judge is not None else heuristic
    retrieved = system != "closed-book"
    return QuestionRecord(
        id=question.id,
        question=question.question,
        split=question.split,
        hops=question.hops,
        system=system,
        model=model,
        answer=outcome.answer,
        correct=in_final,
        not_attempted=not_attempted,
        judge=judge,
        wall_s=round(outcome.wall_s, 3),
        agent_calls=outcome.agent_calls,
        model_calls=outcome.model_calls,
        input_tokens=outcome.input_tokens,
        output_tokens=outcome.output_tokens,
        cost_usd=outcome.cost_usd,
        in_sources=states_every_part([s.snippet for s in outcome.shown], parts) if retrieved else None,
        in_leaf=in_leaf,
        in_final=in_final,
        lost_in_aggregation=in_leaf and not in_final,
        citations=len(markers),
        verified_citations=verified,
        judged_citations=support[0] if support else None,
        supported_citations=support[1] if support else None,
        cites_any=bool(markers),
        error=outcome.error,
    )


class ResultsFile:
    """``results.jsonl`` of one system: appended one record at a time, so an interrupted eval resumes.

    Every recorded id counts as done, failures included (a failed run is the system's answer;
    re-running it could cost a timeout again). Delete a line to run that question again.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, QuestionRecord]:
        records: dict[str, QuestionRecord] = {}
        if not self.path.is_file():
            return records
        for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = QuestionRecord.model_validate(json.loads(line))
            except (json.JSONDecodeError, ValidationError):
                # A line cut by a crash mid-write: that question is simply done again.
                logger.warning("{}, line {}: unreadable result, ignored", self.path, number)
                continue
            records[record.id] = record
        return records

    def done(self) -> set[str]:
        """Ids already recorded."""
        return set(self.load())

    def append(self, record: QuestionRecord) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a+b") as handle:
            # After a crash mid-line, start a fresh line rather than extend the broken one.
            cut = False
            if handle.seek(0, 2) > 0:
                handle.seek(-1, 2)
                cut = handle.read(1) != b"\n"
            handle.write((("\n" if cut else "") + record.model_dump_json() + "\n").encode())
