"""Event-driven scheduling, checked against the fake model's recorded call timestamps.

Assertions compare recorded ``time.monotonic()`` stamps with each other (what started after
what ended), never against wall-clock thresholds.
"""

from __future__ import annotations

import itertools

from sentient.agents.models.fake import FakeCall, FakeRequest, ScriptedModel
from sentient.agents.schemas import AtomizerOutput
from sentient.events import NodeCreated, NodeStatusChanged
from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus

GOAL = "Explain how asyncio schedules coroutines."  # a report asked for: planned (no direct answer first)


def plan(*deps: list[int], of: str = "") -> PlanOutput:
    """A plan with one THINK subtask per argument, with those dependency indices; ``of`` names the
    planned task in the goals (a plan that repeats its task's goal is executed instead)."""
    return PlanOutput(
        subtasks=[
            SubTask(goal=f"step {i}{of}", task_type=TaskType.THINK, depends_on_indices=d) for i, d in enumerate(deps)
        ]
    )


def first_start(calls: list[FakeCall]) -> float:
    assert calls, "expected at least one call"
    return min(c.started_at for c in calls)


def last_finish(calls: list[FakeCall]) -> float:
    assert calls and all(c.finished_at for c in calls), "expected finished calls"
    return max(c.finished_at for c in calls)


def overlap(a: FakeCall, b: FakeCall) -> bool:
    return a.started_at < b.finished_at and b.started_at < a.finished_at


async def test_dependent_starts_as_soon_as_its_dependency_finishes(make_agent) -> None:
    # root.0 is quick, root.1 depends on it, root.2 is an unrelated slow sibling.
    slow = {"root.2": 0.4, "root.0": 0.02}
    model = ScriptedModel(script={"planner": plan([], [0], [])}, latency=lambda r: slow.get(r.task_id, 0.0))
    result = await make_agent(model, max_depth=1).arun(GOAL, write_files=False)

    assert result.status == "completed"
    dependency = model.calls_for(task_id="root.0")
    dependent = model.calls_for(task_id="root.1")
    (unrelated,) = model.calls_for(role="executor", task_id="root.2")
    assert first_start(dependent) >= last_finish(dependency)
    # It did not wait for the slow sibling: it started (and even ended) while that call was in flight.
    assert first_start(dependent) < unrelated.finished_at
    assert last_finish(dependent) < unrelated.finished_at


async def test_dependent_of_several_dependencies_waits_for_the_last_one(make_agent) -> None:
    latency = {"root.0": 0.01, "root.1": 0.15}
    model = ScriptedModel(script={"planner": plan([], [], [0, 1])}, latency=lambda r: latency.get(r.task_id, 0.0))
    result = await make_agent(model, max_depth=1).arun(GOAL, write_files=False)

    assert result.status == "completed"
    joined = first_start(model.calls_for(task_id="root.2"))
    assert joined >= last_finish(model.calls_for(task_id="root.1"))
    assert joined >= last_finish(model.calls_for(task_id="root.0"))


async def test_independent_siblings_run_concurrently(make_agent) -> None:
    model = ScriptedModel(script={"planner": plan([], [], [])}, latency=0.05)
    result = await make_agent(model, max_depth=1, max_concurrent_llm_calls=4).arun(GOAL, write_files=False)

    assert result.status == "completed"
    executors = model.calls_for(role="executor")
    assert sorted(c.request.task_id for c in executors) == ["root.0", "root.1", "root.2"]
    for a, b in itertools.combinations(executors, 2):
        assert overlap(a, b), f"{a.request.task_id} and {b.request.task_id} ran one after the other"


async def test_one_concurrent_call_means_calls_never_overlap(make_agent) -> None:
    model = ScriptedModel(script={"planner": plan([], [], [], [1])}, latency=0.01)
    agent = make_agent(model, max_depth=1, max_concurrent_llm_calls=1)
    result = await agent.arun(GOAL, write_files=False)

    assert result.status == "completed"
    calls = sorted(model.calls, key=lambda c: c.started_at)
    # The root's atomizer, the planner, four executors, for each of the three searches the
    # verifier's reading (without the answer) and its judgement (shown it), the aggregator.
    assert len(calls) == 13
    for earlier, later in itertools.pairwise(calls):
        assert later.started_at >= earlier.finished_at


async def test_parent_aggregates_only_after_all_children_finished(make_agent) -> None:
    # root -> [root.0 (planned: two leaves), root.1 (leaf)]; root.0.1 is the slowest call.
    def atomizer(request: FakeRequest) -> AtomizerOutput:
        # The root is planned. Atomizer calls for subtasks run on the parent's behalf; the subtask
        # is named in the task part of the prompt.
        return AtomizerOutput(is_atomic=request.layer > 0 and "step 0" not in request.prompt.split("## Your task")[-1])

    def latency(request: FakeRequest) -> float:
        return {"root.0.1": 0.1, "root.1": 0.03}.get(request.task_id, 0.0)

    def planner(request: FakeRequest) -> PlanOutput:
        return plan([], [], of=f" of {request.task_id}")

    model = ScriptedModel(script={"planner": planner, "atomizer": atomizer}, latency=latency)
    result = await make_agent(model, max_depth=2).arun(GOAL, write_files=False)

    assert result.status == "completed"
    assert {n.task_id for n in result.graph} == {"root", "root.0", "root.1", "root.0.0", "root.0.1"}
    (middle,) = model.calls_for(role="aggregator", task_id="root.0")
    assert middle.started_at >= last_finish(model.calls_for(task_id="root.0.0") + model.calls_for(task_id="root.0.1"))
    (final,) = model.calls_for(role="aggregator", task_id="root")
    others = [c for c in model.calls if c is not final]
    assert final.started_at >= last_finish(others)
    # ...and the quick leaf root.1 did not wait for the planned sibling's subtree.
    assert last_finish(model.calls_for(task_id="root.1")) < middle.started_at
    assert result.final_answer == f"Summary of root: {GOAL}"


async def test_pending_dependent_becomes_ready_right_when_its_dependency_is_done(make_agent, recorder) -> None:
    model = ScriptedModel(script={"planner": plan([], [0])}, latency=0.005)
    result = await make_agent(model, max_depth=1).arun(GOAL, write_files=False, subscribers=[recorder])

    assert result.status == "completed"
    moves = [(e.task_id, e.new) for e in recorder.of(NodeStatusChanged)]
    (created,) = [e for e in recorder.of(NodeCreated) if e.task_id == "root.1"]
    assert created.status is TaskStatus.PENDING
    dependency_done = moves.index(("root.0", TaskStatus.DONE))
    # The very next status change after root.0 is DONE releases and starts root.1.
    assert moves[dependency_done + 1 : dependency_done + 3] == [
        ("root.1", TaskStatus.READY),
        ("root.1", TaskStatus.EXECUTING),
    ]
    (planner,) = model.calls_for(role="planner")
    assert first_start(model.calls_for(task_id="root.0")) >= planner.finished_at
