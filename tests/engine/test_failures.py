"""Failure policies, timeouts, all-children-failed, and cancelling a run."""

from __future__ import annotations

import asyncio

import pytest

from sentient.agents.models.fake import FakeRequest, ScriptedModel, default_response
from sentient.events import NodesRemoved, NodeStatusChanged
from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TERMINAL, TaskStatus

GOAL = "Compare asyncio and threads"
_S = TaskStatus


def plan(*deps: list[int], prefix: str = "step") -> PlanOutput:
    return PlanOutput(
        subtasks=[
            SubTask(goal=f"{prefix} {i}", task_type=TaskType.THINK, depends_on_indices=d) for i, d in enumerate(deps)
        ]
    )


def failing_executor(*task_ids: str, message: str = "provider exploded"):
    """An executor script that raises for the given task ids and answers normally otherwise."""

    def respond(request: FakeRequest):
        if request.task_id in task_ids:
            return RuntimeError(f"{message} on {request.task_id}")
        return default_response(request)

    return respond


def statuses(result) -> dict[str, TaskStatus]:
    return {n.task_id: n.status for n in result.graph}


# -- continue ---------------------------------------------------------------------------------


async def test_continue_runs_dependents_and_tells_the_aggregator_about_the_failure(make_agent) -> None:
    model = ScriptedModel(script={"planner": plan([], [0], []), "executor": failing_executor("root.0")})
    result = await make_agent(model, max_depth=1, failure_policy="continue").arun(GOAL, write_files=False)

    assert result.status == "completed_with_failures"  # the root finished, a subtask did not
    assert statuses(result) == {"root": _S.DONE, "root.0": _S.FAILED, "root.1": _S.DONE, "root.2": _S.DONE}
    assert "provider exploded on root.0" in result.graph.get("root.0").error
    (dependent,) = model.calls_for(role="executor", task_id="root.1")
    assert "Dependency root.0 did not finish" in dependent.request.prompt
    (aggregator,) = model.calls_for(role="aggregator", task_id="root")
    assert "Subtask root.0 did not finish" in aggregator.request.prompt
    assert "provider exploded on root.0" in aggregator.request.prompt
    assert result.final_answer


# -- fail_parent ------------------------------------------------------------------------------


# In flight: root.0 fails half a second in, long after root.2's call started (even on a loaded machine).
@pytest.mark.parametrize("failure_latency", [0.0, 0.5], ids=["sibling-not-started-yet", "sibling-in-flight"])
async def test_fail_parent_cancels_the_siblings_and_fails_the_run_with_the_reason(
    make_agent, failure_latency: float
) -> None:
    # root.0 fails; root.1 waits on it; root.2 is slow. With no latency root.0 fails within the
    # step that started both, so root.2's task is cancelled before it ever ran.
    model = ScriptedModel(
        script={"planner": plan([], [0], []), "executor": failing_executor("root.0")},
        latency=lambda r: {"root.2": 5.0, "root.0": failure_latency}.get(r.task_id, 0.0),
    )
    agent = make_agent(model, max_depth=1, failure_policy="fail_parent")
    result = await asyncio.wait_for(agent.arun(GOAL, write_files=False), timeout=60)  # a hang guard

    assert result.status == "failed"
    assert statuses(result) == {"root": _S.FAILED, "root.0": _S.FAILED, "root.1": _S.CANCELLED, "root.2": _S.CANCELLED}
    assert "subtask root.0 failed" in result.error
    assert "provider exploded on root.0" in result.error
    assert model.calls_for(task_id="root.1") == []  # the dependent never ran
    slow = model.calls_for(task_id="root.2")
    assert all(c.finished_at == 0.0 and c.output is None for c in slow)  # cancelled, never answered
    if failure_latency:
        assert len(slow) == 1  # it was in flight when cancelled
    assert model.calls_for(role="aggregator") == []
    assert result.final_answer is None


async def test_fail_parent_propagates_up_to_the_root(make_agent) -> None:
    model = ScriptedModel(  # each node's plan names its own steps (one that repeats its task is executed instead)
        script={
            "planner": lambda r: plan([], [], prefix=f"{r.task_id} step"),
            "executor": failing_executor("root.0.1"),
        },
    )
    agent = make_agent(model, max_depth=2, skip_atomization=True, failure_policy="fail_parent")
    result = await agent.arun(GOAL, write_files=False)

    assert result.status == "failed"
    assert result.graph.get("root.0").status is _S.FAILED
    assert result.graph.get("root").status is _S.FAILED
    assert "subtask root.0 failed" in result.error
    assert all(n.is_terminal for n in result.graph)


