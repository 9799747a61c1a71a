"""One execution of a project's graph (a new run or a resumed one), and what it produces."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from loguru import logger

from sentient.agents.processor import AgentProcessor
from sentient.agents.runner import AgentRunner
from sentient.budget import Budget, Spent
from sentient.context.builder import ContextBuilder
from sentient.context.knowledge import KnowledgeStore
from sentient.context.prior import PriorKnowledge
from sentient.engine.resume import prepare_rerun, prepare_resume
from sentient.engine.scheduler import ExecutionEngine
from sentient.events import EventBus, RunFinished, RunStarted, Subscriber, snapshot
from sentient.exceptions import AgentError, ConfigError, InvalidGoalError
from sentient.graph.node import NodeType, TaskType
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.projects.errors import ProjectCompletedError
from sentient.projects.followups import create_followup, prior_knowledge
from sentient.projects.ids import new_project_id
from sentient.projects.rerun import Rerun, applied, instructions_of, pending_rerun, request_rerun
from sentient.projects.researcher import Researcher
from sentient.projects.settings import merge_settings, with_goal_language
from sentient.report import Report, build_report, to_markdown
from sentient.report.html import to_html
from sentient.settings import EngineSettings
from sentient.store import (
    Heartbeat,
    ProjectNotFoundError,
    ProjectStore,
    StoreError,
    StoreWriter,
    StoreWriterError,
    check_project_id,
)
from sentient.structured import CitedValue
from sentient.text import goal_problem
from sentient.trace import TraceRecorder, write_json, write_text

RunStatus = Literal["completed", "completed_with_failures", "failed", "cancelled", "stopped"]


@dataclass(frozen=True)
class RunStats:
    nodes: int
    agent_calls: int
    input_tokens: int
    output_tokens: int
    failed_nodes: int
    elapsed_s: float
    cost_usd: float = 0.0
    model_calls: int = 0  # agent calls that reached a model (the others came from the cache)


@dataclass(frozen=True)
class RunResult:
    """What a run produced. ``report`` is always set, even for failed or stopped runs;
    ``report_markdown`` is its Markdown, as written to ``report.md``.

    ``status`` is ``stopped`` when a budget (cost, calls, time) ended the run early; the report
    then covers the finished work and says so. ``completed_with_failures``: the root finished
    but some subtasks failed; the report lists what it does not cover.
    """

    project_id: str
    status: RunStatus
    final_answer: str | None
    report_markdown: str
    error: str | None
    stats: RunStats
    output_dir: Path | None
    graph: TaskGraph
    report: Report

    @property
    def partial(self) -> bool:
        return self.status != "completed"


class ProjectRun:
    """One execution (a new run or a resumed one) of a project's graph."""

    def __init__(
        self,
        researcher: Researcher,
        project_id: str,
        graph: TaskGraph,
        settings: EngineSettings,
        store: ProjectStore | None,
        output_dir: Path | None,
        write_files: bool,
        subscribers: Iterable[Subscriber],
        *,
        rerun: Rerun | None = None,
        instructions: Mapping[str, str] | None = None,
        prior: PriorKnowledge | None = None,
    ) -> None:
        self.researcher = researcher
        self.project_id = project_id
        self.graph = graph
        self.settings = settings
        self.store = store
        self.out_dir = (output_dir or researcher.settings.results_dir / project_id) if write_files else None
        self.trace = TraceRecorder()
        self.spent = Spent()  # what earlier runs of the project used (budgets are cumulative)
        self.budget: Budget | None = None
        self.bus = EventBus()
        self.bus.subscribe(self.trace)
        # Fenced by the store's owner: once another worker holds the project, nothing more is written.
        self.writer = StoreWriter(store, project_id, owner=store.owner) if store is not None else None
        self.heartbeat: Heartbeat | None = None
        self._engine: ExecutionEngine | None = None
        self.structured: CitedValue | None = None  # the answer as JSON of the output_schema, once asked
        self.structured_error: str | None = None  # why it could not be given: the run failed
        self.rerun = rerun  # applied to the graph first
        self.instructions = dict(instructions or {})  # task id -> the user's instructions for it
        self.prior = prior  # a follow-up question's: what the project it follows holds
        if self.writer is not None:
            self.bus.subscribe(self.writer)
        for subscriber in subscribers:
            self.bus.subscribe(subscriber)

    async def execute(self, *, resume: bool) -> RunResult:
        """Claim the project (ProjectBusyError if another worker holds it), run it while a heartbeat
        renews the claim, and store its end; LeaseLostError if the claim passed to another worker."""
        started = time.perf_counter()
        if self.store is not None:
            try:
                self.store.claim(self.project_id)  # ProjectBusyError if another worker holds it
            except StoreError:
                if self.writer is not None:
                    self.writer.close()  # nothing was written: the project stays as its owner keeps it
                raise
        knowledge = KnowledgeStore(self.store, self.project_id)  # without a store, in memory only
        self.bus.subscribe(knowledge)
        crash: str | None = None
        cancelled = False
        body = asyncio.ensure_future(self._run_with_tools(knowledge, resume=resume))
        if self.store is not None:
            loop = asyncio.get_running_loop()
            self.heartbeat = Heartbeat(
                self.store, self.project_id, self.store.owner, lambda _: loop.call_soon_threadsafe(body.cancel)
            )
            self.heartbeat.start()
        try:
            try:
                await body
            except asyncio.CancelledError:
                lost = self.heartbeat.lost if self.heartbeat is not None else None
                current = asyncio.current_task()
                if lost is None or (current is not None and current.cancelling()):
                    cancelled = True  # from outside (Ctrl-C, a server's cancel), maybe before the engine began
                    raise
                raise lost from None
        except Exception as exc:  # recorded as the run's error (not the root's idle status), then raised
            crash = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if self.heartbeat is not None:
                self.heartbeat.stop()
            stop_reason = self._engine.stop_reason if self._engine is not None else None
            result = self._result(started, stop_reason, crash, cancelled=cancelled)
            self.bus.publish(RunFinished(result.status, result.error, stats=asdict(result.stats)))
            await asyncio.to_thread(self._save, result)
        logger.info("project {}: {} in {:.1f}s", self.project_id, result.status, result.stats.elapsed_s)
        return result

    async def _run_with_tools(self, knowledge: KnowledgeStore, *, resume: bool) -> None:
        """The run with its tools open: MCP servers start before any model call and stop when the run
        ends, in this one task (the MCP SDK binds a session to the task that opened it)."""
        async with contextlib.AsyncExitStack() as tools:
            await self._run(knowledge, tools, resume=resume)

    async def _run(self, knowledge: KnowledgeStore, tools: contextlib.AsyncExitStack, *, resume: bool) -> None:
        researcher, graph, settings = self.researcher, self.graph, self.settings
        # Subscribers see the graph as the run finds it; every later change comes as an event.
        self.bus.publish(RunStarted(self.project_id, tuple(snapshot(node) for node in graph), resumed=resume))
        if self.rerun is not None:
            await self._apply_rerun(self.rerun)
        if resume:
            for change in prepare_resume(graph):
                self.bus.publish(change)
        await asyncio.to_thread(researcher.models.prepare)
        toolboxes = await researcher.toolboxes(tools)
        budget = self.budget = Budget(settings, spent=self.spent)
        runner = AgentRunner(
            researcher.models.for_agent,
            self.bus,
            max_concurrent=settings.max_concurrent_llm_calls,
            timeout_s=settings.agent_timeout_s,
            max_validation_retries=settings.max_validation_retries,
            budget=budget,
            deadline_s=settings.call_deadline_s,
            local_timeout_s=settings.local_timeout_s,
            max_tool_steps=settings.max_tool_steps,
        )
        context = ContextBuilder(
            graph, knowledge, settings.context_token_budget, settings.knowledge_results, self.instructions, self.prior
        )
        processor = AgentProcessor(
            graph,
            researcher.profile,
            settings,
            runner,
            context,
            researcher.reviewer,
            self.bus,
            toolboxes,
        )
        engine = self._engine = ExecutionEngine(processor, settings, budget)
        logger.info(
            "project {}: {} '{}' with profile {}",
            self.project_id,
            "resuming" if resume else "starting",
            graph.root.goal,
            researcher.profile.name,
        )
        await engine.run(resume=resume)
        if settings.output_schema is not None and graph.root.status is TaskStatus.DONE:
            try:  # the root's answer as JSON of the user's schema (a resume of a run it failed asks again)
                self.structured = await processor.structure(settings.output_schema)
            except AgentError as exc:
                self.structured_error = f"the structured answer failed: {exc}"

    async def _apply_rerun(self, rerun: Rerun) -> None:
        """Reset the rerun's node and ancestors (its subtree discarded), stored before the request
        is marked applied: a run killed before that applies it again on resume."""
        if rerun.task_id in self.graph:
            for change in prepare_rerun(self.graph, rerun.task_id, replan=rerun.replan):
                self.bus.publish(change)
        else:  # stopped before its first event, or started over since: that task is gone
            logger.warning("project {}: no task '{}' to re-run", self.project_id, rerun.task_id)
        if self.store is not None and self.writer is not None:
            store, writer = self.store, self.writer

            def mark_applied() -> None:
                writer.flush()
                store.set_options(self.project_id, applied(store.get_project(self.project_id).options))

            await asyncio.to_thread(mark_applied)

    def _result(
        self, started: float, stop_reason: str | None, crash: str | None = None, *, cancelled: bool = False
    ) -> RunResult:
        graph, trace = self.graph, self.trace
        root = graph.root
        status: RunStatus
        failed = [n.task_id for n in graph if n.status is TaskStatus.FAILED]
        if root.status is TaskStatus.DONE and self.structured_error is not None:
            status = "failed"
        elif root.status is TaskStatus.DONE:
            status = "completed_with_failures" if failed else "completed"
        elif stop_reason is not None:
            status = "stopped"
        elif root.status is TaskStatus.CANCELLED or (cancelled and not root.is_terminal):  # stopped before it ended
            status = "cancelled"
        else:
            status = "failed"
        stats = RunStats(
            nodes=len(graph),
            agent_calls=trace.agent_calls,
            input_tokens=trace.input_tokens,
            output_tokens=trace.output_tokens,
            failed_nodes=len(failed),
            elapsed_s=time.perf_counter() - started,
            cost_usd=trace.cost_usd,
            model_calls=trace.model_calls,
        )
        if status == "completed":
            error = None
        elif status == "completed_with_failures":
            error = f"{len(failed)} subtask(s) failed: {', '.join(failed[:5])}" + (", …" if len(failed) > 5 else "")
        else:
            error = (
                stop_reason
                or crash
                or self.structured_error
                or root.error
                or ("cancelled" if cancelled else root.status.value.lower())
            )
        report = build_report(graph, stopped=stop_reason, structured=self.structured)
        return RunResult(
            project_id=self.project_id,
            status=status,
            final_answer=root.result if root.status is TaskStatus.DONE else None,
            report_markdown=to_markdown(report),
            error=error,
            stats=stats,
            output_dir=self.out_dir,
            graph=graph,
            report=report,
        )

    def _save(self, result: RunResult) -> None:
        """Persist the end of the run (store first: it is what resume reads), then the files.

        Nothing is stored once another worker holds the project (its lease passed): that worker
        resumes from what was stored, and records its own end.
        """
        if self.writer is not None and self.store is not None:
            try:
                self.writer.close()
            except StoreWriterError as exc:  # logged by the writer; the end of the run is still recorded
                logger.error("project {}: {}", self.project_id, exc)
            # The store knows "completed"; its error says which subtasks failed.
            status = "completed" if result.status == "completed_with_failures" else result.status
            released = self.store.release(
                self.project_id,
                status,
                result.error,
                stats=asdict(result.stats),
                report=(result.report_markdown, result.report.model_dump(mode="json")),
                spent=self.budget.spent().to_dict() if self.budget is not None else None,
            )
            if not released:
                logger.error(
                    "project {}: another worker holds it now; the end of this run is not stored", self.project_id
                )
                return  # nor its files: they are the other worker's to write
        if self.out_dir is not None:
            write_outputs(self.out_dir, self.graph, self.trace, result.report, result.report_markdown)


