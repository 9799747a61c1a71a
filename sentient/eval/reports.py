"""The report eval: systems write a report for each goal, graded by the key points it states.

A report dataset is JSONL, one goal a line::

    {"id": "r-01", "goal": "Write a report on ...", "points": [{"id": "date", "any": ["3 May", "May 3"]}],
     "distractors": ["an old value"], "docs": ["where.md", ...], "split": "dev"}

A point is stated when one of its accepted strings occurs in the report's body (References cut),
as whole normalised words (:func:`~sentient.eval.grading.contains_answer`). A distractor (a
superseded value, a look-alike) is counted when it occurs in the body at all; with ``--judge``,
the judge also reads the sentences that mention it and says whether the report gives it as what
holds now or only as history ("raised from 300 to 600" is history). A missed point is
located: not in any passage the system was shown (not retrieved), in a passage but in no step it
wrote (retrieved but not written), or in a written step but not in the report (dropped in
assembly). A file whose name ends in ``_heldout`` is all held out.

Systems: ``rag`` (one search for the goal, the top passages, one call that writes the report)
and ``profile:NAME`` (the agent; ``report_length`` forces report mode, else the goal decides).
With ``--judge``, each distinct cited passage is read by the eval's own citation judge against
the sentences that cite it (the pipeline's verifier never grades itself).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agno.models.base import Model
from loguru import logger
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sentient.agents.models.factory import ModelFactory
from sentient.agents.models.gates import ProviderGates
from sentient.api import ProfiledSentientAgent, open_docs_index
from sentient.context import wording
from sentient.context.citations import CITATION, cited_numbers
from sentient.context.grounding import strip_markers
from sentient.eval.chat import chat
from sentient.eval.dataset import Split
from sentient.eval.grading import answer_body, citation_markers, contains_answer
from sentient.eval.harness import DEFAULT_PROFILE, EvalOptions, chosen, resolved
from sentient.eval.judge import judge_citation, judge_current
from sentient.eval.report_summary import ReportSummary, report_table, summarise_reports
from sentient.eval.systems import Baseline, EvalDeps, Outcome, System, slug
from sentient.exceptions import AgentError, EvalError, RunError
from sentient.graph.node import NodeType, Source
from sentient.graph.task_graph import TaskGraph
from sentient.settings import EngineSettings, Settings

RAG_REPORT_PASSAGES = 5  # the rag baseline's top k: as many as one search gives an executor
DEFAULT_REPORT_SYSTEMS: tuple[str, ...] = ("rag", f"profile:{DEFAULT_PROFILE}")
RAG_REPORT_SYSTEM = (
    "Write a report that covers the goal from these numbered passages: a title, a short summary, then "
    "sections with headings. Cite the passages you use as [n]. Use only what the passages say."
)


class Point(BaseModel):
    """A key point a good report states: any one of its accepted strings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    any: list[str] = Field(min_length=1)
    doc: str | None = None  # where it is written (for the dataset checks)
    # The item of a "for each" goal the point is about: stated elsewhere than under a heading or
    # in a sentence that names the item, it is counted as stated under another item.
    item: str | None = Field(None, min_length=1)

    @field_validator("any")
    @classmethod
    def _no_blank(cls, accepted: list[str]) -> list[str]:
        if any(not a.strip() for a in accepted):
            raise ValueError("an accepted string is blank")
        return accepted


