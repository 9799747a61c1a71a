"""The Python API: ``ProfiledSentientAgent.create_with_profile(name)`` then ``arun(goal=...)``."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from agno.models.base import Model
from loguru import logger
from pydantic import ValidationError

from sentient.agents.models.factory import ModelFactory
from sentient.agents.registry import AgentRegistry, Profile
from sentient.agents.runner import AgentRunner
from sentient.context.builder import ContextBuilder
from sentient.context.knowledge import KnowledgeStore
from sentient.engine.budget import Budget
from sentient.engine.processor import NodeProcessor
from sentient.engine.resume import prepare_resume
from sentient.engine.scheduler import ExecutionEngine
from sentient.events import EventBus, RunFinished, Subscriber
from sentient.exceptions import ConfigError, RunError
from sentient.graph.node import NodeType, TaskType
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.hitl.protocol import AutoApprove, PlanReviewer
from sentient.report import build_report
from sentient.report_html import render_html
from sentient.settings import EngineSettings, Settings
from sentient.store import (
    ProjectNotFoundError,
    ProjectStore,
    StoreWriter,
    StoreWriterError,
    check_project_id,
    owner_alive,
)
from sentient.tools.base import CircuitBreaker, ToolSettings
from sentient.tools.docs_search import DocsFolder, DocsIndex
from sentient.tools.embeddings import default_embedder
from sentient.tools.toolbox import ToolBox
from sentient.trace import TraceRecorder, write_json, write_text

RunStatus = Literal["completed", "failed", "cancelled", "stopped"]


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
    """What a run produced. ``report_markdown`` is always set, even for failed or stopped runs.

    ``status`` is ``stopped`` when a budget (cost, calls, time) ended the run early; the report
    then covers the finished work and says so.
    """

    project_id: str
    status: RunStatus
    final_answer: str | None
    report_markdown: str
    error: str | None
    stats: RunStats
    output_dir: Path | None
    graph: TaskGraph

    @property
    def partial(self) -> bool:
        return self.status != "completed"


class ProfiledSentientAgent:
    """A research agent configured by a profile from ``agent_configs/profiles/``."""

    def __init__(
        self,
        profile: Profile,
        settings: Settings,
        *,
        model: Model | None = None,
        model_string: str | None = None,
        reviewer: PlanReviewer | None = None,
        docs: Path | DocsFolder | DocsIndex | None = None,
        engine_settings: EngineSettings | None = None,
    ) -> None:
        self.profile = profile
        self.settings = settings
        self.engine_settings = engine_settings or profile.settings
        self._models = ModelFactory(
            settings, profile, override=model, model=model_string, timeout_s=self.engine_settings.agent_timeout_s
        )
        self._models.check()
        self._reviewer = reviewer or AutoApprove()
        self._docs_source = docs
        self._docs: DocsIndex | None = docs if isinstance(docs, DocsIndex) else None

    @classmethod
    def create_with_profile(
        cls,
        profile_name: str = "deep_research_agent",
        *,
        settings: Settings | None = None,
        model: Model | str | None = None,
        reviewer: PlanReviewer | None = None,
        docs: Path | str | DocsIndex | None = None,
        **engine_overrides: Any,
    ) -> ProfiledSentientAgent:
        """Load and validate the configuration now, so errors surface before any run.

        Args:
            profile_name: a profile in ``agent_configs/profiles/``.
            settings: process settings; by default read from ``SENTIENT_*`` variables.
            model: a model string (``openai:gpt-4o-mini``, ``local``…) used by every agent,
                overriding the profile and agents.yaml; or an agno model instance (tests use
                :class:`~sentient.agents.models.fake.ScriptedModel`).
            reviewer: decides on plans when review is enabled; default approves everything.
            docs: a folder to research (or a built index); default is Python's own documentation.
            **engine_overrides: any :class:`~sentient.settings.EngineSettings` field.
        """
        settings = settings or Settings()
        profile = AgentRegistry.load(settings.config_dir).profile(profile_name)
        engine_settings = _override(profile.settings, engine_overrides)
        if isinstance(docs, str):
            docs = Path(docs)
        return cls(
            profile,
            settings,
            model=model if isinstance(model, Model) else None,
            model_string=model if isinstance(model, str) else None,
            reviewer=reviewer,
            docs=docs,
            engine_settings=engine_settings,
        )

    def run(self, goal: str, **kwargs: Any) -> RunResult:
        """Synchronous :meth:`arun`."""
        return asyncio.run(self.arun(goal, **kwargs))

    async def arun(
        self,
        goal: str,
        *,
        project_id: str | None = None,
        output_dir: Path | None = None,
        subscribers: Iterable[Subscriber] = (),
        write_files: bool = True,
        store: ProjectStore | None = None,
        on_graph: Callable[[TaskGraph], None] | None = None,
        **engine_overrides: Any,
    ) -> RunResult:
        """Research ``goal`` and return the result; files go to ``project_results/<project-id>/``.

        With a ``store``, the project and every event are persisted as they happen, so the run
        can be resumed (:meth:`aresume`) after Ctrl-C or a crash. ``on_graph`` receives the
        run's live graph before the first event (the server reads full nodes from it).
        """
        goal = goal.strip()
        if not goal:
            raise ConfigError("the goal is empty.", field="goal", fix="describe what to research.")
        settings = _override(self.engine_settings, engine_overrides)
        project_id = check_project_id(project_id) if project_id else new_project_id(goal)
        if store is not None:
            try:
                store.get_project(project_id)  # created beforehand (e.g. by the server)
            except ProjectNotFoundError:
                store.create_project(project_id, goal, self.profile.name, settings.model_dump(mode="json"))
        graph = TaskGraph()
        graph.add_root(goal, TaskType.SEARCH, NodeType.PLAN)
        run = _Run(self, project_id, graph, settings, store, output_dir, write_files, subscribers, on_graph)
        return await run.execute(resume=False)

    async def aresume(
        self,
        project_id: str,
        *,
        store: ProjectStore,
        output_dir: Path | None = None,
        subscribers: Iterable[Subscriber] = (),
        write_files: bool = True,
        on_graph: Callable[[TaskGraph], None] | None = None,
        **engine_overrides: Any,
    ) -> RunResult:
        """Continue a stored project that did not finish: DONE nodes are kept, unfinished ones rerun.

        ``engine_overrides`` can raise a budget that stopped the run (e.g. ``max_cost_usd``).
        """
        record = store.get_project(project_id)
        if record.status == "completed":
            raise RunError(f"project '{project_id}' has already completed; there is nothing to resume.")
        if record.status == "running" and owner_alive(record) and record.owner_pid != os.getpid():
            raise RunError(f"project '{project_id}' is running in process {record.owner_pid}; stop it first.")
        if record.profile != self.profile.name:
            raise ConfigError(
                f"project '{project_id}' was run with profile '{record.profile}', not '{self.profile.name}'.",
                field="profile",
                fix=f"resume it with profile '{record.profile}'.",
            )
        stored = EngineSettings.model_validate(record.settings)
        settings = _override(stored, engine_overrides)
        graph = store.load_graph(project_id)
        fresh = not len(graph)
        if fresh:
            # Stopped before its first event: nothing was stored, so it starts over, and the
            # engine announces (and the writer stores) the root as in a new run.
            graph.add_root(record.goal, TaskType.SEARCH, NodeType.PLAN)
        run = _Run(self, project_id, graph, settings, store, output_dir, write_files, subscribers, on_graph)
        run.trace.restore(store.calls(project_id))
        return await run.execute(resume=not fresh)

    async def _toolboxes(self) -> dict[str, ToolBox]:
        """Each agent's tools for one run; web tools share one breaker (offline: one warning per run)."""
        docs = await self._docs_index()
        settings = ToolSettings(offline=self.settings.offline)
        breaker = CircuitBreaker("web search")
        return {
            a.name: ToolBox.for_agent(a.tools, settings, docs, breaker=breaker)
            for a in self.profile.agents()
            if a.tools
        }

    async def _docs_index(self) -> DocsIndex | None:
        if not any("docs_search" in a.tools for a in self.profile.agents()):
            return None
        if self._docs is None:
            source = self._docs_source
            folder = source if isinstance(source, Path | DocsFolder) else None  # else: Python's docs
            # Indexing runs in a thread, which a cancelled run cannot interrupt: it is told to stop.
            cancel = threading.Event()
            try:
                self._docs = await asyncio.to_thread(open_docs_index, folder, self.settings, cancel)
            except asyncio.CancelledError:
                cancel.set()
                raise
        return self._docs