def check_goal(goal: object) -> str:
    """The goal, stripped; InvalidGoalError (a ValueError) if it is empty, holds control characters or is not
    valid Unicode text."""
    if not isinstance(goal, str):
        raise InvalidGoalError(f"the goal must be text, not {type(goal).__name__}.", fix="pass a string.")
    try:
        goal.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidGoalError(
            f"the goal is not valid text: {goal[exc.start]!r} at position {exc.start} is a lone surrogate"
            " (bytes that are not UTF-8)."
        ) from None
    problem = goal_problem(goal)
    if problem is not None:
        raise InvalidGoalError(problem, fix=None)  # the problem's sentence says what to do
    return goal.strip()


def spent_before(stored: dict[str, Any], calls: list[dict[str, Any]]) -> Spent:
    """What a project's earlier runs spent: as stored when a run ended, or (a run killed before
    it could store it) at least what its recorded calls cost."""
    spent = Spent.from_dict(stored)
    paid = [c for c in calls if not c.get("cached")]
    cost = sum(float(c.get("cost_usd") or 0.0) for c in paid)
    requests = sum(int(c.get("attempts") or 1) for c in paid)
    return Spent(max(spent.cost_usd, cost), max(spent.requests, requests), spent.elapsed_s)


def write_outputs(out_dir: Path, graph: TaskGraph, trace: TraceRecorder, report: Report, markdown: str) -> None:
    write_text(out_dir / "report.md", markdown)
    write_text(out_dir / "report.html", to_html(report))
    write_json(out_dir / "graph.json", graph.to_dict())
    trace.write(out_dir, graph)


