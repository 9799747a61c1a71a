"""ProjectService: the lifecycle of the projects in one store, for the CLI, the server and the API.

create → execute (or resume, cancel, rerun one node, ask a follow-up question) → report / export →
delete, and the answers to the plan reviews of its runs; every operation names its project and
raises the errors of :mod:`sentient.projects.errors`, which each adapter maps once (the server to
HTTP statuses, the CLI to exit codes). How a run is driven (a terminal's event loop, the server's
engine thread) is the adapter's; what it runs and what it may run is decided here.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from agno.models.base import Model
from pydantic import ValidationError

from sentient.agents.models.gates import ProviderGates
from sentient.agents.registry import AgentRegistry
from sentient.context.knowledge import KnowledgeEntry, KnowledgeStore
from sentient.events import Subscriber
from sentient.exceptions import GraphError
from sentient.graph.node import TaskNode
from sentient.graph.task_graph import TaskGraph
from sentient.hitl.protocol import PlanReviewer, ReviewRequest
from sentient.projects.errors import (
    NoReportError,
    ProjectCompletedError,
    ProjectNotRunningError,
    ProjectRunningError,
    ProjectStateError,
    UnfitAnswerError,
    UnusablePlanError,
)
from sentient.projects.followups import FOLLOWS, create_followup
from sentient.projects.ids import new_project_id
from sentient.projects.rerun import Rerun, forgotten, pending_rerun, request_rerun
from sentient.projects.researcher import Researcher
from sentient.projects.reviews import Review, ReviewAnswer
from sentient.projects.run import RunOptions, RunResult, resume_project, run_project
from sentient.projects.settings import merge_settings, stored_settings, with_goal_language
from sentient.report import Report, build_report, to_markdown
from sentient.settings import EngineSettings, Settings
from sentient.store import (
    InvalidProjectIdError,
    ProjectBusyError,
    ProjectNotFoundError,
    ProjectRecord,
    ProjectStatus,
    ProjectStore,
    ReviewAlreadyAnsweredError,
    owner_alive,
)
from sentient.tools.docs_search import DocsFolder, DocsIndex

DEFAULT_PROFILE = "deep_research_agent"
Mode = Literal["execute", "resume"]
# Module-level names for what the methods below return: inside the class, ``list`` is a method.
Reviews = list[Review]
Records = list[ProjectRecord]
Calls = list[dict[str, Any]]  # trace entries as the store keeps them (their context is free-form)


class ProjectService:
    """The projects of one store. Thread-safe as the store is; holds no per-run state. Its runs
    share one gate per provider key (``gates``), held to the limits of ``models.yaml`` together,
    and with every other process when ``settings.redis_url`` is set."""

    def __init__(
        self,
        store: ProjectStore,
        settings: Settings,
        registry: AgentRegistry | None = None,
        *,
        gates: ProviderGates | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.registry = registry or AgentRegistry.load(settings.config_dir)
        self.gates = gates or ProviderGates.from_settings(settings)

    # -- reading ---------------------------------------------------------------------------

    def get(self, project_id: str) -> ProjectRecord:
        """The project; ProjectNotFoundError (or InvalidProjectIdError) otherwise."""
        return self.store.get_project(project_id)

    def exists(self, project_id: str) -> bool:
        try:
            self.get(project_id)
        except (ProjectNotFoundError, InvalidProjectIdError):
            return False
        return True

    def list(self) -> list[ProjectRecord]:
        """Every project, newest first."""
        return self.store.list_projects()

    def graph(self, project_id: str) -> TaskGraph:
        """The stored task graph (empty before the first event)."""
        self.get(project_id)
        try:
            return self.store.load_graph(project_id)
        except GraphError as exc:  # a store written by an older version could lack its root
            raise ProjectStateError(
                project_id, f"the stored graph of project '{project_id}' is incomplete ({exc}); execute it again."
            ) from exc

    def node(self, project_id: str, task_id: str) -> TaskNode:
        """One stored node, with its history and children; NodeNotFoundError for a task it does not have."""
        return self.store.node(project_id, task_id)

    def calls(self, project_id: str, task_id: str | None = None) -> Calls:
        """The agent calls of the project (or of one task id, a removed node's too), oldest first."""
        self.get(project_id)
        return self.store.calls(project_id, task_id)

    def folder(self, project_id: str) -> Path:
        """Where the project's files (report, graph, traces) are written."""
        return self.store.project_dir(project_id)

    def report(self, project_id: str) -> tuple[str, Report]:
        """The report's Markdown and value: as its run stored them, else built from the graph so far.

        NoReportError when the project has not run.
        """
        project = self.get(project_id)
        markdown = self.store.get_report(project_id)
        stored = self._stored_report(project_id) if markdown is not None else None
        if markdown is not None and stored is not None:
            return markdown, stored
        # A run still going or killed (what it has so far), or a report stored before its data was.
        graph = self.graph(project_id)
        if not len(graph):
            raise NoReportError(project_id)
        stopped = project.error if markdown is not None and project.status is ProjectStatus.STOPPED else None
        value = build_report(graph, stopped)
        return (markdown if markdown is not None else to_markdown(value)), value

    def export(self, project_id: str) -> dict[str, Any]:
        """Everything stored about the project: record, graph, report (None before a run) and calls."""
        project = self.get(project_id)
        graph = self.graph(project_id)
        try:
            markdown, report = self.report(project_id)
        except NoReportError:
            markdown, data = None, None
        else:
            data = report.model_dump(mode="json")
        return {
            "project": project.to_dict(),
            "graph": graph.to_dict(),
            "report_markdown": markdown,
            "report": data,
            "calls": self.calls(project_id),
        }

    def knowledge(self, project_id: str, query: str | None = None) -> Sequence[KnowledgeEntry]:
        """What the project's finished tasks learned, in the order they finished; with a ``query``, the
        (at most 10) entries that share the most rare words with it, best first."""
        self.get(project_id)
        knowledge = KnowledgeStore(self.store, project_id)
        return knowledge.entries() if query is None else knowledge.search(query)

    def _stored_report(self, project_id: str) -> Report | None:
        data = self.store.get_report_data(project_id)
        if data is None:
            return None
        try:
            return Report.model_validate(data)
        except ValidationError:
            return None  # stored by another version of Sentient: rebuilt from the graph instead

    # -- creating --------------------------------------------------------------------------

    def create(
        self,
        goal: str,
        profile: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        *,
        project_id: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ProjectRecord:
        """Store a new project (status ``created``) with its profile's settings plus ``overrides``.

        ``options`` say how it runs (model, offline, ``docs`` folder) and are kept with it. Its
        language is the goal's when none is given and it is detected with confidence.
        """
        profile_name = profile or DEFAULT_PROFILE
        settings = with_goal_language(self.settings_for(profile_name, overrides or {}), goal)
        project_id = project_id or new_project_id(goal)
        return self.store.create_project(
            project_id, goal, profile_name, settings.model_dump(mode="json"), dict(options or {})
        )

    def settings_for(self, profile: str, overrides: Mapping[str, Any]) -> EngineSettings:
        """A profile's engine settings plus ``overrides`` (ProfileNotFoundError, ConfigError)."""
        return merge_settings(self.registry.profile(profile).settings, overrides)

    def settings_of(self, record: ProjectRecord) -> EngineSettings:
        """A stored project's engine settings (its profile's, as stored with it)."""
        return stored_settings(self.registry.profile(record.profile).settings, record.settings)

    def researcher(
        self,
        profile: str,
        *,
        engine_settings: EngineSettings,
        model: Model | str | None = None,
        reviewer: PlanReviewer | None = None,
        docs: Path | DocsFolder | DocsIndex | None = None,
        settings: Settings | None = None,
    ) -> Researcher:
        """What runs a project of ``profile``: its models (checked now), reviewer and docs."""
        return Researcher(
            self.registry.profile(profile),
            settings or self.settings,
            engine_settings=engine_settings,
            model=model if isinstance(model, Model) else None,
            model_string=model if isinstance(model, str) else None,
            reviewer=reviewer,
            docs=docs,
            gates=self.gates,
        )

    def resume_researcher(
        self,
        record: ProjectRecord,
        *,
        model: str | None = None,
        offline: bool = False,
        docs: Path | None = None,
        reviewer: PlanReviewer | None = None,
        agent_timeout_s: float | None = None,
    ) -> Researcher:
        """What continues ``record``: the model, offline and docs options stored with it, except
        what is given now, which is recorded with the project (under ``overrides``)."""
        stored = record.options
        settings = self.settings
        if stored.get("default_model"):
            settings = settings.model_copy(update={"model": stored["default_model"]})
        if offline or stored.get("offline"):
            settings = settings.model_copy(update={"offline": True})
        folder = docs or (Path(stored["docs"]) if stored.get("docs") else None)
        # The provider clients get the run's per-attempt timeout too (the stored one, or the one given now).
        timeout = agent_timeout_s or record.settings.get("agent_timeout_s")
        profile = self.registry.profile(record.profile)
        researcher = self.researcher(
            record.profile,
            engine_settings=merge_settings(profile.settings, {"agent_timeout_s": timeout}),
            model=model or stored.get("model"),
            reviewer=reviewer,
            docs=folder,
            settings=settings,
        )
        given = {
            "model": model if model and model != stored.get("model") else None,
            "offline": True if offline and not stored.get("offline") else None,
            "docs": str(docs.resolve()) if docs and str(docs.resolve()) != stored.get("docs") else None,
        }
        changed = {k: v for k, v in given.items() if v is not None}
        if changed:
            options = {**stored, **researcher.options()}
            options["overrides"] = [*stored.get("overrides", []), {"at": time.time(), **changed}]
            self.store.set_options(record.project_id, options)
        elif not stored:  # a project stored before options were: remember how it runs from now on
            self.store.set_options(record.project_id, researcher.options())
        return researcher

    # -- starting --------------------------------------------------------------------------

    def check_free(self, project_id: str) -> ProjectRecord:
        """The project, unless another worker holds it (ProjectBusyError)."""
        record = self.get(project_id)
        if record.status is ProjectStatus.RUNNING and not self.store.holds(record) and owner_alive(record):
            raise ProjectBusyError(project_id, record.owner_pid, record.owner_host)
        return record

    def restart(self, project_id: str, goal: str | None = None, profile: str | None = None) -> ProjectRecord:
        """Make the project ready to execute from scratch: a finished one is reset; a new goal or
        profile makes it a different project under the same id (its nodes, calls and reviews go)."""
        record = self.check_free(project_id)
        new_goal = goal or record.goal
        new_profile = profile or record.profile
        if new_goal != record.goal or new_profile != record.profile:
            settings = record.settings
            if new_profile != record.profile:
                settings = self.settings_for(new_profile, {}).model_dump(mode="json")  # the new profile's defaults
            self.store.delete_project(project_id)
            return self.store.create_project(project_id, new_goal, new_profile, settings, forgotten(record.options))
        if record.status is not ProjectStatus.CREATED:
            self.store.reset_project(project_id)
        if forgotten(record.options) != record.options:  # instructions were for the tasks just deleted
            self.store.set_options(project_id, forgotten(record.options))
        return self.get(project_id)

    def resume_mode(self, project_id: str) -> Mode:
        """How the project continues: ``execute`` (never started) or ``resume``; ProjectCompletedError
        when it completed, ProjectBusyError when another live process runs it."""
        record = self.check_free(project_id)
        if record.status is ProjectStatus.COMPLETED and pending_rerun(record.options) is None:
            raise ProjectCompletedError(project_id)
        return "execute" if record.status is ProjectStatus.CREATED else "resume"

    async def execute(
        self,
        researcher: Researcher,
        project_id: str,
        *,
        output_dir: Path | None = None,
        subscribers: Iterable[Subscriber] = (),
        write_files: bool = True,
    ) -> RunResult:
        """Run the stored project from its root."""
        record = self.get(project_id)
        return await run_project(
            researcher,
            record.goal,
            project_id=project_id,
            store=self.store,
            settings=researcher.engine_settings,
            output_dir=output_dir,
            subscribers=subscribers,
            write_files=write_files,
        )

    async def resume(self, researcher: Researcher, project_id: str, options: RunOptions | None = None) -> RunResult:
        """Continue the stored project: DONE nodes are kept, the rest runs again."""
        return await resume_project(researcher, project_id, store=self.store, options=options)

    def request_rerun(
        self, project_id: str, task_id: str, *, replan: bool = False, instructions: str | None = None
    ) -> Rerun:
        """Store a rerun of one node (:func:`sentient.projects.rerun.request_rerun`); the next resume
        applies it (a server starts one, a worker takes it)."""
        return request_rerun(self.store, project_id, task_id, replan=replan, instructions=instructions)

    # -- follow-up questions -----------------------------------------------------------------

    def ask(self, project_id: str, question: str) -> ProjectRecord:
        """Store a follow-up question of a project that ran, as a new project (status ``created``) that
        follows it (:mod:`sentient.projects.followups`); execute it as any project.

        ProjectNotFoundError, InvalidGoalError (an empty question), ProjectRunningError while a live
        process runs the project, ProjectStateError before its first run.
        """
        return create_followup(self.store, project_id, question)

    def followups(self, project_id: str) -> Records:
        """The follow-up questions asked of the project, oldest first."""
        self.get(project_id)
        return self.store.projects_with_option(FOLLOWS, project_id)

    # -- stopping --------------------------------------------------------------------------

    def check_running(self, project_id: str) -> ProjectRecord:
        """The project, if this process runs it and so may stop it: ProjectBusyError when another
        worker holds it (that worker stops it), ProjectNotRunningError when none does."""
        record = self.get(project_id)
        if record.status is not ProjectStatus.RUNNING or not owner_alive(record):
            raise ProjectNotRunningError(project_id)
        if not self.store.holds(record):
            raise ProjectBusyError(project_id, record.owner_pid, record.owner_host)
        return record

    def record_stop(self, project_id: str, *, interrupted: bool) -> None:
        """Record the end of a run stopped from outside: ``interrupted`` when its process is shutting
        down (the next start resumes it), else ``cancelled`` unless the run recorded its own end.
        Nothing changes once another worker holds the project."""
        if interrupted:
            self.store.set_status(project_id, ProjectStatus.INTERRUPTED, owner=self.store.owner)
        elif self.get(project_id).status is ProjectStatus.RUNNING:
            self.store.set_status(project_id, ProjectStatus.CANCELLED, owner=self.store.owner)

    # -- reviews ---------------------------------------------------------------------------

    def open_review(self, project_id: str, request: ReviewRequest, timeout_s: float | None) -> Review:
        """The stored review of the node's plan round (or tool call), stored pending now when there is
        none (a run resumed after a restart asks again for the same round and finds it, answered or not)."""
        found = self.store.find_review(project_id, request.task_id, request.round)
        if found is not None:
            return Review.model_validate(found)
        now = time.time()
        review = Review(
            review_id=uuid.uuid4().hex,
            project_id=project_id,
            task_id=request.task_id,
            goal=request.goal,
            layer=request.layer,
            round=request.round,
            kind=request.kind,
            plan=request.plan.model_dump(mode="json") if request.plan is not None else None,
            tool_call=asdict(request.tool_call) if request.tool_call is not None else None,
            context=request.context,
            created_at=now,
            deadline=now + timeout_s if timeout_s else None,
            status="pending",
        )
        self.store.add_review(review.model_dump(mode="json", exclude={"decision", "answered_at"}))
        return review

    def review(self, review_id: str) -> Review:
        """One review; ReviewNotFoundError otherwise."""
        return Review.model_validate(self.store.get_review(review_id))

    def pending_reviews(self, project_id: str) -> Reviews:
        """The project's reviews waiting for an answer, oldest first."""
        self.get(project_id)
        return [Review.model_validate(row) for row in self.store.pending_reviews(project_id)]

    def reviews(self, project_id: str, task_id: str | None = None) -> Reviews:
        """Every review of the project (or of one of its nodes), answered ones included, oldest first."""
        self.get(project_id)
        return [Review.model_validate(row) for row in self.store.reviews(project_id, task_id)]

    def answer_review(self, review_id: str, answer: ReviewAnswer, *, by: str) -> Review:
        """Record the answer of a pending review (``by`` says who gave it); returns the answered review.

        ReviewNotFoundError, ReviewAlreadyAnsweredError (the first answer stands, also when two
        race), UnusablePlanError for an edited plan that cannot run, UnfitAnswerError for an answer
        the review's kind does not take (a tool call modified).
        """
        review = self.review(review_id)
        if not review.pending:
            raise ReviewAlreadyAnsweredError(review_id)
        unfit = review.unfit(answer)
        if unfit is not None:
            raise UnfitAnswerError(review_id, unfit)
        problems = answer.problems()
        if problems:
            raise UnusablePlanError(review_id, problems)
        decision = answer.decision(by, time.time())
        return Review.model_validate(self.store.answer_review(review_id, decision.model_dump(mode="json")))

    # -- deleting --------------------------------------------------------------------------

    def check_stopped(self, project_id: str) -> ProjectRecord:
        """The project, unless a live process (this one included) runs it: ProjectRunningError."""
        record = self.get(project_id)
        if record.status is ProjectStatus.RUNNING and owner_alive(record):
            raise ProjectRunningError(
                project_id,
                f"project '{project_id}' is running in process {record.owner_pid}"
                + (f" on {record.owner_host}" if record.owner_host else "")
                + ":"
                " stop it first (Ctrl-C in its terminal, or cancel it in the server)",
            )
        return record

    def delete(self, project_id: str) -> None:
        """Delete the project, its follow-up questions and their folders; ProjectRunningError while
        a live process runs one of them."""
        self.check_stopped(project_id)
        threads = self.followups(project_id)
        for followup in threads:
            self.check_stopped(followup.project_id)
        for followup in threads:
            self.delete(followup.project_id)
        folder = self.folder(project_id)
        self.store.delete_project(project_id)
        if folder.is_symlink():
            folder.unlink()
        elif folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