class ReportGoal(BaseModel):
    """One goal of a report dataset."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    goal: str = Field(min_length=1)
    points: list[Point] = Field(min_length=1)
    distractors: list[str] = Field(default_factory=list)
    docs: list[str] = Field(default_factory=list)  # the documents the points come from
    split: Split = "dev"


def is_report_dataset(path: Path) -> bool:
    """Whether ``path`` holds report goals (its first row has ``goal`` and ``points``)."""
    try:
        with path.open(encoding="utf-8") as handle:
            first = next((line for line in handle if line.strip()), "")
        row = json.loads(first)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(row, dict) and "goal" in row and "points" in row


def load_report_goals(path: Path) -> list[ReportGoal]:
    """Every goal of ``path``; a file named ``*_heldout.jsonl`` is all held out.

    Raises:
        EvalError: naming the file and the line: a missing or unreadable file, a line that is not
            a goal, two goals (or two points of one goal) with one id.
    """
    if not path.is_file():
        raise EvalError("dataset file does not exist", file=str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalError(f"cannot read the dataset: {exc}", file=str(path)) from None
    split = "heldout" if path.stem.endswith("_heldout") else "dev"
    goals: list[ReportGoal] = []
    lines: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
            goal = ReportGoal.model_validate({"split": split, **row} if isinstance(row, dict) else row)
        except json.JSONDecodeError as exc:
            raise EvalError(f"not valid JSON ({exc.msg})", file=str(path), line=number) from None
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"]) or "(line)"
            raise EvalError(f"{where}: {error['msg']}", file=str(path), line=number) from None
        if goal.id in lines:
            raise EvalError(f"duplicate id {goal.id!r} (first on line {lines[goal.id]})", file=str(path), line=number)
        if len({p.id for p in goal.points}) < len(goal.points):
            raise EvalError(f"goal {goal.id!r} has two points with one id", file=str(path), line=number)
        lines[goal.id] = number
        goals.append(goal)
    if not goals:
        raise EvalError("the dataset has no goals", file=str(path))
    return goals


class ReportRecord(BaseModel):
    """One system's report for one goal, graded (a line of ``results.jsonl``)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    goal: str
    split: str
    system: str
    model: str
    report: str
    points: int
    stated: list[str]  # ids of the points the body states
    under_another_item: list[str] = Field(default_factory=list)  # of those, stated only away from their item
    items: list[str] = Field(default_factory=list)  # the items the goal's points are about
    items_headed: list[str] = Field(default_factory=list)  # of those, the ones a heading of the body names
    distractors: list[str]  # distractors the body states
    current_distractors: list[str] | None = None  # of those, the ones the judge read as given as current
    not_retrieved: list[str]  # missed points in no passage shown
    not_written: list[str]  # missed points in a passage, in no written step
    dropped: list[str]  # missed points in a written step, not in the report
    words: int
    sections: int  # "## " headings of the body
    citations: int  # distinct [n] of the body
    judged_citations: int | None = None
    supported_citations: int | None = None
    wall_s: float
    agent_calls: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    error: str | None = None

    @property
    def recall(self) -> float:
        return len(self.stated) / self.points if self.points else 0.0


def grade_report(
    goal: ReportGoal, system: str, model: str, outcome: Outcome, support: tuple[int, int] | None = None
) -> ReportRecord:
    """Which points ``outcome``'s report states, which distractors, and where each missed point was lost."""
    body = answer_body(outcome.answer)
    shown = [s.snippet for s in outcome.shown]
    stated: list[str] = []
    lost: dict[str, list[str]] = {"not_retrieved": [], "not_written": [], "dropped": []}
    for point in goal.points:
        if contains_answer(body, point.any):
            stated.append(point.id)
        elif any(contains_answer(text, point.any) for text in outcome.leaves):
            lost["dropped"].append(point.id)
        elif any(contains_answer(text, point.any) for text in shown):
            lost["not_written"].append(point.id)
        else:
            lost["not_retrieved"].append(point.id)
    # A "for each" report gives each item a heading: the items a heading names were found.
    items = list(dict.fromkeys(p.item for p in goal.points if p.item))
    headings = [line for line in body.splitlines() if line.startswith("#")]
    return ReportRecord(
        id=goal.id,
        goal=goal.goal,
        split=goal.split,
        system=system,
        model=model,
        report=outcome.answer,
        points=len(goal.points),
        stated=stated,
        under_another_item=[
            p.id for p in goal.points if p.id in stated and p.item and not _under_item(body, p.any, p.item)
        ],
        items=items,
        items_headed=[item for item in items if any(contains_answer(h, [item]) for h in headings)],
        distractors=[d for d in goal.distractors if contains_answer(body, [d])],
        **lost,
        words=len(body.split()),
        sections=sum(1 for line in body.splitlines() if line.startswith("## ")),
        citations=len(set(citation_markers(body))),
        judged_citations=support[0] if support else None,
        supported_citations=support[1] if support else None,
        wall_s=round(outcome.wall_s, 3),
        agent_calls=outcome.agent_calls,
        model_calls=outcome.model_calls,
        input_tokens=outcome.input_tokens,
        output_tokens=outcome.output_tokens,
        error=outcome.error,
    )


