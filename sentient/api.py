"""The Python API: ``ProfiledSentientAgent.create_with_profile(name)`` then ``arun(goal=...)``.

A facade over :mod:`sentient.projects`: the agent is a :class:`~sentient.projects.Researcher`
(profile, models, reviewer, docs) and its runs are the service's runs.

What a run does by default, as ``sentient run`` does:

- it writes ``report.md``, ``report.html``, ``graph.json`` and traces to
  ``project_results/<project-id>/`` (``write_files=False``: none);
- it is kept in the project store only when given one (``store=ProjectStore.open(...)``): then it
  is listed by ``sentient projects list`` and the dashboard, and can be resumed;
- web search is tried when the profile's agents have it; ``Settings(offline=True)`` (or
  ``SENTIENT_OFFLINE=1``, the CLI's ``--offline``) keeps everything on the machine, and without
  a network the run says so once and researches the local documents;
- it logs nothing: the library's loguru messages are disabled until the application enables
  them (``logger.enable("sentient")``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agno.models.base import Model

from sentient.agents.models.gates import ProviderGates
from sentient.agents.registry import AgentRegistry, Profile
from sentient.events import Subscriber
from sentient.hitl.protocol import PlanReviewer
from sentient.projects import (
    Researcher,
    RunOptions,
    RunResult,
    RunStats,
    RunStatus,
    ask_project,
    check_goal,
    merge_settings,
    new_project_id,
    open_docs_index,
    rerun_project,
    resume_project,
    run_project,
)
from sentient.settings import EngineSettings, Settings
from sentient.store import ProjectStore
from sentient.tools.docs_search import DocsFolder, DocsIndex

__all__ = [
    "ProfiledSentientAgent",
    "RunResult",
    "RunStats",
    "RunStatus",
    "check_goal",
    "new_project_id",
    "open_docs_index",
]


class ProfiledSentientAgent(Researcher):
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
        gates: ProviderGates | None = None,
    ) -> None:
        super().__init__(
            profile,
            settings,
            engine_settings=engine_settings or profile.settings,
            model=model,
            model_string=model_string,
            reviewer=reviewer,
            docs=docs,
            gates=gates,
        )

    @classmethod
    def create_with_profile(
        cls,
        profile_name: str = "deep_research_agent",
        *,
        settings: Settings | None = None,
        model: Model | str | None = None,
        reviewer: PlanReviewer | None = None,
        docs: Path | str | DocsIndex | None = None,
        gates: ProviderGates | None = None,
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
            gates: provider gates to share with other agents of the process, so that they keep to
                each provider key's limits together; default: the agent's own.
            **engine_overrides: any :class:`~sentient.settings.EngineSettings` field.
        """
        settings = settings or Settings()
        profile = AgentRegistry.load(settings.config_dir).profile(profile_name)
        engine_settings = merge_settings(profile.settings, engine_overrides)
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
            gates=gates,
        )

    def run(self, goal: str, **kwargs: Any) -> RunResult:
        """Synchronous :meth:`arun`."""

        async def run_then_close() -> RunResult:
            try:
                return await self.arun(goal, **kwargs)
            finally:
                await self.models.gates.aclose()  # this loop's connections (to a shared-limits Redis)

        return asyncio.run(run_then_close())

    async def arun(
        self,
        goal: str,
        *,
        project_id: str | None = None,
        output_dir: Path | None = None,
        subscribers: Iterable[Subscriber] = (),
        write_files: bool = True,
        store: ProjectStore | None = None,
        **engine_overrides: Any,
    ) -> RunResult:
        """Research ``goal`` and return the result; files go to ``project_results/<project-id>/``
        (``output_dir`` elsewhere, ``write_files=False`` nowhere).

        With a ``store``, the project and every event are persisted as they happen, so the run
        can be resumed (:meth:`aresume`) after Ctrl-C or a crash and is listed by ``sentient
        projects list`` and the dashboard; without one (the default) it is not kept. ``subscribers``
        receive every event of the run, :class:`RunStarted` (the graph as the run begins) first.
        """
        goal = check_goal(goal)
        return await run_project(
            self,
            goal,
            project_id=project_id,
            store=store,
            settings=merge_settings(self.engine_settings, engine_overrides),
            output_dir=output_dir,
            subscribers=subscribers,
            write_files=write_files,
        )

    async def aresume(
        self,
        project_id: str,
        *,
        store: ProjectStore,
        output_dir: Path | None = None,
        subscribers: Iterable[Subscriber] = (),
        write_files: bool = True,
        **engine_overrides: Any,
    ) -> RunResult:
        """Continue a stored project that did not finish: DONE nodes are kept, the rest runs again.

        FAILED nodes run again too (a failed aggregation whose children are DONE only aggregates).
        Budgets are cumulative: ``engine_overrides`` must raise a budget that stopped the run
        (e.g. ``max_cost_usd``) above what the project has spent. Raises ProjectBusyError when
        another live process runs the project.
        """
        options = RunOptions(output_dir, tuple(subscribers), write_files, engine_overrides)
        return await resume_project(self, project_id, store=store, options=options)

    async def arerun(
        self,
        project_id: str,
        task_id: str,
        *,
        store: ProjectStore,
        replan: bool = False,
        instructions: str | None = None,
        output_dir: Path | None = None,
        subscribers: Iterable[Subscriber] = (),
        write_files: bool = True,
        **engine_overrides: Any,
    ) -> RunResult:
        """Run one node of a stored project again, with ``instructions`` for its agents: its planner
        (``replan=True``) or, for an executed node, its executor.

        The node's subtasks are discarded and rebuilt, its ancestors aggregate again, and every
        other node keeps its result. An interrupted rerun continues with :meth:`aresume`. Raises
        NodeNotFoundError, RerunRefusedError (the root; re-running a planned node without
        ``replan``), ProjectRunningError while a live process runs the project.
        """
        options = RunOptions(output_dir, tuple(subscribers), write_files, engine_overrides)
        return await rerun_project(
            self, project_id, task_id, store=store, replan=replan, instructions=instructions, options=options
        )

    async def aask(
        self,
        project_id: str,
        question: str,
        *,
        store: ProjectStore,
        output_dir: Path | None = None,
        subscribers: Iterable[Subscriber] = (),
        write_files: bool = True,
        **engine_overrides: Any,
    ) -> RunResult:
        """Ask a follow-up question of a stored project that ran (with the same profile).

        The question is researched as a new project that follows it (its id is the result's
        ``project_id``), from the project's findings and passages first; it searches again only
        for what they lack. The project itself is left as it is. An interrupted follow-up
        continues with :meth:`aresume` of its own id. Raises ProjectNotFoundError, InvalidGoalError
        (an empty question), ProjectRunningError while the project runs, ProjectStateError before
        its first run.
        """
        options = RunOptions(output_dir, tuple(subscribers), write_files, engine_overrides)
        return await ask_project(self, project_id, question, store=store, options=options)
