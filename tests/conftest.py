"""Shared fixtures: temp settings, a tiny documents index, and agents driven by the ScriptedModel."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from fakes.postgres import PostgresServer, postgres_bindir
from fakes.redis_server import RedisServer
from loguru import logger

from sentient.agents.models.fake import ScriptedModel
from sentient.api import ProfiledSentientAgent
from sentient.events import Event, NodeCreated, NodeSnapshot, NodesRemoved, NodeStatusChanged, RunFinished, RunStarted
from sentient.graph.status import TERMINAL, TaskStatus
from sentient.hitl.protocol import PlanReviewer
from sentient.resources import agent_configs_dir
from sentient.settings import Settings
from sentient.tools.docs_search import DocsIndex

_STARTED = frozenset({TaskStatus.PLANNING, TaskStatus.EXECUTING})

# Tests never reach the internet: with this, web tools refuse at once (Settings reads it, and
# CLI and server subprocesses inherit it).
os.environ["SENTIENT_OFFLINE"] = "1"
# The library is silent until an application enables its logging; tests read its warnings.
logger.enable("sentient")


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings that write nothing outside a temp dir (tests also pass ``write_files=False``)."""
    base = tmp_path_factory.mktemp("sentient")
    return Settings(results_dir=base / "results", cache_dir=base / "cache")


@pytest.fixture(scope="session")
def sections_only(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """``settings`` with report sizes that quote nothing (no overview, no quotes after a section's
    answers), for tests of how a report's sections are researched and written."""
    base = tmp_path_factory.mktemp("sections-only")
    config = shutil.copytree(agent_configs_dir(), base / "agent_configs")
    agents = yaml.safe_load((config / "agents.yaml").read_text())
    for size in agents["report_lengths"].values():
        size["overview_quotes"] = size["search_quotes"] = 0
    (config / "agents.yaml").write_text(yaml.safe_dump(agents, allow_unicode=True))
    return Settings(results_dir=base / "results", cache_dir=base / "cache", config_dir=config)


@pytest.fixture(scope="session")
def docs_index(tmp_path_factory: pytest.TempPathFactory) -> DocsIndex:
    """A two-file index, so SEARCH executors never build the Python docs index."""
    folder = tmp_path_factory.mktemp("docs")
    (folder / "asyncio.md").write_text("# Asyncio\n\nThe event loop runs coroutines and tasks.\n")
    (folder / "threads.md").write_text("# Threads\n\nThreads share memory; the GIL serialises bytecode.\n")
    return DocsIndex.from_folder(folder)


AgentFactory = Callable[..., ProfiledSentientAgent]


@pytest.fixture(scope="session")
def make_agent(settings: Settings, docs_index: DocsIndex) -> AgentFactory:
    """Build a deep-research agent whose every model call goes to ``model``.

    Keyword arguments other than ``reviewer`` and ``profile`` are engine overrides
    (``max_depth``, ``failure_policy``, ``agent_timeout_s``...).
    """

    def make(
        model: ScriptedModel,
        *,
        reviewer: PlanReviewer | None = None,
        profile: str = "deep_research_agent",
        **engine: Any,
    ) -> ProfiledSentientAgent:
        return ProfiledSentientAgent.create_with_profile(
            profile, settings=settings, model=model, reviewer=reviewer, docs=docs_index, **engine
        )

    return make


class RunRecorder:
    """An event subscriber that keeps every event and, per node, the last status and the
    ``time.monotonic()`` at which the node first started work and at which it ended."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.status: dict[str, TaskStatus] = {}
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.removed: set[str] = set()
        self.created: dict[str, NodeSnapshot] = {}  # each node as it was announced
        self.moves: list[tuple[float, str, TaskStatus]] = []  # (monotonic time, task id, new status)
        self.hooks: list[Callable[[Event], None]] = []

    def __call__(self, event: Event) -> None:
        now = time.monotonic()
        self.events.append(event)
        if isinstance(event, RunStarted):
            for node in event.nodes:
                self.status[node.task_id] = node.status
        elif isinstance(event, NodeCreated):
            self.created[event.task_id] = event.node
            self.status[event.task_id] = event.status
        elif isinstance(event, NodeStatusChanged):
            self.status[event.task_id] = event.new
            self.moves.append((now, event.task_id, event.new))
            if event.new in _STARTED:
                self.started.setdefault(event.task_id, now)
            if event.new in TERMINAL:
                self.ended[event.task_id] = now
        elif isinstance(event, NodesRemoved):
            self.removed.update(event.task_ids)
        for hook in self.hooks:
            hook(event)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def final_statuses(self) -> dict[str, TaskStatus]:
        """The last status of every node still in the graph."""
        return {task_id: s for task_id, s in self.status.items() if task_id not in self.removed}

    @property
    def run_finished(self) -> RunFinished:
        (finished,) = self.of(RunFinished)
        return finished


@pytest.fixture
def recorder() -> RunRecorder:
    return RunRecorder()


@pytest.fixture(scope="session")
def new_recorder() -> Callable[[], RunRecorder]:
    """A factory, for tests (like hypothesis ones) that need a fresh recorder per example."""
    return RunRecorder


@pytest.fixture
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A fresh ``redis-server`` for one test (skipped without one, failed under CI=1)."""
    if not RedisServer.available():
        message = "redis-server not found: apt-get install -y redis-server"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


# -- PostgreSQL: the project store's shared backend ------------------------------------------------


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the session (skipped where PostgreSQL is not installed, failed on CI)."""
    bindir = postgres_bindir()
    if bindir is None:
        message = "PostgreSQL not found (no initdb): apt-get install -y postgresql"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    server = PostgresServer(bindir)
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    """Each backend of the project store in turn: None (SQLite in the test's results folder),
    then the URL of a new PostgreSQL database."""
    if request.param == "sqlite":
        return None
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_database()
