"""Persistence and resume: every event reaches the store, and an interrupted run (cancelled,
stopped by a budget, or killed with SIGKILL) continues without re-running finished work."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.loops import CONCURRENCY, agent
from fakes.waiting import until

from sentient.agents.models.fake import FakeRequest, ScriptedModel, executor_answer
from sentient.agents.schemas import AtomizerOutput
from sentient.events import Event, NodeStatusChanged
from sentient.exceptions import RunError
from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus
from sentient.settings import Settings
from sentient.store import LeaseLostError, ProjectBusyError, ProjectNotFoundError, ProjectStatus, ProjectStore

GOAL = "Compare the event loops of asyncio and trio"


def wide_plan() -> ScriptedModel:
    """Six independent searches and a write-up: enough work to interrupt in the middle."""
    plan = PlanOutput(
        subtasks=[SubTask(goal=f"Look up fact {i} about event loops", task_type=TaskType.SEARCH) for i in range(6)]
        + [SubTask(goal="Write the comparison", task_type=TaskType.WRITE, depends_on_indices=[0, 1, 2])]
    )
    return ScriptedModel(script={"planner": plan}, latency=0.02)


def done_ids(store: ProjectStore, project_id: str) -> set[str]:
    try:
        graph = store.load_graph(project_id)
    except ProjectNotFoundError:  # the run has not created it yet
        return set()
    return {n.task_id for n in graph if n.status is TaskStatus.DONE}


async def test_every_status_change_is_persisted(settings: Settings, store: ProjectStore) -> None:
    result = await agent(settings, wide_plan()).arun(GOAL, project_id="p-persist", store=store)
    assert result.status == "completed"
    record = store.get_project("p-persist")
    assert record.status == "completed"
    assert record.stats["agent_calls"] == result.stats.agent_calls
    stored = store.load_graph("p-persist")
    assert {n.task_id: n.status for n in stored} == {n.task_id: n.status for n in result.graph}
    assert [h.status for h in stored.root.history] == [h.status for h in result.graph.root.history]
    assert store.get_report("p-persist") == result.report_markdown
    assert len(store.calls("p-persist")) == result.stats.agent_calls
    assert (settings.results_dir / "p-persist" / "report.html").is_file()


async def test_a_cancelled_run_resumes_without_rerunning_finished_nodes(
    settings: Settings, store: ProjectStore
) -> None:
    first = wide_plan()
    run = asyncio.create_task(agent(settings, first).arun(GOAL, project_id="p-cancel", store=store))

    await until(lambda: len(done_ids(store, "p-cancel")) >= 2, "two finished nodes")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert store.get_project("p-cancel").status == "cancelled"
    finished = done_ids(store, "p-cancel")
    assert finished, "some executors finished before the cancel"

    second = wide_plan()
    result = await agent(settings, second).aresume("p-cancel", store=store)
    assert result.status == "completed"
    rerun = {c.request.task_id for c in second.calls}
    assert not rerun & finished, f"finished nodes ran again: {rerun & finished}"
    assert "planner" not in {c.request.role for c in second.calls}, "the root's plan was kept"
    assert store.get_project("p-cancel").status == "completed"
    assert result.stats.agent_calls == len(first.calls_for()) - _unfinished(first) + len(second.calls)


def _unfinished(model: ScriptedModel) -> int:
    """Calls cut off by the cancel: they never finished, so they are not in the trace."""
    return sum(1 for c in model.calls if c.output is None and c.error is None)


async def test_a_budget_stop_writes_a_partial_report_and_can_be_resumed(
    settings: Settings, store: ProjectStore
) -> None:
    first = wide_plan()
    stopped = await agent(settings, first, max_llm_calls=3).arun(GOAL, project_id="p-budget", store=store)
    assert stopped.status == "stopped"
    assert "call budget reached" in (stopped.error or "")
    assert stopped.report_markdown.startswith(f"# {GOAL}\n\n> **Partial report**")
    finished_calls = [c for c in first.calls if c.output is not None]
    assert 3 <= len(finished_calls) <= 3 + CONCURRENCY - 1
    assert store.get_project("p-budget").status == "stopped"

    second = wide_plan()
    resumed = await agent(settings, second).aresume("p-budget", store=store, max_llm_calls=100)
    assert resumed.status == "completed"
    assert not {c.request.task_id for c in second.calls} & done_ids_before(stopped)


def answered_first(subtasks_fail: bool = False) -> ScriptedModel:
    """A question whose direct answer no source confirms, so it is planned (two lookups)."""

    def executor(request: FakeRequest) -> Any:
        if request.task_id == "root":
            return executor_answer(request, "Trio calls it the run loop.", sourced=False)
        if subtasks_fail:
            raise RuntimeError("search backend down")
        return executor_answer(request, "A fact.", sourced=False)

    return ScriptedModel(script={"atomizer": AtomizerOutput(is_atomic=False), "executor": executor}, latency=0.02)


@pytest.mark.parametrize("interrupted", ["after the plan", "while planning"])
async def test_an_unconfirmed_direct_answer_survives_the_interruption_of_its_plan(
    settings: Settings, store: ProjectStore, interrupted: str
) -> None:
    question = "Which loop runs coroutines in trio, and how does it differ from asyncio's?"
    first = answered_first()
    # The direct answer, the verifier's reading (no passage supports it), the model's own answer and the
    # plan, then stopped.
    run = agent(settings, first, skip_atomization=False, max_llm_calls=4).arun(
        question, project_id="p-first", store=store
    )
    if interrupted == "after the plan":
        stopped = await run
        assert stopped.status == "stopped"
        assert len(store.load_graph("p-first")) == 3
        # The partial report has the direct answer, marked as such.
        assert (
            "## Direct answer, before the research was planned\n\nTrio calls it the run loop.\n\n> **Not confirmed"
            in (stopped.report_markdown)
        )
    else:  # cancelled during the planner's call: no subtask exists yet
        first.latency = lambda request: 5.0 if request.role == "planner" else 0.0
        task = asyncio.create_task(run)
        await until(lambda: first.calls_for(role="planner"), "the planner's call")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(store.load_graph("p-first")) == 1
    assert [c.request.role for c in first.calls] == ["executor", "verifier", "executor", "planner"]
    assert store.load_graph("p-first").root.result == "Trio calls it the run loop."

    # Resumed: the question is not answered again, and the answer stands when the plan fails.
    second = answered_first(subtasks_fail=True)
    resumed = await agent(settings, second, skip_atomization=False).aresume("p-first", store=store, max_llm_calls=100)
    assert not second.calls_for(task_id="root", role="executor") and not second.calls_for(role="atomizer")
    assert resumed.status == "completed_with_failures"
    assert resumed.graph.root.result == "Trio calls it the run loop."
    assert store.get_report("p-first").split("\n\n", 1)[1].startswith("Trio calls it the run loop.")  # under the title


def done_ids_before(result: object) -> set[str]:
    graph = result.graph  # type: ignore[attr-defined]
    return {n.task_id for n in graph if n.status is TaskStatus.DONE}


def two_branches() -> ScriptedModel:
    """root plans a search and a write-up that depends on it; each of them plans two leaves."""
    plans = {
        "root": [
            SubTask(goal="Research why tuples are immutable", task_type=TaskType.SEARCH),
            SubTask(goal="Write up the tuple findings", task_type=TaskType.WRITE, depends_on_indices=[0]),
        ],
        "root.0": [
            SubTask(goal="Find whether immutable tuples hash", task_type=TaskType.SEARCH),
            SubTask(goal="Find how lists grow", task_type=TaskType.SEARCH),
        ],
        "root.1": [
            SubTask(goal="Explain when immutable tuples serve as keys", task_type=TaskType.WRITE),
            SubTask(goal="Write a closing summary", task_type=TaskType.WRITE),
        ],
    }
    return ScriptedModel(script={"planner": lambda request: PlanOutput(subtasks=plans[request.task_id])})


async def test_a_resumed_run_offers_what_the_interrupted_run_learned(settings: Settings, store: ProjectStore) -> None:
    """Context building reads the project's knowledge store: a task of the resumed run is offered
    the findings of work finished before the interruption, and nothing refills the store."""
    # Two plans, two searches, the verifier's reading of each one's passage and its judgement of
    # the answer, one aggregation: then out of budget.
    stopped = await agent(settings, two_branches(), max_depth=2, max_llm_calls=9).arun(
        GOAL, project_id="p-knowledge", store=store
    )
    assert stopped.status == "stopped"
    assert {k["task_id"] for k in store.knowledge("p-knowledge")} == {"root.0.0", "root.0.1", "root.0"}

    second = two_branches()
    resumed = await agent(settings, second, max_depth=2).aresume("p-knowledge", store=store, max_llm_calls=100)

    assert resumed.status == "completed"
    assert not second.calls_for(task_id="root.0.0")
    [leaf] = second.calls_for(role="executor", task_id="root.1.0")
    assert "Related finding (root.0.0): Find whether immutable tuples hash" in leaf.request.prompt
    assert {k["task_id"] for k in store.knowledge("p-knowledge")} == done_ids(store, "p-knowledge")


async def test_a_time_budget_stops_the_run(settings: Settings, store: ProjectStore) -> None:
    slow = wide_plan()
    slow.latency = 0.2
    result = await agent(settings, slow, max_time_s=0.3).arun(GOAL, project_id="p-time", store=store)
    assert result.status == "stopped"
    assert "time budget reached" in (result.error or "")


async def test_a_completed_project_cannot_be_resumed(settings: Settings, store: ProjectStore) -> None:
    await agent(settings, wide_plan()).arun(GOAL, project_id="p-done", store=store)
    with pytest.raises(RunError, match="already completed"):
        await agent(settings, wide_plan()).aresume("p-done", store=store)


async def test_resume_republishes_resets_for_subscribers(settings: Settings, store: ProjectStore) -> None:
    run = asyncio.create_task(agent(settings, wide_plan()).arun(GOAL, project_id="p-events", store=store))
    await until(lambda: done_ids(store, "p-events"), "a finished node")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    events: list[Event] = []
    await agent(settings, wide_plan()).aresume("p-events", store=store, subscribers=[events.append])
    resets = [e for e in events if isinstance(e, NodeStatusChanged) and e.old is TaskStatus.CANCELLED]
    assert resets, "each cancelled node is announced as reset"


# -- kill -9 in a separate process ------------------------------------------------------------------

DRIVER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    sys.path[:0] = [{here!r}, {tests!r}]
    from fakes.loops import agent
    from test_resume import wide_plan, GOAL
    from sentient.settings import Settings
    from sentient.store import ProjectNotFoundError, ProjectStore

    settings = Settings(cache_dir=Path({cache!r}), results_dir=Path({results!r}), database_url={url!r})
    model = wide_plan()
    model.latency = 0.3
    store = ProjectStore.open(settings.results_dir, settings.database_url, lease_s={lease_s!r})
    asyncio.run(agent(settings, model).arun(GOAL, project_id="p-kill", store=store))
    """
)