# -- replan -----------------------------------------------------------------------------------


async def test_replan_rebuilds_the_failed_work_and_keeps_what_is_done(make_agent, recorder) -> None:
    # root.2 finishes first; then root.0 fails; root.1 (waiting on root.0) is torn down.
    model = ScriptedModel(
        script={
            "planner": plan([], [0], []),
            "plan_modifier": plan([], [0], prefix="redo"),
            "executor": failing_executor("root.0"),
        },
        latency=lambda r: 0.05 if r.task_id == "root.0" else 0.0,
    )
    agent = make_agent(model, max_depth=1, failure_policy="replan", max_replans=1)
    result = await agent.arun(GOAL, write_files=False, subscribers=[recorder])

    assert result.status == "completed"
    (modifier,) = model.calls_for(role="plan_modifier")
    assert modifier.request.task_id == "root"
    assert "These subtasks failed" in modifier.request.prompt
    assert "- root.0 (step 0): model call failed: provider exploded on root.0" in (modifier.request.prompt)
    assert "Already done (keep): step 2" in modifier.request.prompt

    graph = result.graph
    assert graph.root.children == ["root.2", "root.3", "root.4"]
    assert "root.0" not in graph and "root.1" not in graph
    assert [graph.get(c).goal for c in ("root.3", "root.4")] == ["redo 0", "redo 1"]
    assert graph.get("root.4").depends_on == ["root.3"]
    assert all(graph.get(c).status is _S.DONE for c in graph.root.children)
    assert graph.root.replans == 1
    (removed,) = recorder.of(NodesRemoved)
    assert set(removed.task_ids) == {"root.0", "root.1"}
    assert len(model.calls_for(role="executor", task_id="root.2")) == 1  # kept, not redone
    assert model.calls_for(task_id="root.1") == []
    for new in ("root.3", "root.4"):
        assert len(model.calls_for(role="executor", task_id=new)) == 1
    (aggregator,) = model.calls_for(role="aggregator")
    assert aggregator.started_at >= modifier.finished_at
    assert "redo 1" in aggregator.request.prompt and "step 2" in aggregator.request.prompt


async def test_replans_exhausted_fall_back_to_continue(make_agent) -> None:
    # The first plan fails at root.0, the rebuilt one fails at root.2 (its first subtask).
    model = ScriptedModel(
        script={
            "planner": plan([], [0]),
            "plan_modifier": plan([], [0], prefix="redo"),
            "executor": failing_executor("root.0", "root.2"),
        }
    )
    agent = make_agent(model, max_depth=1, failure_policy="replan", max_replans=1)
    result = await agent.arun(GOAL, write_files=False)

    assert len(model.calls_for(role="plan_modifier")) == 1
    assert result.status == "completed_with_failures"  # the root finished, a subtask did not
    assert statuses(result) == {"root": _S.DONE, "root.2": _S.FAILED, "root.3": _S.DONE}
    (dependent,) = model.calls_for(role="executor", task_id="root.3")
    assert "Dependency root.2 did not finish" in dependent.request.prompt
    (aggregator,) = model.calls_for(role="aggregator")
    assert "provider exploded on root.2" in aggregator.request.prompt


async def test_no_replans_allowed_means_continue_straight_away(make_agent) -> None:
    model = ScriptedModel(script={"planner": plan([], [0]), "executor": failing_executor("root.0")})
    agent = make_agent(model, max_depth=1, failure_policy="replan", max_replans=0)
    result = await agent.arun(GOAL, write_files=False)

    assert model.calls_for(role="plan_modifier") == []
    assert result.status == "completed_with_failures"  # the root finished, a subtask did not
    assert statuses(result) == {"root": _S.DONE, "root.0": _S.FAILED, "root.1": _S.DONE}