class RagReport(Baseline):
    """``rag`` for reports: one search for the goal (the top passages) and one call that writes the report."""

    async def write(self, goal: str) -> Outcome:
        started = time.perf_counter()
        outcome = Outcome(agent_calls=1)
        handle = self._factory.for_agent(self._executor)
        try:
            found = await self._tools.retrieve(goal, RAG_REPORT_PASSAGES)
            outcome.shown = outcome.cited = found.sources
            prompt = _passages_prompt(goal, found.sources)
            reply = await chat(
                handle, RAG_REPORT_SYSTEM, prompt, role="rag-report", goal=goal, timeout_s=self._deps.timeout_s
            )
        except AgentError as exc:
            outcome.error = str(exc)
        else:
            outcome.answer = reply.text.strip()
            outcome.leaves = [outcome.answer]
            outcome.model_calls = reply.model_calls
            outcome.input_tokens, outcome.output_tokens = reply.input_tokens, reply.output_tokens
        outcome.wall_s = time.perf_counter() - started
        return outcome


class ProfileReport:
    """``profile:NAME`` writing a report: one run per goal, its files under ``runs/<id>/``."""

    def __init__(self, deps: EvalDeps, name: str, out_dir: Path, report_length: str | int | None) -> None:
        deps.profile(name)  # an unknown profile fails here, with the list of valid ones
        self._out_dir = out_dir
        overrides: dict[str, Any] = {"report_length": report_length} if report_length is not None else {}
        self._agent = ProfiledSentientAgent.create_with_profile(
            name,
            settings=deps.settings,
            model=deps.model or deps.model_string,
            docs=deps.docs,
            gates=deps.gates,
            **overrides,
        )

    async def write(self, goal: str, goal_id: str) -> Outcome:
        started = time.perf_counter()
        project_id = f"eval-{slug(goal_id)}"[:120]
        try:
            result = await self._agent.arun(goal, project_id=project_id, output_dir=self._out_dir / project_id)
        except (AgentError, RunError) as exc:
            return Outcome(error=str(exc), wall_s=time.perf_counter() - started)
        stats = result.stats
        return Outcome(
            answer=result.final_answer or "",
            shown=[s for node in result.graph for s in node.sources],
            cited=list(result.graph.root.sources),
            leaves=_written(result.graph),
            agent_calls=stats.agent_calls,
            model_calls=stats.model_calls,
            input_tokens=stats.input_tokens,
            output_tokens=stats.output_tokens,
            cost_usd=stats.cost_usd,
            wall_s=time.perf_counter() - started,
            error=result.error,
        )


@dataclass(frozen=True)
class ReportEvalOptions(EvalOptions):
    """What ``sentient eval`` was asked to do with a report dataset: those of
    :class:`~sentient.eval.harness.EvalOptions`, and ``report_length``, which forces the profiles'
    report mode and size."""

    report_length: str | int | None = None


@dataclass
class ReportEvalResult:
    summary: ReportSummary
    run_dir: Path
    table: str
    new_records: list[ReportRecord]

    @property
    def model_calls(self) -> int:
        return sum(r.model_calls for r in self.new_records)


Progress = Callable[[str], None]