def open_docs_index(
    folder: Path | DocsFolder | None, settings: Settings, cancel: threading.Event | None = None
) -> DocsIndex:
    """The index a run researches: ``folder``, or Python's own documentation; hybrid (BM25 and
    MiniLM vectors) when ``settings.retrieval`` says so. Blocking: call it from a thread;
    setting ``cancel`` stops a folder's indexing."""
    embeddings = default_embedder if settings.retrieval == "hybrid" else None
    if folder is not None:
        docs = folder if isinstance(folder, DocsFolder) else DocsFolder(folder)
        return dataclasses.replace(docs, embeddings=embeddings).build(cancel)
    return DocsIndex.python_docs(settings.cache_dir, embeddings=embeddings)


class _Run:
    """One execution (a new run or a resumed one) of a project's graph."""

    def __init__(
        self,
        agent: ProfiledSentientAgent,
        project_id: str,
        graph: TaskGraph,
        settings: EngineSettings,
        store: ProjectStore | None,
        output_dir: Path | None,
        write_files: bool,
        subscribers: Iterable[Subscriber],
        on_graph: Callable[[TaskGraph], None] | None,
    ) -> None:
        self.agent = agent
        self.project_id = project_id
        self.graph = graph
        self.settings = settings
        self.store = store
        self.out_dir = (output_dir or agent.settings.results_dir / project_id) if write_files else None
        self.trace = TraceRecorder()
        self.bus = EventBus()
        self.bus.subscribe(self.trace)
        self.writer = StoreWriter(store, project_id, graph) if store is not None else None
        if self.writer is not None:
            self.bus.subscribe(self.writer)
        if on_graph is not None:
            on_graph(graph)
        for subscriber in subscribers:
            self.bus.subscribe(subscriber)

    async def execute(self, *, resume: bool) -> RunResult:
        agent, graph, settings = self.agent, self.graph, self.settings
        started = time.perf_counter()
        if self.store is not None:
            self.store.set_status(self.project_id, "running", owner_pid=os.getpid())
        knowledge = KnowledgeStore()
        engine: ExecutionEngine | None = None
        crash: str | None = None
        try:
            if resume:
                for change in prepare_resume(graph):
                    self.bus.publish(change)
                for node in graph:
                    if node.status is TaskStatus.DONE and node.result:
                        knowledge.add(node.task_id, node.goal, node.result, [s.ref for s in node.sources])
            await asyncio.to_thread(agent._models.prepare)
            toolboxes = await agent._toolboxes()
            budget = Budget(settings)
            runner = AgentRunner(
                agent._models.for_agent,
                self.bus,
                max_concurrent=settings.max_concurrent_llm_calls,
                timeout_s=settings.agent_timeout_s,
                max_validation_retries=settings.max_validation_retries,
                budget=budget,
            )
            context = ContextBuilder(graph, knowledge, settings.context_token_budget, settings.knowledge_results)
            processor = NodeProcessor(
                graph, agent.profile, settings, runner, context, knowledge, agent._reviewer, self.bus, toolboxes
            )
            engine = ExecutionEngine(processor, settings, budget)
            logger.info(
                "project {}: {} '{}' with profile {}",
                self.project_id,
                "resuming" if resume else "starting",
                graph.root.goal,
                agent.profile.name,
            )
            await engine.run(resume=resume)
        except Exception as exc:
            crash = f"{type(exc).__name__}: {exc}"  # the stored error says why, not a node status
            raise
        finally:
            knowledge.close()
            stop_reason = engine.stop_reason if engine is not None else None
            result = self._result(started, stop_reason)
            if crash is not None and result.status == "failed":
                result = replace(result, error=crash)
            self.bus.publish(RunFinished(result.status, result.error, stats=asdict(result.stats)))
            await asyncio.to_thread(self._save, result)
        logger.info("project {}: {} in {:.1f}s", self.project_id, result.status, result.stats.elapsed_s)
        return result

    def _result(self, started: float, stop_reason: str | None) -> RunResult:
        graph, trace = self.graph, self.trace
        root = graph.root
        status: RunStatus
        if root.status is TaskStatus.DONE:
            status = "completed"
        elif stop_reason is not None:
            status = "stopped"
        elif root.status is TaskStatus.CANCELLED:
            status = "cancelled"
        else:
            status = "failed"
        stats = RunStats(
            nodes=len(graph),
            agent_calls=trace.agent_calls,
            input_tokens=trace.input_tokens,
            output_tokens=trace.output_tokens,
            failed_nodes=sum(1 for n in graph if n.status is TaskStatus.FAILED),
            elapsed_s=time.perf_counter() - started,
            cost_usd=trace.cost_usd,
            model_calls=trace.model_calls,
        )
        error = None if status == "completed" else (stop_reason or root.error or root.status.value.lower())
        return RunResult(
            project_id=self.project_id,
            status=status,
            final_answer=root.result if status == "completed" else None,
            report_markdown=build_report(graph, stopped=stop_reason),
            error=error,
            stats=stats,
            output_dir=self.out_dir,
            graph=graph,
        )

    def _save(self, result: RunResult) -> None:
        """Persist the end of the run (store first: it is what resume reads), then the files."""
        if self.writer is not None and self.store is not None:
            try:
                self.writer.close()
            except StoreWriterError as exc:  # logged by the writer; the end of the run is still recorded
                logger.error("project {}: {}", self.project_id, exc)
            self.store.set_stats(self.project_id, asdict(result.stats))
            self.store.set_report(self.project_id, result.report_markdown)
            self.store.set_status(self.project_id, result.status, result.error)
        if self.out_dir is not None:
            _write_outputs(self.out_dir, self.graph, self.trace, result.report_markdown)