async def run_project(
    researcher: Researcher,
    goal: str,
    *,
    project_id: str | None,
    store: ProjectStore | None,
    settings: EngineSettings,
    output_dir: Path | None = None,
    subscribers: Iterable[Subscriber] = (),
    write_files: bool = True,
) -> RunResult:
    """Research ``goal`` from a fresh root; with a ``store``, the project is created there unless
    it was beforehand (e.g. by the server), and every event is persisted as it happens."""
    goal = check_goal(goal)
    settings = with_goal_language(settings, goal)
    project_id = check_project_id(project_id) if project_id else new_project_id(goal)
    prior = None
    if store is not None:
        try:
            options = store.get_project(project_id).options
        except ProjectNotFoundError:
            store.create_project(
                project_id, goal, researcher.profile.name, settings.model_dump(mode="json"), researcher.options()
            )
        else:
            prior = prior_knowledge(store, options)  # a follow-up's: created by the service beforehand
    graph = TaskGraph()
    graph.add_root(goal, TaskType.SEARCH, NodeType.PLAN)
    run = ProjectRun(researcher, project_id, graph, settings, store, output_dir, write_files, subscribers, prior=prior)
    return await run.execute(resume=False)


@dataclass(frozen=True)
class RunOptions:
    """What a resumed, re-run or follow-up run is given besides its project: where its files go
    (``output_dir``; ``write_files=False``: nowhere), who hears its events, and the engine settings
    it overrides (``overrides``, any :class:`~sentient.settings.EngineSettings` field)."""

    output_dir: Path | None = None
    subscribers: tuple[Subscriber, ...] = ()
    write_files: bool = True
    overrides: Mapping[str, Any] = field(default_factory=dict)