async def run_report_eval(
    options: ReportEvalOptions,
    settings: Settings,
    *,
    model: Model | None = None,
    judge_model: Model | None = None,
    progress: Progress | None = None,
) -> ReportEvalResult:
    """Write a report with each system for each goal of the split, grade it, save and summarise.

    Raises:
        EvalError: a bad dataset, split, system or option.
    """
    if options.report_length is not None:
        try:
            EngineSettings(report_length=options.report_length)
        except ValidationError as exc:
            raise EvalError(f"--report-length: {exc.errors()[0]['msg']}") from None
    goals = chosen(options, load_report_goals, "goals")
    systems = list(dict.fromkeys(System.parse(s) for s in options.systems or DEFAULT_REPORT_SYSTEMS))
    if any(s.kind == "closed-book" for s in systems):
        raise EvalError("closed-book writes no report from sources: use rag or profile:NAME")
    settings, model_name, run_dir = resolved(options, settings, model)
    folder = options.docs or default_report_docs(options.dataset)
    if folder is not None:
        logger.info("eval: researching {}", folder)
    docs = await asyncio.to_thread(open_docs_index, folder, settings)
    deps = EvalDeps(
        settings, docs, run_dir, model=model, model_string=options.model, gates=ProviderGates.from_settings(settings)
    )
    judge = _ReportJudge(deps, options.judge, judge_model)
    say = progress or (lambda line: None)
    added: list[ReportRecord] = []
    try:
        for system in systems:
            added += await _run_system(system, goals, deps, model_name, judge, options, say)
    finally:
        judge.close()
        docs.close()
    ids = {g.id for g in goals}
    by_system = {}
    for path in sorted(run_dir.glob("*/results.jsonl")):
        records = [r for i, r in _load(path).items() if i in ids]
        if records:
            by_system[records[0].system] = records
    summary = summarise_reports(str(options.dataset), options.split, model_name, len(goals), by_system)
    table = report_table(summary)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (run_dir / "summary.md").write_text(table, encoding="utf-8")
    return ReportEvalResult(summary, run_dir, table, added)


def default_report_docs(dataset: Path) -> Path | None:
    """The ``X/`` folder beside ``X_reports.jsonl`` or ``X_reports_heldout.jsonl``, when there is one."""
    stem = dataset.stem.removesuffix("_heldout").removesuffix("_reports")
    folder = dataset.parent / stem
    return folder if folder.is_dir() else None


async def _run_system(
    system: System,
    goals: list[ReportGoal],
    deps: EvalDeps,
    model_name: str,
    judge: _ReportJudge,
    options: ReportEvalOptions,
    say: Progress,
) -> list[ReportRecord]:
    folder = deps.run_dir / system.slug
    results = folder / "results.jsonl"
    done = set(_load(results))
    pending = [g for g in goals if g.id not in done]
    say(f"{system.name}: {len(pending)} to run, {len(goals) - len(pending)} done before")
    if not pending:
        return []
    if system.kind == "profile":
        profile = ProfileReport(deps, system.profile or DEFAULT_PROFILE, folder / "runs", options.report_length)
        rag = None
    else:
        rag = RagReport(deps, deps.profile(DEFAULT_PROFILE), retrieve=True)
    slots = asyncio.Semaphore(options.concurrency)
    added: list[ReportRecord] = []

    async def one(goal: ReportGoal) -> None:
        async with slots:
            outcome = await rag.write(goal.goal) if rag is not None else await profile.write(goal.goal, goal.id)
            support = await judge.citations(goal, outcome)
            record = grade_report(goal, system.name, model_name, outcome, support)
            record.current_distractors = await judge.current(goal, record)
            _append(results, record)
            added.append(record)
            say(
                f"[{len(added)}/{len(pending)}] {system.name} {goal.id}: {len(record.stated)}/{record.points} points,"
                f" {record.words} words, {record.sections} sections ({record.wall_s:.1f}s)"
            )

    try:
        async with asyncio.TaskGroup() as group:
            for goal in pending:
                group.create_task(one(goal))
    finally:
        if rag is not None:
            rag.close()
    return added


