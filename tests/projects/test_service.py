"""ProjectService: the lifecycle on a real temp-dir store, driven by the scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.waiting import until

from sentient.agents.models.fake import ScriptedModel
from sentient.exceptions import ConfigError
from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus
from sentient.projects import (
    NoReportError,
    ProjectCompletedError,
    ProjectNotRunningError,
    ProjectRunningError,
    ProjectService,
    Researcher,
)
from sentient.settings import Settings
from sentient.store import (
    InvalidProjectIdError,
    NodeNotFoundError,
    Owner,
    ProjectBusyError,
    ProjectNotFoundError,
    ProjectStore,
)

GOAL = "Compare the event loops of asyncio and trio"
PROFILE = "general_agent"
ENGINE = {"max_depth": 1, "skip_atomization": True, "max_concurrent_llm_calls": 2}


def wide_plan() -> ScriptedModel:
    """Six independent searches and a write-up: enough work to interrupt in the middle."""
    plan = PlanOutput(
        subtasks=[SubTask(goal=f"Look up fact {i} about event loops", task_type=TaskType.SEARCH) for i in range(6)]
        + [SubTask(goal="Write the comparison", task_type=TaskType.WRITE, depends_on_indices=[0, 1, 2])]
    )
    return ScriptedModel(script={"planner": plan}, latency=0.02)


@pytest.fixture
def settings(tmp_path: Path, database_url: str | None) -> Settings:
    """On each backend of the store: SQLite, then PostgreSQL."""
    return Settings(
        cache_dir=tmp_path / "cache", results_dir=tmp_path / "results", offline=True, database_url=database_url
    )


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "loops.md").write_text("# Event loops\n\nAn event loop runs callbacks and coroutines.\n")
    return folder


@pytest.fixture
def service(settings: Settings) -> Iterator[ProjectService]:
    with ProjectStore.open(settings.results_dir, settings.database_url) as store:
        yield ProjectService(store, settings)


def researcher(service: ProjectService, project_id: str, model: ScriptedModel, docs: Path) -> Researcher:
    record = service.get(project_id)
    return service.researcher(record.profile, engine_settings=service.settings_of(record), model=model, docs=docs)


def done_ids(service: ProjectService, project_id: str) -> set[str]:
    return {n.task_id for n in service.graph(project_id) if n.status is TaskStatus.DONE}


# -- create, run, report -------------------------------------------------------------------


async def test_create_then_execute_then_report(service: ProjectService, docs: Path) -> None:
    created = service.create(GOAL, PROFILE, ENGINE, project_id="p1", options={"docs": str(docs)})
    assert created.status == "created"
    assert created.settings["max_depth"] == 1 and created.options == {"docs": str(docs)}
    with pytest.raises(NoReportError):
        service.report("p1")

    result = await service.execute(researcher(service, "p1", wide_plan(), docs), "p1")

    assert result.status == "completed"
    assert service.get("p1").status == "completed"
    markdown, report = service.report("p1")
    assert markdown == result.report_markdown
    assert report == result.report
    assert (service.folder("p1") / "report.md").read_text() == markdown
    exported = service.export("p1")
    assert exported["report_markdown"] == markdown
    assert len(exported["calls"]) == result.stats.agent_calls
    assert [p.project_id for p in service.list()] == ["p1"]


async def test_knowledge_lists_and_searches_what_the_finished_tasks_learned(
    service: ProjectService, docs: Path
) -> None:
    service.create(GOAL, PROFILE, ENGINE, project_id="p1")
    result = await service.execute(researcher(service, "p1", wide_plan(), docs), "p1")

    entries = service.knowledge("p1")
    assert [e.task_id for e in entries][-1] == "root"  # in the order they finished: the root last
    assert {e.task_id: (e.goal, e.result) for e in entries} == {
        n.task_id: (n.goal, n.result) for n in result.graph if n.status is TaskStatus.DONE
    }
    hits = service.knowledge("p1", "comparison")
    assert "root.6" in [e.task_id for e in hits]
    assert all("comparison" in f"{e.goal} {e.result}".lower() for e in hits)
    assert service.knowledge("p1", "zebra") == []


def test_settings_are_merged_once_with_one_error_style(service: ProjectService) -> None:
    with pytest.raises(ConfigError, match="unknown engine setting"):
        service.create(GOAL, PROFILE, {"max_deptth": 2})
    with pytest.raises(ConfigError) as info:
        service.create(GOAL, PROFILE, {"max_depth": -1})
    assert info.value.field == "max_depth"
    assert service.list() == []
    assert service.settings_for(PROFILE, {"max_depth": None}) == service.settings_for(PROFILE, {})


# -- resume, cancel ------------------------------------------------------------------------


async def test_cancel_then_resume_does_not_redo_done_nodes(service: ProjectService, docs: Path) -> None:
    service.create(GOAL, PROFILE, ENGINE, project_id="p2")
    first = wide_plan()
    run = asyncio.create_task(service.execute(researcher(service, "p2", first, docs), "p2"))
    await until(lambda: len(done_ids(service, "p2")) >= 2, "two finished nodes")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert service.get("p2").status == "cancelled"
    finished = done_ids(service, "p2")
    assert finished
    assert {e.task_id for e in service.knowledge("p2")} == finished
    assert service.resume_mode("p2") == "resume"

    second = wide_plan()
    result = await service.resume(researcher(service, "p2", second, docs), "p2")

    assert result.status == "completed"
    assert not {c.request.task_id for c in second.calls} & finished
    assert "planner" not in {c.request.role for c in second.calls}
    assert {e.task_id for e in service.knowledge("p2")} == done_ids(service, "p2")
    with pytest.raises(ProjectCompletedError):
        service.resume_mode("p2")


async def test_a_run_cancelled_before_its_engine_began_ends_cancelled(service: ProjectService, docs: Path) -> None:
    service.create(GOAL, PROFILE, ENGINE, project_id="p11")
    model = wide_plan()
    run = asyncio.create_task(service.execute(researcher(service, "p11", model, docs), "p11"))
    while service.get("p11").status != "running":  # claimed; the models load in a thread next
        await asyncio.sleep(0)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    assert not model.calls
    record = service.get("p11")
    assert (record.status, record.error) == ("cancelled", "cancelled")
    assert service.resume_mode("p11") == "resume"


def test_a_project_never_started_resumes_by_executing(service: ProjectService) -> None:
    service.create(GOAL, PROFILE, ENGINE, project_id="p3")
    assert service.resume_mode("p3") == "execute"


def test_a_project_another_live_process_runs_is_busy(service: ProjectService) -> None:
    service.create(GOAL, PROFILE, ENGINE, project_id="p4")
    service.store.claim("p4", Owner.local(1))  # init: alive, and not this process
    with pytest.raises(ProjectBusyError):
        service.resume_mode("p4")
    with pytest.raises(ProjectBusyError):
        service.restart("p4")


def test_only_a_project_this_process_runs_can_be_stopped_here(service: ProjectService) -> None:
    service.create(GOAL, PROFILE, ENGINE, project_id="p8")
    with pytest.raises(ProjectNotRunningError):
        service.check_running("p8")
    service.store.claim("p8", Owner.local(1))  # init: alive, and not this process
    with pytest.raises(ProjectBusyError):
        service.check_running("p8")
    service.store.set_status("p8", "interrupted")  # as if it had stopped; then this process claims it
    service.store.claim("p8")
    assert service.check_running("p8").status == "running"


@pytest.mark.parametrize(
    ("status", "interrupted", "ends"),
    [("running", False, "cancelled"), ("running", True, "interrupted"), ("completed", False, "completed")],
)
def test_a_stopped_run_ends_cancelled_or_interrupted_unless_it_recorded_its_end(
    service: ProjectService, status: str, interrupted: bool, ends: str
) -> None:
    service.create(GOAL, PROFILE, ENGINE, project_id="p9")
    service.store.claim("p9")
    if status != "running":
        service.store.release("p9", status)
    service.record_stop("p9", interrupted=interrupted)
    assert service.get("p9").status == ends
    with pytest.raises(ProjectNotRunningError):
        service.check_running("p9")


# -- nodes and calls -----------------------------------------------------------------------


async def test_a_node_and_its_calls_are_read_through_the_service(service: ProjectService, docs: Path) -> None:
    service.create(GOAL, PROFILE, ENGINE, project_id="p10")
    await service.execute(researcher(service, "p10", wide_plan(), docs), "p10")

    node = service.node("p10", "root.0")
    assert node.parent_id == "root" and node.status is TaskStatus.DONE
    assert [c["role"] for c in service.calls("p10", "root.0")] == ["executor", "verifier"]
    assert {c["task_id"] for c in service.calls("p10")} >= {"root", "root.0"}
    with pytest.raises(NodeNotFoundError):
        service.node("p10", "root.99")


# -- restart, delete -----------------------------------------------------------------------


async def test_restart_with_a_new_goal_is_a_new_project_under_the_same_id(service: ProjectService, docs: Path) -> None:
    service.create(GOAL, PROFILE, ENGINE, project_id="p5", options={"docs": str(docs)})
    await service.execute(researcher(service, "p5", wide_plan(), docs), "p5")

    record = service.restart("p5", goal="What is a coroutine?")

    assert (record.goal, record.status, record.options) == ("What is a coroutine?", "created", {"docs": str(docs)})
    assert len(service.graph("p5")) == 0
    assert service.store.calls("p5") == []


async def test_delete_removes_the_project_and_its_folder(service: ProjectService, docs: Path) -> None:
    service.create(GOAL, PROFILE, ENGINE, project_id="p6")
    await service.execute(researcher(service, "p6", wide_plan(), docs), "p6")
    assert service.folder("p6").is_dir()

    service.delete("p6")

    assert not service.folder("p6").exists()
    with pytest.raises(ProjectNotFoundError):
        service.get("p6")


def test_delete_refuses_a_project_a_live_process_runs(service: ProjectService) -> None:
    service.create(GOAL, PROFILE, ENGINE, project_id="p7")
    service.store.claim("p7", Owner.local(1))
    with pytest.raises(ProjectRunningError, match="running in process 1"):
        service.delete("p7")
    assert service.exists("p7")


# -- unknown projects ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        "get",
        "graph",
        "report",
        "export",
        "knowledge",
        "delete",
        "restart",
        "resume_mode",
        "check_running",
        "calls",
        "reviews",
    ],
)
def test_an_unknown_project_is_project_not_found(service: ProjectService, call: str) -> None:
    with pytest.raises(ProjectNotFoundError):
        getattr(service, call)("nope")
    with pytest.raises(InvalidProjectIdError):
        getattr(service, call)("../etc")
    assert not service.exists("nope") and not service.exists("../etc")


def test_a_node_of_an_unknown_project_is_project_not_found(service: ProjectService) -> None:
    with pytest.raises(ProjectNotFoundError):
        service.node("nope", "root")