async def resume_project(
    researcher: Researcher, project_id: str, *, store: ProjectStore, options: RunOptions | None = None
) -> RunResult:
    """Continue a stored project that did not finish: DONE nodes are kept, the rest runs again.

    FAILED nodes run again too (a failed aggregation whose children are DONE only aggregates).
    Budgets are cumulative: ``options.overrides`` must raise a budget that stopped the run above
    what the project has spent. A rerun requested for it (:mod:`sentient.projects.rerun`, a completed
    project's too) is applied first. ProjectCompletedError when there is nothing to resume, ConfigError
    for another profile, ProjectBusyError when another live process runs the project.
    """
    options = options or RunOptions()
    record = store.get_project(project_id)
    rerun = pending_rerun(record.options)
    if record.status == "completed" and not record.failed_nodes and rerun is None:
        raise ProjectCompletedError(
            project_id, f"project '{project_id}' has already completed; there is nothing to resume."
        )
    if record.profile != researcher.profile.name:
        raise ConfigError(
            f"project '{project_id}' was run with profile '{record.profile}', not '{researcher.profile.name}'.",
            field="profile",
            fix=f"resume it with profile '{record.profile}'.",
        )
    settings = merge_settings(EngineSettings.model_validate(record.settings), options.overrides)
    graph = store.load_graph(project_id)
    fresh = not len(graph)
    if fresh:
        # Stopped before its first event: nothing was stored, so it starts over, and the
        # engine announces (and the writer stores) the root as in a new run.
        graph.add_root(record.goal, TaskType.SEARCH, NodeType.PLAN)
    run = ProjectRun(
        researcher,
        project_id,
        graph,
        settings,
        store,
        options.output_dir,
        options.write_files,
        options.subscribers,
        rerun=rerun,
        instructions=instructions_of(record.options),
        prior=prior_knowledge(store, record.options),
    )
    calls = store.calls(project_id)
    run.trace.restore(calls)
    run.spent = spent_before(record.spent, calls)
    return await run.execute(resume=not fresh)