def new_project_id(goal: str) -> str:
    """A readable, unique, filesystem-safe id: ``20261121-190405-python-asyncio-3f2a9c``."""
    slug = re.sub(r"[^a-z0-9]+", "-", goal.lower()).strip("-")[:40].strip("-") or "project"
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}-{uuid.uuid4().hex[:6]}"


def _override(settings: EngineSettings, overrides: dict[str, Any]) -> EngineSettings:
    unknown = sorted(set(overrides) - set(EngineSettings.model_fields))
    if unknown:
        raise ConfigError(
            f"unknown engine setting(s) {unknown}.",
            fix=f"use: {', '.join(sorted(EngineSettings.model_fields))}.",
        )
    values = {k: v for k, v in overrides.items() if v is not None}
    if not values:
        return settings
    try:
        return EngineSettings.model_validate({**settings.model_dump(), **values})
    except ValidationError as exc:
        # One line naming the setting, not pydantic's multi-line report.
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise ConfigError(
            f"invalid engine setting: {error['msg']} (got {error.get('input')!r}).",
            field=field,
            fix="correct the value.",
        ) from exc


def _write_outputs(out_dir: Path, graph: TaskGraph, trace: TraceRecorder, report: str) -> None:
    write_text(out_dir / "report.md", report)
    write_text(out_dir / "report.html", render_html(report, title=graph.root.goal))
    write_json(out_dir / "graph.json", graph.to_dict())
    trace.write(out_dir, graph)
