"""Per-system totals over the graded records: ``summary.json`` and the Markdown table."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel

from sentient.eval.judge import Grade
from sentient.eval.records import QuestionRecord
from sentient.eval.systems import BASELINES


class SystemSummary(BaseModel):
    """One system's row. Percentages are 0-100; None where nothing was measured."""

    system: str
    n: int
    accuracy: float
    judge_accuracy: float | None  # share graded CORRECT by the LLM judge, with --judge
    not_attempted: int
    accuracy_1hop: float | None
    accuracy_2hop: float | None
    median_s: float
    mean_agent_calls: float
    mean_tokens: float
    cost_usd: float
    model_calls: int
    in_sources: float | None
    in_leaf: float
    in_final: float
    lost_in_aggregation: int
    citation_precision: float | None  # judged: supported / judged cited passages (--judge); None without a judge
    wrong_verified: int  # wrong answers that carry a citation the system badged verified
    cited: float  # answers with at least one citation
    errors: int


class Comparison(BaseModel):
    """A system against a baseline, question by question (the questions both answered).

    ``p_value``: the exact two-sided McNemar test on the questions only one of them got right.
    On a few dozen questions a difference of two or three is often chance: the small model's
    answers move that much when a prompt changes one word.
    """

    system: str
    baseline: str
    n: int
    both_right: int
    only_system: int
    only_baseline: int
    p_value: float
    only_system_ids: list[str] = []
    only_baseline_ids: list[str] = []


class EvalSummary(BaseModel):
    """``summary.json``: which eval, one row per system run so far, and each profile paired
    with each baseline."""

    dataset: str
    split: str
    model: str
    questions: int
    systems: list[SystemSummary]
    comparisons: list[Comparison] = []


def summarise(system: str, records: Sequence[QuestionRecord]) -> SystemSummary:
    """Totals of one system's records (at least one)."""
    judged = [r for r in records if r.judge is not None]
    with_sources = [r for r in records if r.in_sources is not None]
    return SystemSummary(
        system=system,
        n=len(records),
        accuracy=_percent(r.correct for r in records),
        judge_accuracy=_percent(r.judge is Grade.CORRECT for r in judged) if judged else None,
        not_attempted=sum(r.not_attempted for r in records),
        accuracy_1hop=_hops(records, 1),
        accuracy_2hop=_hops(records, 2),
        median_s=round(statistics.median(r.wall_s for r in records), 2),
        mean_agent_calls=round(statistics.fmean(r.agent_calls for r in records), 2),
        mean_tokens=round(statistics.fmean(r.input_tokens + r.output_tokens for r in records), 1),
        cost_usd=round(sum(r.cost_usd for r in records), 6),
        model_calls=sum(r.model_calls for r in records),
        in_sources=_percent(r.in_sources is True for r in with_sources) if with_sources else None,
        in_leaf=_percent(r.in_leaf for r in records),
        in_final=_percent(r.in_final for r in records),
        lost_in_aggregation=sum(r.lost_in_aggregation for r in records),
        citation_precision=_judged_precision(records),
        wrong_verified=sum(not r.correct and r.verified_citations > 0 for r in records),
        cited=_percent(r.cites_any for r in records),
        errors=sum(r.error is not None for r in records),
    )


def compare(records: Mapping[str, Sequence[QuestionRecord]]) -> list[Comparison]:
    """Every system that is not a baseline against every baseline in ``records`` (by system),
    in the order of ``records``."""
    baselines = [b for b in BASELINES if b in records]
    return [
        _paired(system, baseline, rows, records[baseline])
        for system, rows in records.items()
        if system not in BASELINES
        for baseline in baselines
    ]