class _ReportJudge:
    """The eval's judge (``--judge``): each distinct cited passage against the sentences citing it,
    and each distractor a report mentions against the sentences that mention it."""

    def __init__(self, deps: EvalDeps, model_string: str | None, model: Model | None) -> None:
        self._factory: ModelFactory | None = None
        self._timeout_s = deps.timeout_s
        if model_string is None and model is None:
            return
        profile = deps.profile(DEFAULT_PROFILE)
        self._factory = ModelFactory(deps.settings, profile, override=model, model=model_string, gates=deps.gates)
        self._factory.check()
        self._agent = profile.aggregator_for(True)  # any agent: --judge names the model for all

    async def citations(self, goal: ReportGoal, outcome: Outcome) -> tuple[int, int] | None:
        if self._factory is None or not outcome.answer:  # a report with a failed part is judged too
            return None
        handle = self._factory.for_agent(self._agent)
        cited = _citing(answer_body(outcome.answer), len(outcome.cited))
        supported = 0
        for n, sentences in cited.items():
            source = outcome.cited[n - 1]
            try:
                verdict = await judge_citation(
                    handle, goal.goal, sentences, source.title, source.snippet, timeout_s=self._timeout_s
                )
            except AgentError as exc:
                logger.warning("citation judge failed on {}: {}", goal.id, exc)
                verdict = None
            supported += verdict is True
        return len(cited), supported

    async def current(self, goal: ReportGoal, record: ReportRecord) -> list[str] | None:
        """The distractors ``record``'s report gives as what holds now, not as history; None
        without a judge. One the judge gives no verdict on counts as current."""
        if self._factory is None or not record.report:
            return None
        handle = self._factory.for_agent(self._agent)
        body = wording.sentences(answer_body(record.report))
        current: list[str] = []
        for value in record.distractors:
            try:
                verdict = await judge_current(
                    handle, goal.goal, value, [s for s in body if wording.holds(s, value)], timeout_s=self._timeout_s
                )
            except AgentError as exc:
                logger.warning("distractor judge failed on {}: {}", goal.id, exc)
                verdict = None
            if verdict is not False:
                current.append(value)
        return current

    def close(self) -> None:
        if self._factory is not None:
            self._factory.close()


_LEADING_MARKERS = re.compile(rf"^(?:{CITATION.pattern}\s*)+")


def _citing(report: str, count: int) -> dict[int, str]:
    """For each source number (1..``count``) that ``report`` cites, the sentences that cite it,
    without markers, each after the heading it stands under: what the judge reads that source
    against ("IR-7: SEV-2"; a sentence under an item's heading is about that item)."""
    said: list[tuple[str, list[int]]] = []  # each sentence, and the numbers that cite it
    for heading, sentence in _headed_sentences(report):
        lead = _LEADING_MARKERS.match(sentence)
        if lead and said:  # "… pays €95. [3] Next …": [3] cites the sentence before it
            said[-1][1].extend(cited_numbers(lead.group()))
            sentence = sentence[lead.end() :]
        if body := strip_markers(sentence):
            said.append((f"{heading}: {body}" if heading else body, list(cited_numbers(sentence))))
    cited: dict[int, list[str]] = {}
    for sentence, numbers in said:
        for n in dict.fromkeys(numbers):
            if 1 <= n <= count:
                cited.setdefault(n, []).append(sentence)
    return {n: " ".join(lines) for n, lines in cited.items()}


def _under_item(body: str, accepted: list[str], item: str) -> bool:
    """Whether ``body`` states one of the ``accepted`` strings of a point in a sentence that names
    its ``item``, or under a heading that does (a sentence under an item's heading is about that
    item)."""
    return any(
        contains_answer(sentence, accepted) and contains_answer(f"{heading}\n{sentence}", [item])
        for heading, sentence in _headed_sentences(body)
    )


def _headed_sentences(text: str) -> Iterator[tuple[str, str]]:
    """Each sentence of ``text``'s paragraphs, with the heading it stands under ("" above the first)."""
    heading = ""
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            continue
        for sentence in wording.sentences(line):
            yield heading, sentence


def _passages_prompt(goal: str, sources: list[Source]) -> str:
    blocks = [f"[{n}] {s.title} — {s.ref}\n{s.snippet}" for n, s in enumerate(sources, start=1)]
    passages = "\n\n".join(blocks) if blocks else "(no passages were found)"
    return f"## Passages\n{passages}\n\n## Goal\n{goal}"


def _written(graph: TaskGraph) -> list[str]:
    """What the run's steps wrote: every executed step's result but a search that only retrieved
    (a report's section searches make no model call)."""
    return [n.result for n in graph if n.node_type is NodeType.EXECUTE and n.result and n.agent_calls]


def _load(path: Path) -> dict[str, ReportRecord]:
    records: dict[str, ReportRecord] = {}
    if not path.is_file():
        return records
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = ReportRecord.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValidationError):
            logger.warning("{}, line {}: unreadable result, ignored", path, number)
            continue
        records[record.id] = record
    return records


def _append(path: Path, record: ReportRecord) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(record.model_dump_json() + "\n")
