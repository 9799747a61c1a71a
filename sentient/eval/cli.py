"""``sentient eval``: the command-line face of the harness (parser, progress display, table).

The summary table goes to stdout; progress goes to stderr (a bar in a terminal, one line per
question otherwise). Bad input (dataset, split, system) exits with 2 through the CLI's
handling of :class:`~sentient.exceptions.SentientError`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from sentient.eval.dataset import SPLITS
from sentient.eval.harness import EvalOptions, EvalProgress, run_eval
from sentient.eval.records import QuestionRecord
from sentient.eval.reports import ReportEvalOptions, is_report_dataset, run_report_eval
from sentient.eval.systems import DEFAULT_SYSTEMS
from sentient.settings import Settings


def add_eval_parser(commands: Any) -> None:
    """Register ``sentient eval`` on the top-level subparsers."""
    command = commands.add_parser(
        "eval",
        help="measure answer quality on a question set, against closed-book and rag baselines",
        description="Run systems on a dataset of questions with accepted answers and summarise accuracy, cost "
        "and where answers were lost. Re-runs replay from the response cache; an interrupted eval continues.",
    )
    command.add_argument(
        "dataset",
        type=Path,
        help="questions: JSONL {id, question, answers}, SimpleQA or FRAMES CSV; or report goals: JSONL {id, goal, points}",
    )
    command.add_argument(
        "--system",
        action="append",
        dest="systems",
        metavar="S",
        help=f"closed-book, rag or profile:NAME; repeatable (default: {', '.join(DEFAULT_SYSTEMS)})",
    )
    command.add_argument("--model", help="model for every call, e.g. local, openai:gpt-4o-mini, scripted")
    command.add_argument("--judge", metavar="MODEL", help="also grade with an LLM judge (SimpleQA's three grades)")
    command.add_argument("--limit", type=int, metavar="N", help="only the first N questions of the split")
    command.add_argument(
        "--id",
        action="append",
        dest="ids",
        default=[],
        metavar="ID",
        help="only the question or report goal with this id; repeatable",
    )
    command.add_argument("--out", type=Path, help="output folder (default: project_results/eval/<dataset stem>)")
    command.add_argument("--concurrency", type=int, default=1, metavar="K", help="questions run at once (default 1)")
    command.add_argument("--split", choices=SPLITS, default="dev", help="which questions (default: dev)")
    command.add_argument(
        "--docs", type=Path, help="folder to research (default: X/ beside X_qa.jsonl, else Python docs)"
    )
    command.add_argument("--online", action="store_true", help="allow web tools (default: offline, reproducible)")
    command.add_argument(
        "--report-length",
        metavar="SIZE",
        help="report goals: the profiles write reports of this size (short, standard, long or N words) whatever"
        " the goal (default: the goal decides)",
    )


def run_eval_command(args: argparse.Namespace, settings: Settings) -> int:
    """Run ``sentient eval``; print the summary table; 0 when every question got an answer, else 1."""
    err = Console(stderr=True)
    options = EvalOptions(
        dataset=args.dataset,
        systems=tuple(args.systems) if args.systems else None,
        split=args.split,
        limit=args.limit,
        ids=tuple(args.ids),
        out=args.out,
        concurrency=args.concurrency,
        docs=args.docs,
        online=args.online,
        model=args.model,
        judge=args.judge,
    )
    if is_report_dataset(args.dataset):
        report_options = ReportEvalOptions(**dataclasses.asdict(options), report_length=args.report_length)
        return _run_report_eval(report_options, settings, err)
    display = ProgressBar(err) if err.is_terminal else ProgressLines(err)
    with display:
        report = asyncio.run(run_eval(options, settings, progress=display))
    sys.stdout.write(report.table)
    sys.stdout.flush()
    errors = sum(r.error is not None for r in report.new_records)
    err.print(
        f"{len(report.new_records)} new answers ({report.model_calls} model calls), {errors} errors; "
        f"results in {report.run_dir}",
        highlight=False,
        soft_wrap=True,
    )
    return 1 if errors else 0


def _run_report_eval(options: ReportEvalOptions, settings: Settings, err: Console) -> int:
    """``sentient eval`` on report goals (:mod:`sentient.eval.reports`): one plain line per report on stderr."""

    def say(line: str) -> None:
        err.print(line, highlight=False, markup=False, soft_wrap=True)

    result = asyncio.run(run_report_eval(options, settings, progress=say))
    sys.stdout.write(result.table)
    sys.stdout.flush()
    errors = sum(r.error is not None for r in result.new_records)
    say(
        f"{len(result.new_records)} new reports ({result.model_calls} model calls), {errors} errors; "
        f"results in {result.run_dir}"
    )
    return 1 if errors else 0


def _verdict(record: QuestionRecord) -> str:
    if record.error is not None:
        return "error"
    return "correct" if record.correct else "not attempted" if record.not_attempted else "wrong"


class ProgressBar(EvalProgress):
    """A rich progress bar per system, on stderr."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[correct]} correct"),
            TimeElapsedColumn(),
            console=console,
        )
        self._task: TaskID | None = None
        self._correct = 0

    def start(self, system: str, total: int, skipped: int) -> None:
        self._correct = 0
        label = f"{system}" + (f" ({skipped} done before)" if skipped else "")
        self._task = self._progress.add_task(label, total=total, correct=0)

    def advance(self, record: QuestionRecord) -> None:
        assert self._task is not None
        self._correct += record.correct
        self._progress.update(self._task, advance=1, correct=self._correct)

    def __enter__(self) -> ProgressBar:
        self._progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._progress.stop()


class ProgressLines(EvalProgress):
    """One plain line per question, for logs and pipes."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._done = 0
        self._total = 0

    def start(self, system: str, total: int, skipped: int) -> None:
        self._done, self._total = 0, total
        self._console.print(f"{system}: {total} to run, {skipped} done before", highlight=False)

    def advance(self, record: QuestionRecord) -> None:
        self._done += 1
        self._console.print(
            f"[{self._done}/{self._total}] {record.system} {record.id}: {_verdict(record)} ({record.wall_s:.1f}s)",
            highlight=False,
            markup=False,
        )

    def __enter__(self) -> ProgressLines:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass
