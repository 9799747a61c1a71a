"""RunManager: one engine task per running project; start, cancel, resume, delete, shut down.

Projects live in the store; a running project also has a :class:`Run` here, whose coroutine
runs on the engine loop (reached through :class:`~sentient_server.bridge.EngineLoop`). There is no
"current project": every operation names its project, and its events go to its room only.

The same manager serves a web process and a ``sentient worker``. A web process given a job queue
(``SENTIENT_QUEUE_URL``) runs nothing itself: starting a project queues it, and a worker's
manager takes it (:meth:`RunManager.take`). Whoever holds a project serves the commands that
other processes forward to it (:meth:`RunManager.serve_forwarded`: joins, cancels, review answers).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from loguru import logger

from sentient.exceptions import ConfigError, SentientError
from sentient.graph.node import TaskNode
from sentient.projects import (
    DocsNotAllowedError,
    ProjectCompletedError,
    ProjectNotRunningError,
    ProjectRunningError,
    ProjectService,
    Researcher,
    RunOptions,
)
from sentient.projects.service import DEFAULT_PROFILE, Mode
from sentient.store import (
    LeaseLostError,
    NodeNotFoundError,
    ProjectBusyError,
    ProjectNotFoundError,
    ProjectRecord,
    ProjectStatus,
)
from sentient.structured import check_output_schema
from sentient.tools.docs_search import DocsFolder

from .bridge import EngineLoop
from .choices import CHOICES, checked_model, checked_offline, run_model, run_settings
from .config import DOCS_ROOTS_ENV, ServerSettings
from .errors import as_api_error, bad_request
from .events import Broadcaster, ProjectFeed, room_of
from .jobqueue import ProjectQueue
from .relay import Cancel, Delete, Join, OwnerRelay, ReviewAnswered
from .responses import (
    Followup,
    FollowupList,
    Graph,
    ProjectEvent,
    ProjectResponse,
    ProjectSnapshot,
    ReportResponse,
    ReviewResponse,
)
from .reviews import ReviewBroker
from .schemas import valid_project_id

Stopping = Literal["cancel", "delete", "shutdown"]
_STRENGTH: dict[Stopping, int] = {"shutdown": 0, "cancel": 1, "delete": 2}


class ShuttingDownError(SentientError):
    """This process is stopping and starts no more runs (a worker queues the project again)."""

    def __init__(self, project_id: str) -> None:
        self.project_id = project_id
        super().__init__(f"project '{project_id}' was not started: this process is shutting down")


@dataclass
class Run:
    """A project's run in progress."""

    project_id: str
    future: concurrent.futures.Future[None] | None = None
    feed: ProjectFeed | None = None
    stopping: Stopping | None = None
    ended: concurrent.futures.Future[None] = field(default_factory=concurrent.futures.Future)

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the run ended (its end recorded, the manager done with it) within ``timeout`` seconds."""
        return not concurrent.futures.wait([self.ended], timeout).not_done


class RunManager:
    """Drives project runs on the engine loop; the lifecycle itself is :class:`ProjectService`'s.

    What is left here is what a server adds: one future per running project (cancel, shut
    down), a lock per project, the Socket.IO feed and announcements, and the docs-roots policy.
    With a ``queue``, projects are queued for workers instead of run here.
    """

    def __init__(
        self,
        config: ServerSettings,
        service: ProjectService,
        engine: EngineLoop,
        broadcaster: Broadcaster,
        reviews: ReviewBroker,
        relay: OwnerRelay | None = None,
        queue: ProjectQueue | None = None,
    ) -> None:
        self.config = config
        self.service = service
        self.store = service.store
        self.registry = self.service.registry
        self._engine = engine
        self._broadcaster = broadcaster
        self._reviews = reviews
        self._relay = relay
        self._queue = queue
        self._runs: dict[str, Run] = {}
        self._closing = False  # set by shutdown: no run starts after it collected the runs to stop
        self._lock = threading.Lock()
        # Execute, resume, cancel and delete of one project run one at a time: each reads the
        # project's state and acts on it, and two interleaved could reset a graph under a run.
        self._project_locks: dict[str, threading.Lock] = {}

    # -- reading --------------------------------------------------------------------------------

    @property
    def running_count(self) -> int:
        with self._lock:
            return len(self._runs)

    def is_running(self, project_id: str) -> bool:
        with self._lock:
            return project_id in self._runs

    def record(self, project_id: str) -> ProjectRecord:
        """The store record; ProjectNotFoundError or InvalidProjectIdError (both 404)."""
        return self.service.get(project_id)

    def project(self, project_id: str) -> ProjectResponse:
        return ProjectResponse.of(self.record(project_id))

    def projects(self) -> list[ProjectResponse]:
        """Every project, newest first."""
        return [ProjectResponse.of(record) for record in self.service.list()]

    def live_graph(self, project_id: str) -> Graph | None:
        """The running project's graph, read on the engine loop; None when not running."""
        with self._lock:
            run = self._runs.get(project_id)
        if run is None or run.feed is None:
            return None
        feed = run.feed
        return self._engine.call(feed.snapshot)

    def graph(self, project_id: str) -> Graph:
        self.record(project_id)
        live = self.live_graph(project_id)
        if live is not None:
            return live
        return self.stored_graph(project_id)

    def node(self, project_id: str, task_id: str) -> TaskNode:
        """A node as the running project has it, else as stored; NodeNotFoundError (404)."""
        live = self.live_graph(project_id)
        if live is None:
            return self.service.node(project_id, task_id)
        if task_id not in live.nodes:
            raise NodeNotFoundError(project_id, task_id)
        return live.nodes[task_id]

    def stored_graph(self, project_id: str) -> Graph:
        return Graph.of(self.service.graph(project_id))

    # -- creating and starting ----------------------------------------------------------------

    def create(
        self, goal: str, profile: str | None, config: dict[str, Any], project_id: str | None = None
    ) -> ProjectResponse:
        """Store a new project (status ``created``); its settings are validated now, and its
        choices (``config.docs``, checked against the docs roots, ``config.model``,
        ``config.offline``) are kept with it."""
        overrides = {k: v for k, v in config.items() if v is not None}
        chosen = {key: overrides.pop(key) for key in CHOICES if key in overrides}
        if "output_schema" in overrides:  # named as the client sent it: config.output_schema
            check_output_schema(overrides["output_schema"], "config.output_schema")
        options = self._options(chosen, profile or DEFAULT_PROFILE)
        if project_id is not None and not valid_project_id(project_id):
            raise bad_request(f"'{project_id}' is not a valid project id.", "invalid_id")
        return ProjectResponse.of(self.service.create(goal, profile, overrides, project_id=project_id, options=options))

    def execute(self, project_id: str, goal: str | None = None, profile: str | None = None) -> ProjectResponse:
        """Start the project from scratch (a finished one is reset); 409 while it runs."""
        self.record(project_id)
        with self._project_lock(project_id):
            self._wait_if_finishing(project_id)
            with self._lock:
                self._refuse_if_running(project_id)
                self.service.restart(project_id, goal, profile)
                self._start(project_id, "execute")
            return self.project(project_id)

    def _refuse_if_running(self, project_id: str) -> None:
        """ProjectRunningError while this server runs the project (the service refuses another process's)."""
        if project_id in self._runs:
            raise ProjectRunningError(project_id)

    def resume(self, project_id: str) -> ProjectResponse:
        """Continue a stopped project, keeping its finished nodes; 409 if it runs or completed."""
        self.record(project_id)
        with self._project_lock(project_id):
            self._wait_if_finishing(project_id)
            with self._lock:
                self._refuse_if_running(project_id)
                self._start(project_id, self.service.resume_mode(project_id))
            return self.project(project_id)

    def rerun(
        self, project_id: str, task_id: str, *, replan: bool = False, instructions: str | None = None
    ) -> ProjectResponse:
        """Run one node of a project that ran again (its subtree rebuilt, its ancestors aggregated
        again), as a resume that applies the stored rerun first; 409 while it runs, 400 for the root."""
        self.record(project_id)
        with self._project_lock(project_id):
            self._wait_if_finishing(project_id)
            with self._lock:
                self._refuse_if_running(project_id)
                self.service.request_rerun(project_id, task_id, replan=replan, instructions=instructions)
                self._start(project_id, "resume")
            return self.project(project_id)

    def ask(self, project_id: str, question: str) -> ProjectResponse:
        """Start a follow-up question of a project that ran, as a project that follows it
        (:mod:`sentient.projects.followups`); 400 for an empty question, 409 while the project runs
        or before its first run. The project itself is left as it is."""
        self.record(project_id)
        with self._project_lock(project_id):
            self._wait_if_finishing(project_id)
            with self._lock:
                self._refuse_if_running(project_id)
                followup = self.service.ask(project_id, question)
                self._start(followup.project_id, "execute")
        return self.project(followup.project_id)

    def followups(self, project_id: str) -> FollowupList:
        """The follow-up questions of the project, oldest first, each with its answer once it has one."""
        return FollowupList(followups=[self._followup(record) for record in self.service.followups(project_id)])

    def _followup(self, record: ProjectRecord) -> Followup:
        project = ProjectResponse.of(record)
        if not record.has_report:
            return Followup(project=project)
        markdown, value = self.service.report(record.project_id)
        partial = value.partial or record.status is not ProjectStatus.COMPLETED
        return Followup(
            project=project, answer=ReportResponse(**{**dict(value), "partial": partial}, markdown=markdown)
        )

    def cancel(self, project_id: str) -> ProjectResponse:
        """Ask the run to stop; the project ends ``cancelled`` (announced by ``project_completed``).

        Whether it can be cancelled is the service's to say (ProjectNotRunningError, or
        ProjectBusyError when another process runs it); stopping this server's run is done here,
        and another process's run is asked to stop through the relay (ProjectBusyError only when
        that process does not listen). A project queued for a worker that none has taken yet is
        withdrawn from the queue and ends ``cancelled`` at once.

        The project's status is announced (``project_status``) here, unless the run is another
        process's: that process ends it and announces the end, in order with its diffs, which
        this process's own clients would otherwise get out of order (relay.py, "Order").
        """
        forwarded = False
        with self._project_lock(project_id):
            try:
                with self._lock:
                    self.service.check_running(project_id)
                    run = self._runs.get(project_id)  # the store says this process runs it: its run is here
                    if run is not None:
                        self._stop(run, "cancel")
            except ProjectBusyError:
                if not self._forward(Cancel(project_id=project_id), self.record(project_id)):
                    raise
                forwarded = True
            except ProjectNotRunningError:
                if not self._withdraw(project_id):
                    raise
            project = self.project(project_id)
        if not forwarded:
            self._broadcaster.emit("project_status", ProjectEvent(project=project), room_of(project_id))
        return project

    def _withdraw(self, project_id: str) -> bool:
        """Cancel a project that waits in the queue (True), before any worker takes it."""
        if not self._take_queued(project_id):
            return False
        self.store.set_status(project_id, ProjectStatus.CANCELLED, owner=self.store.owner)
        self._engine.submit(self._announce("project_completed", project_id))
        return True

    def _take_queued(self, project_id: str) -> bool:
        """Take the project's queued mark (True when it waited in the queue): the worker that takes
        its job then drops it. False without a queue."""
        return self._queue is not None and self._engine.submit(self._queue.take(project_id)).result(timeout=10)

    def delete(self, project_id: str, timeout: float = 30.0) -> None:
        """Delete the project once no run of it is left: a run here is stopped and waited for; the
        process that runs it elsewhere is asked to do the same and delete it; a job waiting in the
        queue is withdrawn (the worker that takes it drops it)."""
        self.record(project_id)
        with self._project_lock(project_id):
            with self._lock:
                run = self._runs.get(project_id)
                if run is not None:
                    self._stop(run, "delete")
            if run is not None and not run.wait(timeout):
                raise _still_running(project_id, timeout)
            if run is not None or not self._delete_elsewhere(project_id, timeout):
                self.service.delete(project_id)
        with self._lock:
            self._project_locks.pop(project_id, None)

    def _delete_elsewhere(self, project_id: str, timeout: float) -> bool:
        """Have the live process that runs the project delete it: True once it is gone. False when
        no other process runs it (a job of it waiting in the queue is withdrawn first), or when the
        one that does never listens: the service's delete then refuses, naming it."""
        record = self.record(project_id)
        if record.status is not ProjectStatus.RUNNING:
            self._take_queued(project_id)
            return False
        if not self._forward(Delete(project_id=project_id), record):
            return False
        deadline = time.monotonic() + timeout
        while self.service.exists(project_id):
            if time.monotonic() > deadline:
                raise _still_running(project_id, timeout)
            time.sleep(0.05)
        return True

    def resume_interrupted(self) -> list[str]:
        """Resume the projects that were running when the server (or another process) stopped."""
        candidates: dict[str, None] = {}
        try:
            for record in self.store.stale_running():
                candidates[record.project_id] = None
        except Exception:
            logger.opt(exception=True).error("could not list stale running projects")
        for record in self.service.list():
            if record.status is ProjectStatus.INTERRUPTED:
                candidates[record.project_id] = None
        resumed = []
        for project_id in candidates:
            try:
                self.resume(project_id)
                resumed.append(project_id)
            except Exception as exc:
                logger.warning("project {}: not resumed on start: {}", project_id, exc)
        if resumed:
            logger.info("resumed {} interrupted project(s): {}", len(resumed), ", ".join(resumed))
        return resumed

    def shutdown(self, timeout: float = 15.0) -> None:
        """Stop every run so that the next server start resumes it (status ``interrupted``); a run
        already being cancelled or deleted ends as asked."""
        with self._lock:
            self._closing = True
            runs = list(self._runs.values())
            for run in runs:
                self._stop(run, "shutdown")
        for run in runs:
            if not run.wait(timeout):
                logger.warning("project {}: run did not stop within {}s", run.project_id, timeout)

    # -- internals ----------------------------------------------------------------------------

    @staticmethod
    def _stop(run: Run, why: Stopping) -> None:
        """Cancel the run's coroutine on the engine loop (the caller holds the lock). Of several
        reasons, the strongest stands: a delete over a cancel, and a cancel over a shutdown, so a
        cancel that a user was told was accepted is never turned into a hand-back to another worker."""
        if run.stopping is None or _STRENGTH[why] > _STRENGTH[run.stopping]:
            run.stopping = why
        if run.future is not None:
            run.future.cancel()

    def _project_lock(self, project_id: str) -> threading.Lock:
        with self._lock:
            return self._project_locks.setdefault(project_id, threading.Lock())

    def exists(self, project_id: str) -> bool:
        return self.service.exists(project_id)

    def _wait_if_finishing(self, project_id: str, timeout: float = 10.0) -> None:
        """A run whose project already reads as finished is only saving its end: wait for it,
        so that a client that saw ``completed`` can execute again at once."""
        with self._lock:
            run = self._runs.get(project_id)
        if run is not None and self.record(project_id).status is not ProjectStatus.RUNNING:
            run.wait(timeout)

    def _allowed_docs(self, docs: object) -> str:
        """``config.docs`` as a real folder inside one of the configured docs roots.

        The path is resolved (symlinks followed) before the check, so a link out of a root is
        refused like the path it points to; the answer for a path outside every root does not
        depend on whether it exists.
        """
        if not isinstance(docs, str) or not docs.strip() or "\x00" in docs:
            raise ConfigError("config.docs must be the path of a folder on the server.")
        roots = [Path(root).expanduser().resolve() for root in self.config.docs_roots]
        if not roots:
            raise DocsNotAllowedError(
                "config.docs is off on this server: its operator lists the folders clients may use "
                f"in {DOCS_ROOTS_ENV}."
            )
        folder = Path(docs).expanduser()
        if not folder.is_absolute():
            folder = roots[0] / folder
        try:
            resolved = folder.resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise ConfigError(f"config.docs: '{docs}' cannot be resolved.") from exc
        if not any(resolved.is_relative_to(root) for root in roots):
            raise DocsNotAllowedError(f"config.docs: '{docs}' is not inside a docs root of this server.")
        if not resolved.is_dir():
            raise ConfigError(f"config.docs: '{docs}' is not a folder on the server.")
        return str(resolved)

    def _options(self, chosen: dict[str, Any], profile: str) -> dict[str, Any] | None:
        """A new project's options from the client's choices, each checked (ConfigError: 400)."""
        options: dict[str, Any] = {}
        if "docs" in chosen:
            options["docs"] = self._allowed_docs(chosen["docs"])
        if "model" in chosen:
            options["model"] = checked_model(chosen["model"], self.config.sentient, self.registry.profile(profile))
        if "offline" in chosen:
            options["offline"] = checked_offline(chosen["offline"])
        return options or None

    def _docs_of(self, record: ProjectRecord) -> DocsFolder | None:
        """The project's docs folder (kept with it) when it lies inside a docs root of this server
        (a project stored by the CLI may name any folder), else the server's; indexed within the
        server's limits, with sources relative to it."""
        docs = record.options.get("docs", self._legacy_docs(record.project_id))
        roots = [Path(root).expanduser().resolve() for root in self.config.docs_roots]
        inside = isinstance(docs, str) and any(Path(docs).resolve().is_relative_to(root) for root in roots)
        folder = Path(docs) if inside and isinstance(docs, str) else self.config.docs
        if folder is None:
            return None
        return DocsFolder(
            folder,
            max_files=self.config.docs_max_files,
            max_bytes=self.config.docs_max_bytes,
            name_only=True,
        )

    def _legacy_docs(self, project_id: str) -> Any:
        """The docs folder of a project created before it was kept in the project's options (a
        ``server.json`` beside its files), so that upgrading the server loses no project's folder."""
        try:
            return json.loads((self.store.project_dir(project_id) / "server.json").read_text()).get("docs")
        except (OSError, ValueError, AttributeError):
            return None

    def _researcher(self, record: ProjectRecord) -> Researcher:
        engine_settings = self.service.settings_of(record)
        return self.service.researcher(
            record.profile,
            engine_settings=engine_settings,
            model=run_model(record.options, self.config.model),
            reviewer=self._reviews.reviewer_for(record.project_id, engine_settings),
            docs=self._docs_of(record),
            settings=run_settings(record.options, self.config.sentient),
        )

    def take(self, project_id: str) -> Run | None:
        """Start a queued project here (a worker), as its stored state says: execute it if it never
        started, else resume it. None when there is nothing to run: it completed or was deleted, or
        another live process holds it (the job was delivered twice, or the project queued twice);
        ShuttingDownError once :meth:`shutdown` has begun."""
        try:
            with self._project_lock(project_id), self._lock:
                if self._closing:
                    raise ShuttingDownError(project_id)
                if project_id in self._runs:
                    return None
                self._start(project_id, self.service.resume_mode(project_id))
                return self._runs[project_id]
        except (ProjectCompletedError, ProjectBusyError, ProjectNotFoundError) as exc:
            logger.info("project {}: nothing to run: {}", project_id, exc)
            return None
        except ConfigError as exc:  # this worker lacks what the web process accepted (a key, a model)
            logger.error("project {}: cannot run here: {}", project_id, exc)
            error = f"ConfigError: worker {self.store.owner} cannot run it: {exc}"
            self.store.set_status(project_id, ProjectStatus.FAILED, error, owner=self.store.owner)
            return None

    def _start(self, project_id: str, mode: Mode) -> None:
        """Submit the run, or queue it for a worker (the caller holds the lock and has checked it
        is not running)."""
        researcher = self._researcher(self.record(project_id))  # ConfigError: it cannot run (400)
        if self._queue is not None:
            self._engine.submit(self._queue.submit(project_id)).result(timeout=10)
            return
        # One conditional update: a CLI running the project at the same time keeps it (ProjectBusyError).
        self.store.claim(project_id)
        run = Run(project_id)
        self._runs[project_id] = run
        run.future = self._engine.submit(self._drive(run, researcher, mode))

    async def _drive(self, run: Run, researcher: Researcher, mode: Mode) -> None:
        project_id = run.project_id
        feed = ProjectFeed(project_id, self._broadcaster, self.config.flush_interval_s)
        run.feed = feed
        try:
            await self._announce("project_status", project_id)
            if mode == "execute":
                await self.service.execute(researcher, project_id, subscribers=[feed])
            else:
                await self.service.resume(researcher, project_id, RunOptions(subscribers=(feed,)))
        except asyncio.CancelledError:
            logger.info("project {}: run stopped ({})", project_id, run.stopping or "cancelled")
        except LeaseLostError as exc:  # another worker holds the project now: it records the end
            logger.error("project {}: {}", project_id, exc)
        except Exception as exc:
            logger.opt(exception=exc).error("project {}: run crashed", project_id)
            # Unless another worker holds it now (a lost lease): that one records its end.
            error = f"{type(exc).__name__}: {exc}"
            await asyncio.to_thread(self.store.set_status, project_id, "failed", error, owner=self.store.owner)
        finally:
            feed.close()
            await asyncio.shield(self._finish(run))

    async def _finish(self, run: Run) -> None:
        project_id = run.project_id
        try:
            if run.stopping is not None:
                await asyncio.to_thread(self.service.record_stop, project_id, interrupted=run.stopping == "shutdown")
        except Exception:
            logger.opt(exception=True).error("project {}: could not record the end of the run", project_id)
        with self._lock:
            self._runs.pop(project_id, None)
        run.ended.set_result(None)
        if run.stopping not in ("delete", "shutdown"):
            await self._announce("project_completed", project_id)

    async def _announce(self, event: str, project_id: str) -> None:
        try:
            project = await asyncio.to_thread(self.project, project_id)
        except Exception:
            logger.opt(exception=True).warning("project {}: cannot announce {}", project_id, event)
            return
        self._broadcaster.emit(event, ProjectEvent(project=project), room_of(project_id))

    # -- Socket.IO joins ------------------------------------------------------------------------

    def join(self, sid: str, project_id: str) -> None:
        """Put ``sid`` in the project's room and send it a snapshot; later diffs follow it.

        The live graph is read on the engine loop and the snapshot queued behind every diff
        already flushed, so the client never misses a change nor sees one out of order. With a
        :class:`~sentient_server.relay.OwnerRelay`, a project that another live process runs is
        joined there instead (``sid`` may be a client of any process: rooms and emits go
        through the message queue).
        """
        record = self.record(project_id)
        if self._forward(Join(project_id=project_id, sid=sid), record):
            return

        def on_loop() -> None:
            with self._lock:
                run = self._runs.get(project_id)
            graph = run.feed.snapshot() if run is not None and run.feed is not None else None
            self._broadcaster.submit(lambda: self._send_snapshot(sid, project_id, graph))

        self._engine.call(on_loop)

    def serve_forwarded(self, command: Join | Cancel | Delete | ReviewAnswered) -> None:
        """Serve a command that another process forwarded here, the holder of its project; a
        failed join goes to its client as ``error``, any other failure to the log."""
        try:
            if isinstance(command, Join):
                self.join(command.sid, command.project_id)
            elif isinstance(command, Cancel):
                self.cancel(command.project_id)
            elif isinstance(command, Delete):  # waits for the run to end: not on the relay's thread
                threading.Thread(target=self._serve_delete, args=(command.project_id,), daemon=True).start()
            else:
                self._reviews.wake(command.review_id)
        except SentientError as exc:
            error = as_api_error(exc)
            if not isinstance(command, Join):
                logger.warning("project {}: forwarded {} not served: {}", command.project_id, command.command, exc)
            elif error is not None:
                payload, sid = error.payload(), command.sid
                self._broadcaster.submit(
                    lambda: self._broadcaster_server().emit("error", payload, to=sid, namespace="/")
                )

    def _serve_delete(self, project_id: str) -> None:
        try:
            self.delete(project_id)
        except SentientError as exc:
            logger.warning("project {}: forwarded delete not served: {}", project_id, exc)

    def _forward(self, command: Join | Cancel | Delete, record: ProjectRecord) -> bool:
        """Hand the command to the live process that runs the project, when another one does (True)."""
        token = record.owner_token
        if self._relay is None or record.status is not ProjectStatus.RUNNING or token is None:
            return False
        if token == self.store.owner.token or self.is_running(record.project_id):
            return False
        return self._relay.forward(token, command)

    def _send_snapshot(self, sid: str, project_id: str, graph: Graph | None) -> None:
        server = self._broadcaster_server()
        server.enter_room(sid, room_of(project_id), namespace="/")
        try:
            project = self.project(project_id)
        except SentientError as exc:
            error = as_api_error(exc)
            server.emit(
                "error", error.payload() if error else {"code": "internal_error", "message": ""}, to=sid, namespace="/"
            )
            return
        snapshot = ProjectSnapshot(
            project=project,
            graph=graph if graph is not None else self.stored_graph(project_id),
            reviews=[ReviewResponse.of(review) for review in self.service.pending_reviews(project_id)],
        )
        server.emit("project_snapshot", snapshot.model_dump(mode="json"), to=sid, namespace="/")
        if graph is None and self._relay is not None:
            # Another process may have claimed the project since it was found not running here. A
            # claim after this second look comes before anything that process sends, so that all
            # reaches the client after this snapshot (in the room already); after a claim before
            # it, the join goes to that process, whose snapshot replaces this one.
            with contextlib.suppress(SentientError):  # deleted meanwhile: the client has its snapshot
                self._forward(Join(project_id=project_id, sid=sid), self.record(project_id))

    def _broadcaster_server(self) -> Any:
        return self._broadcaster.server


def _still_running(project_id: str, timeout: float) -> ProjectRunningError:
    return ProjectRunningError(project_id, f"project '{project_id}' did not stop within {timeout:g}s; try again.")