def _kill_mid_run(settings: Settings, store: ProjectStore, lease_s: float = 30.0) -> None:
    """Run p-kill in another process and kill it with SIGKILL once two nodes are DONE."""
    script = DRIVER.format(
        here=str(Path(__file__).parent),
        tests=str(Path(__file__).parents[1]),
        cache=str(settings.cache_dir),
        results=str(settings.results_dir),
        url=settings.database_url,
        lease_s=lease_s,
    )
    process = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"the driver exited early with {process.returncode}")
            if len(done_ids(store, "p-kill")) >= 2:
                break
            time.sleep(0.05)
        else:
            pytest.fail("no node finished within 60 s")
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == -signal.SIGKILL


def test_a_run_killed_with_sigkill_resumes_to_the_same_result(settings: Settings, store: ProjectStore) -> None:
    _kill_mid_run(settings, store)
    record = store.get_project("p-kill")
    assert record.status == "running", "a killed run leaves its project marked running"
    finished = done_ids(store, "p-kill")

    second = wide_plan()
    resumed = asyncio.run(agent(settings, second).aresume("p-kill", store=store))
    assert resumed.status == "completed"
    assert not {c.request.task_id for c in second.calls} & finished

    uninterrupted = asyncio.run(agent(settings, wide_plan()).arun(GOAL, project_id="p-whole", store=store))
    assert resumed.report_markdown == uninterrupted.report_markdown
    assert {n.task_id: n.status for n in resumed.graph} == {n.task_id: n.status for n in uninterrupted.graph}