async def rerun_project(
    researcher: Researcher,
    project_id: str,
    task_id: str,
    *,
    store: ProjectStore,
    replan: bool = False,
    instructions: str | None = None,
    options: RunOptions | None = None,
) -> RunResult:
    """Run one node of a project that ran again, with ``instructions`` for its agents: planned
    again (``replan``) or executed again. Its subtree is rebuilt and its ancestors aggregate
    again; every other node keeps its result. The rerun is stored first and the project resumed
    (:mod:`sentient.projects.rerun`), so an interrupted rerun continues with a resume."""
    request_rerun(store, project_id, task_id, replan=replan, instructions=instructions)
    return await resume_project(researcher, project_id, store=store, options=options)


async def ask_project(
    researcher: Researcher, project_id: str, question: str, *, store: ProjectStore, options: RunOptions | None = None
) -> RunResult:
    """Ask a follow-up ``question`` of a project that ran: it is stored as a new project that follows
    it (:mod:`sentient.projects.followups`), researched from what the project holds first, and
    searched again only for what that lacks. The project itself is left as it is. An interrupted
    follow-up continues with a resume of its own id (``RunResult.project_id``)."""
    profile = store.get_project(project_id).profile
    if profile != researcher.profile.name:  # checked before the follow-up is stored
        raise ConfigError(
            f"project '{project_id}' was run with profile '{profile}', not '{researcher.profile.name}'.",
            field="profile",
            fix=f"ask it with profile '{profile}'.",
        )
    followup = create_followup(store, project_id, question)
    return await resume_project(researcher, followup.project_id, store=store, options=options)