async def test_a_failing_plan_modifier_fails_the_parent(make_agent) -> None:
    model = ScriptedModel(
        script={
            "planner": plan([], []),
            "plan_modifier": RuntimeError("modifier down"),
            "executor": failing_executor("root.0"),
        }
    )
    result = await make_agent(model, max_depth=1, failure_policy="replan").arun(GOAL, write_files=False)

    assert result.status == "failed"
    assert "replanning failed" in result.error and "modifier down" in result.error
    assert all(n.is_terminal for n in result.graph)


# -- timeouts and total failure --------------------------------------------------------------


async def test_a_call_past_its_timeout_fails_that_node_with_a_timeout_error(make_agent) -> None:
    model = ScriptedModel(script={"planner": plan([], [])}, latency=lambda r: 5.0 if r.task_id == "root.0" else 0.0)
    agent = make_agent(model, max_depth=1, agent_timeout_s=0.05, failure_policy="continue")
    result = await asyncio.wait_for(agent.arun(GOAL, write_files=False), timeout=60)  # a hang guard

    assert result.status == "completed_with_failures"  # the root finished, a subtask did not
    node = result.graph.get("root.0")
    assert node.status is _S.FAILED
    assert node.error == "agent call timed out after 0.05s"
    (call,) = model.calls_for(task_id="root.0")
    assert call.finished_at == 0.0  # interrupted, never answered
    assert result.graph.get("root.1").status is _S.DONE


async def test_when_every_child_fails_the_parent_fails_without_an_aggregator_call(make_agent) -> None:
    model = ScriptedModel(script={"planner": plan([], [0]), "executor": RuntimeError("nothing works")})
    result = await make_agent(model, max_depth=1, failure_policy="continue").arun(GOAL, write_files=False)

    assert result.status == "failed"
    assert statuses(result) == {"root": _S.FAILED, "root.0": _S.FAILED, "root.1": _S.FAILED}
    assert model.calls_for(role="aggregator") == []
    assert result.error.startswith("all 2 subtasks failed or were cancelled: root.0:")
    assert "nothing works" in result.error
    assert result.final_answer is None
    assert result.report_markdown  # a failed run still has a report


# -- cancelling ------------------------------------------------------------------------------


async def test_cancelling_a_run_midway_ends_every_node_and_returns(make_agent, recorder) -> None:
    enough = asyncio.Event()
    model = ScriptedModel(script={"planner": plan([], [0], [], [1, 2])})

    def latency(request: FakeRequest) -> float:
        if len(model.calls) >= 4:
            enough.set()
        return 0.05

    model.latency = latency
    agent = make_agent(model, max_depth=2, skip_atomization=True)
    run = asyncio.create_task(agent.arun(GOAL, write_files=False, subscribers=[recorder]))
    await asyncio.wait_for(enough.wait(), timeout=60)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, timeout=60)

    final = recorder.final_statuses()
    assert len(final) > 4
    assert all(s in TERMINAL for s in final.values()), final
    assert final["root"] is _S.CANCELLED
    assert _S.CANCELLED in {final[t] for t in final if t != "root"}
    assert recorder.run_finished.status == "cancelled"
    assert all(c.finished_at == 0.0 or c.finished_at >= c.started_at for c in model.calls)
    in_flight = [c for c in model.calls if c.finished_at == 0.0]
    assert in_flight, "the cancel should have interrupted calls in flight"


async def test_cancelling_right_as_a_dependent_is_released_still_cancels_it(make_agent, recorder) -> None:
    # The run is cancelled from inside the step that finishes root.0 and starts root.1, so
    # root.1's task is cancelled before it ever ran. It must still end CANCELLED.
    model = ScriptedModel(script={"planner": plan([], [0])})
    agent = make_agent(model, max_depth=1)
    run = asyncio.create_task(agent.arun(GOAL, write_files=False, subscribers=[recorder]))

    def cancel_when_root_0_done(event) -> None:
        if isinstance(event, NodeStatusChanged) and (event.task_id, event.new) == ("root.0", _S.DONE):
            run.cancel()

    recorder.hooks.append(cancel_when_root_0_done)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, timeout=60)

    final = recorder.final_statuses()
    assert final == {"root": _S.CANCELLED, "root.0": _S.DONE, "root.1": _S.CANCELLED}
    assert model.calls_for(task_id="root.1") == []
    assert recorder.run_finished.status == "cancelled"