def test_a_run_killed_on_another_machine_is_resumed_once_its_lease_expires(settings: Settings) -> None:
    lease_s = 1.0
    store = ProjectStore.open(settings.results_dir, settings.database_url, lease_s=lease_s)
    try:
        _kill_mid_run(settings, store, lease_s=lease_s)
        # As if the killed worker had run on another machine: its pid says nothing here, its lease does.
        store._update("p-kill", "UPDATE projects SET owner_host = ?", ["another-machine"])
        finished = done_ids(store, "p-kill")
        record = store.get_project("p-kill")
        if record.lease_expires_at is not None and record.lease_expires_at > record.read_at + 0.2:
            with pytest.raises(ProjectBusyError, match="on another-machine"):
                asyncio.run(agent(settings, wide_plan()).aresume("p-kill", store=store))

        time.sleep(lease_s + 0.1)
        second = wide_plan()
        resumed = asyncio.run(agent(settings, second).aresume("p-kill", store=store))
        assert resumed.status == "completed"
        assert not {c.request.task_id for c in second.calls} & finished, "finished nodes are never re-run"
    finally:
        store.close()


async def test_a_run_that_loses_its_lease_stops_and_writes_nothing_more(settings: Settings) -> None:
    lease_s = 0.6
    store = ProjectStore.open(settings.results_dir, settings.database_url, lease_s=lease_s)
    thief = ProjectStore.open(settings.results_dir, settings.database_url, lease_s=lease_s)
    try:
        model = wide_plan()
        model.latency = 0.3
        run = asyncio.create_task(agent(settings, model).arun(GOAL, project_id="p-lost", store=store))
        deadline = time.monotonic() + 30
        while not done_ids(thief, "p-lost") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert done_ids(thief, "p-lost"), "no node finished within 30 s"
        # Another worker holds the project now (as after a lease that expired while this one was frozen).
        thief._update("p-lost", "UPDATE projects SET owner_token = ?, owner_host = ?", [thief.owner.token, "elsewhere"])
        before = thief.load_graph("p-lost")

        with pytest.raises(LeaseLostError, match="no longer held by this process"):
            await asyncio.wait_for(run, 10)

        record = thief.get_project("p-lost")
        assert (record.status, record.owner_token) == (ProjectStatus.RUNNING, thief.owner.token), "the thief keeps it"
        after = thief.load_graph("p-lost")
        assert {n.task_id: n.status for n in after} == {n.task_id: n.status for n in before}, "nothing more written"
    finally:
        store.close()
        thief.close()