def _paired(system: str, baseline: str, ours: Sequence[QuestionRecord], theirs: Sequence[QuestionRecord]) -> Comparison:
    right = {r.id: r.correct for r in theirs}
    pairs = [(r.correct, right[r.id]) for r in ours if r.id in right]
    paired = [r for r in ours if r.id in right]
    only_system = sum(a and not b for a, b in pairs)
    only_baseline = sum(b and not a for a, b in pairs)
    return Comparison(
        system=system,
        baseline=baseline,
        n=len(pairs),
        both_right=sum(a and b for a, b in pairs),
        only_system=only_system,
        only_baseline=only_baseline,
        p_value=round(mcnemar_exact(only_system, only_baseline), 3),
        only_system_ids=[r.id for r in paired if r.correct and not right[r.id]],
        only_baseline_ids=[r.id for r in paired if right[r.id] and not r.correct],
    )


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs: the chance, if
    each were equally likely to go either way, of a split at least this uneven."""
    n = b + c
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def system_order(name: str) -> tuple[int, str]:
    """Baselines first (closed-book, rag), then profiles by name."""
    return (BASELINES.index(name), name) if name in BASELINES else (len(BASELINES), name)


_COLUMNS: tuple[tuple[str, str], ...] = (
    ("system", "system"),
    ("n", "n"),
    ("accuracy", "accuracy %"),
    ("judge_accuracy", "judge %"),
    ("not_attempted", "not attempted"),
    ("accuracy_1hop", "1-hop %"),
    ("accuracy_2hop", "2-hop %"),
    ("median_s", "median s/q"),
    ("mean_agent_calls", "agent calls/q"),
    ("mean_tokens", "tokens/q"),
    ("cost_usd", "cost $"),
    ("in_sources", "in sources %"),
    ("in_leaf", "in leaf %"),
    ("in_final", "in final %"),
    ("lost_in_aggregation", "lost in aggregation"),
    ("citation_precision", "judged citation precision"),
    ("cited", "cited %"),
    ("wrong_verified", "wrong but badged verified"),
)


def markdown_table(summary: EvalSummary) -> str:
    """The summary as a Markdown table (the judge column only when some answer was judged)."""
    columns = [
        (key, title)
        for key, title in _COLUMNS
        if key != "judge_accuracy" or any(s.judge_accuracy is not None for s in summary.systems)
    ]
    lines = [
        f"Eval of `{summary.dataset}` ({summary.split} split, {summary.questions} questions, model `{summary.model}`)",
        "",
        "| " + " | ".join(title for _, title in columns) + " |",
        "|" + "|".join("---" if key == "system" else "---:" for key, _ in columns) + "|",
    ]
    for row in summary.systems:
        values = row.model_dump()
        lines.append("| " + " | ".join(_cell(key, values[key]) for key, _ in columns) + " |")
    if summary.comparisons:
        lines += [
            "",
            "Paired with each baseline, on the same questions (p: exact McNemar test, two-sided; at 0.05 or",
            "more the difference may well be chance):",
            "",
            "| system | baseline | questions | both right | only the system | only the baseline | p |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {c.system} | {c.baseline} | {c.n} | {c.both_right} | {c.only_system} | {c.only_baseline} "
            f"| {c.p_value:.3f} |"
            for c in summary.comparisons
        ]
        lines += ["", "Questions only one side got right:", ""]
        lines += [
            f"- {c.system} vs {c.baseline}: only the system {_ids(c.only_system_ids)}; "
            f"only the baseline {_ids(c.only_baseline_ids)}"
            for c in summary.comparisons
        ]
    return "\n".join(lines) + "\n"


def _cell(key: str, value: object) -> str:
    if value is None:
        return "–"
    if key == "cost_usd":
        return f"{value:.4f}"
    if isinstance(value, float):
        return f"{value:.2f}" if key in ("citation_precision", "mean_agent_calls", "median_s") else f"{value:.0f}"
    return str(value)


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(ids) if ids else "none"


def _judged_precision(records: Sequence[QuestionRecord]) -> float | None:
    """Supported / judged cited passages over ``records``; None when the judge read none."""
    judged = sum(r.judged_citations or 0 for r in records)
    supported = sum(r.supported_citations or 0 for r in records)
    return round(supported / judged, 3) if judged else None


def _percent(flags: Iterable[bool]) -> float:
    values = list(flags)
    return round(100 * sum(values) / len(values), 1) if values else 0.0


def _hops(records: Sequence[QuestionRecord], hops: int) -> float | None:
    chosen = [r.correct for r in records if r.hops == hops]
    return _percent(chosen) if chosen else None
