"""The Python API: ``ProfiledSentientAgent.create_with_profile(name)`` then ``arun(goal=...)``."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
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
from sentient.engine.processor import NodeProcessor
from sentient.engine.scheduler import ExecutionEngine
from sentient.events import EventBus, RunFinished, Subscriber
from sentient.exceptions import ConfigError
from sentient.graph.node import NodeType, TaskType
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.hitl.protocol import AutoApprove, PlanReviewer
from sentient.report import build_report
from sentient.settings import EngineSettings, Settings
from sentient.tools.docs_search import DocsIndex
from sentient.trace import TraceRecorder, write_json, write_text

RunStatus = Literal["completed", "failed", "cancelled"]


@dataclass(frozen=True)
class RunStats:
    nodes: int
    agent_calls: int
    input_tokens: int
    output_tokens: int
    failed_nodes: int
    elapsed_s: float


@dataclass(frozen=True)
class RunResult:
    """What a run produced. ``report_markdown`` is always set, even for failed runs."""

    project_id: str
    status: RunStatus
    final_answer: str | None
    report_markdown: str
    error: str | None
    stats: RunStats
    output_dir: Path | None
    graph: TaskGraph


class ProfiledSentientAgent:
    """A research agent configured by a profile from ``agent_configs/profiles/``."""

    def __init__(
        self,
        profile: Profile,
        settings: Settings,
        *,
        model: Model | None = None,
        reviewer: PlanReviewer | None = None,
        docs: Path | DocsIndex | None = None,
        engine_settings: EngineSettings | None = None,
    ) -> None:
        self.profile = profile
        self.settings = settings
        self.engine_settings = engine_settings or profile.settings
        self._models = ModelFactory(settings, override=model)
        self._models.check(profile)
        self._reviewer = reviewer or AutoApprove()
        self._docs_source = docs
        self._docs: DocsIndex | None = docs if isinstance(docs, DocsIndex) else None

    @classmethod
    def create_with_profile(
        cls,
        profile_name: str = "deep_research_agent",
        *,
        settings: Settings | None = None,
        model: Model | None = None,
        reviewer: PlanReviewer | None = None,
        docs: Path | str | DocsIndex | None = None,
        **engine_overrides: Any,
    ) -> ProfiledSentientAgent:
        """Load and validate the configuration now, so errors surface before any run.

        Args:
            profile_name: a profile in ``agent_configs/profiles/``.
            settings: process settings; by default read from ``SENTIENT_*`` variables.
            model: an agno model used by every agent instead of the configured ones (tests use
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
        return cls(profile, settings, model=model, reviewer=reviewer, docs=docs, engine_settings=engine_settings)

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
        **engine_overrides: Any,
    ) -> RunResult:
        """Research ``goal`` and return the result; files go to ``project_results/<project-id>/``."""
        goal = goal.strip()
        if not goal:
            raise ConfigError("the goal is empty.", field="goal", fix="describe what to research.")
        settings = _override(self.engine_settings, engine_overrides)
        project_id = project_id or new_project_id(goal)
        out_dir = (output_dir or self.settings.results_dir / project_id) if write_files else None
        started = time.perf_counter()

        bus = EventBus()
        trace = TraceRecorder()
        bus.subscribe(trace)
        for subscriber in subscribers:
            bus.subscribe(subscriber)

        await asyncio.to_thread(self._models.prepare, self.profile)
        docs = await self._docs_index()
        graph = TaskGraph()
        graph.add_root(goal, TaskType.WRITE, NodeType.PLAN)
        knowledge = KnowledgeStore()
        runner = AgentRunner(
            self._models.for_agent,
            bus,
            max_concurrent=settings.max_concurrent_llm_calls,
            timeout_s=settings.agent_timeout_s,
            max_validation_retries=settings.max_validation_retries,
        )
        context = ContextBuilder(graph, knowledge, settings.context_token_budget, settings.knowledge_results)
        processor = NodeProcessor(graph, self.profile, settings, runner, context, knowledge, self._reviewer, bus, docs)
        engine = ExecutionEngine(processor, settings)
        logger.info("project {}: starting '{}' with profile {}", project_id, goal, self.profile.name)
        try:
            await engine.run()
        finally:
            knowledge.close()
            result = self._result(project_id, graph, trace, started, out_dir)
            bus.publish(RunFinished(result.status, result.error, stats=result.stats.__dict__))
            if out_dir is not None:
                await asyncio.to_thread(_write_outputs, out_dir, graph, trace, result.report_markdown)
        logger.info("project {}: {} in {:.1f}s", project_id, result.status, result.stats.elapsed_s)
        return result

    async def _docs_index(self) -> DocsIndex | None:
        if not any("docs_search" in a.tools for a in self.profile.agents()):
            return None
        if self._docs is None:
            source = self._docs_source
            if isinstance(source, Path):
                self._docs = await asyncio.to_thread(DocsIndex.from_folder, source)
            else:
                self._docs = await asyncio.to_thread(DocsIndex.python_docs, self.settings.cache_dir)
        return self._docs

    def _result(
        self, project_id: str, graph: TaskGraph, trace: TraceRecorder, started: float, out_dir: Path | None
    ) -> RunResult:
        root = graph.root
        status: RunStatus = {TaskStatus.DONE: "completed", TaskStatus.CANCELLED: "cancelled"}.get(root.status, "failed")  # type: ignore[assignment]
        stats = RunStats(
            nodes=len(graph),
            agent_calls=trace.agent_calls,
            input_tokens=trace.input_tokens,
            output_tokens=trace.output_tokens,
            failed_nodes=trace.failed_nodes,
            elapsed_s=time.perf_counter() - started,
        )
        return RunResult(
            project_id=project_id,
            status=status,
            final_answer=root.result if status == "completed" else None,
            report_markdown=build_report(graph),
            error=None if status == "completed" else (root.error or root.status.value.lower()),
            stats=stats,
            output_dir=out_dir,
            graph=graph,
        )


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
    write_json(out_dir / "graph.json", graph.to_dict())
    trace.write(out_dir, graph)
