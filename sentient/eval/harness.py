"""The eval run: every chosen system on every chosen question, graded, saved as it goes, summarised.

Layout of the output folder (default ``project_results/eval/<dataset stem>/``)::

    <model slug>/<split>/<system slug>/results.jsonl   one graded record per question
    <model slug>/<split>/<system slug>/runs/<id>/      a profile run's report, graph and traces
    <model slug>/<split>/summary.json, summary.md      one row per system run so far

A changed model or split writes to another folder; within one, (system, id) pairs already
recorded are skipped, so an interrupted eval continues where it stopped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agno.models.base import Model
from loguru import logger

from sentient.agents.models.factory import ModelFactory
from sentient.agents.models.gates import ProviderGates
from sentient.api import open_docs_index
from sentient.eval.dataset import SPLITS, EvalQuestion, Row, load_dataset, select
from sentient.eval.grading import answer_body, citation_markers
from sentient.eval.judge import Grade, judge, judge_citation
from sentient.eval.records import QuestionRecord, ResultsFile, grade
from sentient.eval.summary import EvalSummary, compare, markdown_table, summarise, system_order
from sentient.eval.systems import DEFAULT_SYSTEMS, Baseline, EvalDeps, Outcome, ProfileSystem, System, slug
from sentient.exceptions import AgentError, EvalError, RunError
from sentient.settings import Settings
from sentient.tools.docs_search import DocsIndex

DEFAULT_PROFILE = "general_agent"  # whose SEARCH executor the baselines mirror when no profile is run


@dataclass(frozen=True)
class EvalOptions:
    """What ``sentient eval`` was asked to do.

    Attributes:
        dataset: the questions (JSONL or CSV).
        systems: systems to run; None runs closed-book, rag and profile:general_agent.
        split: ``dev``, ``heldout`` or ``all``.
        limit: only the first N questions of the split.
        ids: only the questions with these ids (an id not in the split is an error).
        out: output folder; default ``<results dir>/eval/<dataset stem>``.
        concurrency: questions run at once, per system.
        docs: folder to research; default the ``X/`` folder beside ``X_qa.jsonl``, else Python's docs.
        online: allow web tools (off by default, for reproducible numbers).
        model: model string for every call (default: the profile's models, then SENTIENT_MODEL).
        judge: model string of the LLM judge; None grades by containment only.
    """

    dataset: Path
    systems: tuple[str, ...] | None = None
    split: str = "dev"
    limit: int | None = None
    ids: tuple[str, ...] = ()
    out: Path | None = None
    concurrency: int = 1
    docs: Path | None = None
    online: bool = False
    model: str | None = None
    judge: str | None = None


def chosen(options: EvalOptions, load: Callable[[Path], list[Row]], noun: str) -> list[Row]:
    """The rows of ``options.dataset`` (read by ``load``) that it asks for: its split, then its
    ids, then its limit (:func:`~sentient.eval.dataset.select`).

    Raises:
        EvalError: an unknown split, a bad ``--concurrency`` or ``--limit``, a bad dataset, an id
            the split lacks, or no ``noun`` in the split.
    """
    if options.split not in SPLITS:
        raise EvalError(f"unknown split {options.split!r}: use {', '.join(SPLITS)}")
    if options.concurrency < 1 or (options.limit is not None and options.limit < 0):
        raise EvalError("--concurrency must be at least 1 and --limit at least 0")
    rows = select(load(options.dataset), options.split, options.limit, options.ids)
    if not rows and options.limit != 0:
        raise EvalError(f"no {noun} in the {options.split} split", file=str(options.dataset))
    return rows


def resolved(options: EvalOptions, settings: Settings, model: Model | None) -> tuple[Settings, str, Path]:
    """What an eval runs with: the settings (offline unless ``--online``), the model's name, and
    the folder its results go to (by model and split)."""
    settings = settings.model_copy(update={"offline": settings.offline or not options.online})
    model_name = options.model or (f"{model.provider}:{model.id}" if model is not None else settings.model)
    run_dir = (options.out or settings.results_dir / "eval" / options.dataset.stem) / slug(model_name) / options.split
    return settings, model_name, run_dir


@dataclass
class EvalReport:
    """What one invocation did: the summary, where it is, and the records it added."""

    summary: EvalSummary
    run_dir: Path
    table: str  # the summary as Markdown
    new_records: list[QuestionRecord] = field(default_factory=list)

    @property
    def model_calls(self) -> int:
        return sum(r.model_calls for r in self.new_records)


class EvalProgress:
    """Told about each system's start and each finished question (the CLI draws a progress bar)."""

    def start(self, system: str, total: int, skipped: int) -> None:
        """``total`` questions to run for ``system``; ``skipped`` were already recorded."""

    def advance(self, record: QuestionRecord) -> None:
        """One question of the current system is done."""


def default_docs(dataset: Path) -> Path | None:
    """The ``X/`` folder beside ``X_qa.jsonl``, ``X_heldout_qa.jsonl`` (or ``X.jsonl``), when there is one."""
    stem = dataset.stem.removesuffix("_qa").removesuffix("_heldout")
    folder = dataset.parent / stem
    return folder if folder.is_dir() else None


async def run_eval(
    options: EvalOptions,
    settings: Settings,
    *,
    model: Model | None = None,
    judge_model: Model | None = None,
    progress: EvalProgress | None = None,
) -> EvalReport:
    """Run the eval described by ``options`` and write its results and summary.

    ``model`` / ``judge_model`` replace the model strings with agno model instances (tests).

    Raises:
        EvalError: a bad dataset, split, system or option.
        ConfigError: a model that cannot be used (bad string, missing key).
    """
    questions = chosen(options, load_dataset, "questions")
    systems = list(dict.fromkeys(System.parse(s) for s in options.systems or DEFAULT_SYSTEMS))
    settings, model_name, run_dir = resolved(options, settings, model)
    docs = await _docs_index(options, settings) if any(s.kind != "closed-book" for s in systems) else None
    deps = EvalDeps(
        settings, docs, run_dir, model=model, model_string=options.model, gates=ProviderGates.from_settings(settings)
    )
    grader = _Grader(deps, options.judge, judge_model)
    progress = progress or EvalProgress()
    added: list[QuestionRecord] = []
    try:
        for system in systems:
            added += await _run_system(system, questions, deps, model_name, grader, options.concurrency, progress)
    finally:
        grader.close()
        if docs is not None:
            docs.close()
    summary = _summary(options, model_name, run_dir, questions)
    report = EvalReport(summary, run_dir, markdown_table(summary), added)
    _write(run_dir, report)
    return report


async def _run_system(
    system: System,
    questions: list[EvalQuestion],
    deps: EvalDeps,
    model_name: str,
    grader: _Grader,
    concurrency: int,
    progress: EvalProgress,
) -> list[QuestionRecord]:
    folder = deps.run_dir / system.slug
    results = ResultsFile(folder / "results.jsonl")
    done = results.done()
    pending = [q for q in questions if q.id not in done]
    progress.start(system.name, len(pending), len(questions) - len(pending))
    if not pending:
        return []
    answer = _answerer(system, deps, folder)
    slots = asyncio.Semaphore(concurrency)
    added: list[QuestionRecord] = []

    async def one(question: EvalQuestion) -> None:
        async with slots:
            outcome = await answer(question)
            label = await grader.grade(question, outcome)
            support = await grader.citations(question, outcome)
            record = grade(question, system.name, model_name, outcome, label, support)
            results.append(record)
            added.append(record)
            progress.advance(record)

    try:
        async with asyncio.TaskGroup() as group:
            for question in pending:
                group.create_task(one(question))
    finally:
        answer.close()
    return added


def _answerer(system: System, deps: EvalDeps, folder: Path) -> _SystemAnswerer:
    profile_name = system.profile or DEFAULT_PROFILE
    if system.kind == "profile":
        return _SystemAnswerer(profile=ProfileSystem(deps, profile_name, folder / "runs"))
    return _SystemAnswerer(baseline=Baseline(deps, deps.profile(profile_name), retrieve=system.kind == "rag"))


class _SystemAnswerer:
    """One system behind one call: question in, outcome out (run failures become the outcome's error)."""

    def __init__(self, *, baseline: Baseline | None = None, profile: ProfileSystem | None = None) -> None:
        self._baseline = baseline
        self._profile = profile

    async def __call__(self, question: EvalQuestion) -> Outcome:
        if self._baseline is not None:
            return await self._baseline.answer(question.question)
        assert self._profile is not None
        try:
            return await self._profile.answer(question.question, question.id)
        except (AgentError, RunError) as exc:
            return Outcome(error=str(exc))

    def close(self) -> None:
        if self._baseline is not None:
            self._baseline.close()


class _Grader:
    """The optional LLM judge (``--judge``), behind the same response cache as the systems."""

    def __init__(self, deps: EvalDeps, model_string: str | None, model: Model | None) -> None:
        self._factory: ModelFactory | None = None
        self._timeout_s = deps.timeout_s
        if model_string is None and model is None:
            return
        profile = deps.profile(DEFAULT_PROFILE)
        self._factory = ModelFactory(deps.settings, profile, override=model, model=model_string, gates=deps.gates)
        self._factory.check()
        self._agent = profile.aggregator_for(True)  # any agent: --judge names the model for all

    async def grade(self, question: EvalQuestion, outcome: Outcome) -> Grade | None:
        if self._factory is None or outcome.error is not None:
            return None
        handle = self._factory.for_agent(self._agent)
        try:
            label, _ = await judge(handle, question.question, question.parts, outcome.answer, timeout_s=self._timeout_s)
        except AgentError as exc:
            logger.warning("judge failed on {}: {}", question.id, exc)
            return None
        return label

    async def citations(self, question: EvalQuestion, outcome: Outcome) -> tuple[int, int] | None:
        """(cited passages judged, of those supported) for the answer's distinct citations; None
        without a judge. A passage the judge gives no verdict on counts as not supported."""
        if self._factory is None or outcome.error is not None:
            return None
        handle = self._factory.for_agent(self._agent)
        numbers = dict.fromkeys(citation_markers(answer_body(outcome.answer)))
        cited = [outcome.cited[n - 1] for n in numbers if 1 <= n <= len(outcome.cited)]
        supported = 0
        for source in cited:
            try:
                verdict = await judge_citation(
                    handle, question.question, outcome.answer, source.title, source.snippet, timeout_s=self._timeout_s
                )
            except AgentError as exc:
                logger.warning("citation judge failed on {}: {}", question.id, exc)
                verdict = None
            supported += verdict is True
        return len(cited), supported

    def close(self) -> None:
        if self._factory is not None:
            self._factory.close()


async def _docs_index(options: EvalOptions, settings: Settings) -> DocsIndex:
    folder = options.docs or default_docs(options.dataset)
    if folder is not None:
        logger.info("eval: researching {}", folder)
    return await asyncio.to_thread(open_docs_index, folder, settings)


def _summary(options: EvalOptions, model_name: str, run_dir: Path, questions: list[EvalQuestion]) -> EvalSummary:
    """Every system recorded in ``run_dir``, over the chosen questions only (a fair comparison)."""
    ids = {q.id for q in questions}
    by_system: dict[str, list[QuestionRecord]] = {}
    for path in sorted(run_dir.glob("*/results.jsonl")):
        records = [r for i, r in ResultsFile(path).load().items() if i in ids]
        if records:
            by_system[records[0].system] = records
    by_system = dict(sorted(by_system.items(), key=lambda item: system_order(item[0])))
    return EvalSummary(
        dataset=str(options.dataset),
        split=options.split,
        model=model_name,
        questions=len(questions),
        systems=[summarise(system, records) for system, records in by_system.items()],
        comparisons=compare(by_system),
    )


def _write(run_dir: Path, report: EvalReport) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "summary.json").write_text(report.summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (run_dir / "summary.md").write_text(report.table, encoding="utf-8")
