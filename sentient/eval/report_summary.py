"""Per-system totals of the report eval: ``summary.json`` and the Markdown table."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from sentient.eval.systems import BASELINES

if TYPE_CHECKING:
    from sentient.eval.reports import ReportRecord


class ReportSystemSummary(BaseModel):
    """One system's row. Percentages are 0-100; None where nothing was measured."""

    system: str
    n: int
    recall: float  # points stated / points, over every goal
    stated: int
    under_another_item: int  # stated points of an item, only away from it (points that give one)
    points: int
    items: int  # the items of the goals that ask about each of several (points that give one)
    items_headed: int  # of those, the ones a heading of the report names
    retrieved: float  # points in some passage shown (stated ones included)
    distractors: int  # distractors stated, over every goal
    current_distractors: int | None  # of those, given as current by the judge's reading (--judge)
    median_words: float
    median_sections: float
    median_citations: float  # distinct citations of a report
    citation_precision: float | None  # judged: supported / judged cited passages (--judge)
    not_retrieved: int  # missed points in no passage shown
    not_written: int  # missed points in a passage, in no written step
    dropped: int  # missed points in a written step, not in the report
    median_s: float
    mean_agent_calls: float
    model_calls: int
    errors: int


class ReportComparison(BaseModel):
    """A system against a baseline, goal by goal: points stated by each."""

    system: str
    baseline: str
    goals: int
    recall_system: float
    recall_baseline: float
    better: list[str]  # goals where the system stated more points
    worse: list[str]


class ReportSummary(BaseModel):
    dataset: str
    split: str
    model: str
    goals: int
    systems: list[ReportSystemSummary]
    comparisons: list[ReportComparison] = []


def summarise_reports(
    dataset: str, split: str, model: str, goals: int, by_system: Mapping[str, Sequence[ReportRecord]]
) -> ReportSummary:
    """The summary of every system's records (baselines first) and each system against ``rag``."""
    order = sorted(by_system, key=lambda s: (s not in BASELINES, s))
    rows = [_summarise(name, by_system[name]) for name in order]
    comparisons = [
        _compare(name, baseline, by_system[name], by_system[baseline])
        for name in order
        if name not in BASELINES
        for baseline in BASELINES
        if baseline in by_system
    ]
    return ReportSummary(dataset=dataset, split=split, model=model, goals=goals, systems=rows, comparisons=comparisons)


def _summarise(system: str, records: Sequence[ReportRecord]) -> ReportSystemSummary:
    points = sum(r.points for r in records)
    stated = sum(len(r.stated) for r in records)
    missed_in_sources = sum(len(r.not_written) + len(r.dropped) for r in records)
    judged = sum(r.judged_citations or 0 for r in records)
    current = [r.current_distractors for r in records if r.current_distractors is not None]  # judged records
    return ReportSystemSummary(
        system=system,
        n=len(records),
        recall=_percent(stated, points),
        stated=stated,
        under_another_item=sum(len(r.under_another_item) for r in records),
        points=points,
        items=sum(len(r.items) for r in records),
        items_headed=sum(len(r.items_headed) for r in records),
        retrieved=_percent(stated + missed_in_sources, points),
        distractors=sum(len(r.distractors) for r in records),
        current_distractors=sum(map(len, current)) if current else None,
        median_words=statistics.median(r.words for r in records),
        median_sections=statistics.median(r.sections for r in records),
        median_citations=statistics.median(r.citations for r in records),
        citation_precision=round(sum(r.supported_citations or 0 for r in records) / judged, 3) if judged else None,
        not_retrieved=sum(len(r.not_retrieved) for r in records),
        not_written=sum(len(r.not_written) for r in records),
        dropped=sum(len(r.dropped) for r in records),
        median_s=round(statistics.median(r.wall_s for r in records), 1),
        mean_agent_calls=round(statistics.fmean(r.agent_calls for r in records), 1),
        model_calls=sum(r.model_calls for r in records),
        errors=sum(r.error is not None for r in records),
    )


def _compare(
    system: str, baseline: str, ours: Sequence[ReportRecord], theirs: Sequence[ReportRecord]
) -> ReportComparison:
    base = {r.id: r for r in theirs}
    paired = [r for r in ours if r.id in base]
    return ReportComparison(
        system=system,
        baseline=baseline,
        goals=len(paired),
        recall_system=_percent(sum(len(r.stated) for r in paired), sum(r.points for r in paired)),
        recall_baseline=_percent(sum(len(base[r.id].stated) for r in paired), sum(r.points for r in paired)),
        better=[r.id for r in paired if len(r.stated) > len(base[r.id].stated)],
        worse=[r.id for r in paired if len(r.stated) < len(base[r.id].stated)],
    )


_COLUMNS: tuple[tuple[str, str], ...] = (
    ("system", "system"),
    ("n", "goals"),
    ("recall", "key-point recall %"),
    ("under_another_item", "stated under another item"),
    ("items_headed", "items with a heading"),
    ("retrieved", "in passages %"),
    ("distractors", "distractors stated"),
    ("current_distractors", "of those as current (judged)"),
    ("median_words", "median words"),
    ("median_sections", "median sections"),
    ("median_citations", "median citations"),
    ("citation_precision", "judged citation precision"),
    ("not_retrieved", "missed: not retrieved"),
    ("not_written", "missed: not written"),
    ("dropped", "missed: dropped in assembly"),
    ("median_s", "median s/report"),
    ("mean_agent_calls", "agent calls/report"),
    ("model_calls", "model calls"),
    ("errors", "errors"),
)


def report_table(summary: ReportSummary) -> str:
    """The summary as Markdown: one row per system, then each system against the baseline."""
    lines = [
        f"Report eval of `{summary.dataset}` ({summary.split} split, {summary.goals} goals, model `{summary.model}`)",
        "",
        "| " + " | ".join(title for _, title in _COLUMNS) + " |",
        "|" + "|".join("---" if key == "system" else "---:" for key, _ in _COLUMNS) + "|",
    ]
    for row in summary.systems:
        values = row.model_dump()
        values["items_headed"] = f"{row.items_headed} / {row.items}" if row.items else None
        lines.append("| " + " | ".join(_cell(key, values[key]) for key, _ in _COLUMNS) + " |")
    if summary.comparisons:
        lines += ["", "| system | baseline | goals | recall % | baseline recall % | more points | fewer points |"]
        lines.append("|---|---|---:|---:|---:|---|---|")
        lines += [
            f"| {c.system} | {c.baseline} | {c.goals} | {c.recall_system:.0f} | {c.recall_baseline:.0f} "
            f"| {', '.join(c.better) or 'none'} | {', '.join(c.worse) or 'none'} |"
            for c in summary.comparisons
        ]
    return "\n".join(lines) + "\n"


def _cell(key: str, value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}" if key == "citation_precision" else f"{value:.1f}".removesuffix(".0")
    return str(value)


def _percent(part: int, whole: int) -> float:
    return round(100 * part / whole, 1) if whole else 0.0
