"""Re-running one node of a finished project: only that node's subtree and its ancestors run again,
with the user's instructions in its agents' prompts; everything else keeps its result."""

from __future__ import annotations

import asyncio

import pytest
from fakes.loops import agent
from fakes.waiting import until

from sentient.agents.models.fake import FakeRequest, ScriptedModel, default_response, executor_answer
from sentient.agents.schemas import AtomizerOutput
from sentient.events import Event, NodesRemoved, NodeStatusChanged
from sentient.graph.node import NodeType, TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus
from sentient.projects import ProjectStateError, RerunRefusedError
from sentient.settings import Settings
from sentient.store import NodeNotFoundError, ProjectStore

GOAL = "Compare the event loops of asyncio and trio"
ADVICE = "Only use what the 2024 documentation says."


def flat_model(answer: str = "first", latency: float = 0.0) -> ScriptedModel:
    """Three searches and a write-up; each executor answers ``answer`` with its task id."""
    plan = PlanOutput(
        subtasks=[SubTask(goal=f"Look up fact {i} about event loops", task_type=TaskType.SEARCH) for i in range(3)]
        + [SubTask(goal="Write the comparison", task_type=TaskType.WRITE, depends_on_indices=[0, 1, 2])]
    )

    def execute(request: FakeRequest) -> object:
        return executor_answer(request, f"{answer} answer of {request.task_id}")

    return ScriptedModel(script={"planner": plan, "executor": execute}, latency=latency)


def deep_model(second_plan: bool = False) -> ScriptedModel:
    """root -> [Survey group A (planned: two facts), Survey group B, Write]; with ``second_plan``,
    group A's planner proposes two other facts."""

    def plan(request: FakeRequest) -> object:
        if request.task_id == "root":
            goals = ["Survey group A", "Survey group B"]
            subtasks = [SubTask(goal=g, task_type=TaskType.SEARCH) for g in goals]
            return PlanOutput(subtasks=[*subtasks, SubTask(goal="Write", task_type=TaskType.WRITE)])
        facts = ("A fact 3", "A fact 4") if second_plan else ("A fact 1", "A fact 2")
        return PlanOutput(subtasks=[SubTask(goal=f, task_type=TaskType.SEARCH) for f in facts])

    def atomize(request: FakeRequest) -> object:
        if request.layer == 0:  # the root: planned
            return AtomizerOutput(is_atomic=False)
        return AtomizerOutput(is_atomic="Survey group A" not in request.prompt.split("## Your task")[-1])

    return ScriptedModel(script={"planner": plan, "atomizer": atomize, "executor": default_response})


def ran(model: ScriptedModel) -> set[str]:
    return {c.request.task_id for c in model.calls}


async def test_a_rerun_runs_the_node_again_with_instructions_and_keeps_every_other_result(
    settings: Settings, store: ProjectStore
) -> None:
    first = await agent(settings, flat_model()).arun(GOAL, project_id="p-rerun", store=store)
    assert first.status == "completed"
    before = {n.task_id: n.result for n in first.graph}

    second = flat_model("second")
    result = await agent(settings, second).arerun("p-rerun", "root.1", store=store, instructions=ADVICE)

    assert result.status == "completed"
    assert ran(second) == {"root.1", "root"}, "only the node and the ancestor aggregating it were asked"
    assert {c.request.role for c in second.calls_for(task_id="root")} == {"aggregator"}
    executor = second.calls_for("executor", "root.1")
    assert executor and all(ADVICE in c.request.prompt for c in executor)
    after = {n.task_id: n.result for n in result.graph}
    assert after["root.1"].startswith("second answer of root.1")
    for kept in ("root.0", "root.2", "root.3"):
        assert after[kept] == before[kept]
    stored = store.load_graph("p-rerun")
    assert {n.task_id: n.result for n in stored} == after
    assert stored.get("root.1").status is TaskStatus.DONE
    options = store.get_project("p-rerun").options
    assert "rerun" not in options, "the rerun was applied"
    assert options["instructions"] == {"root.1": ADVICE}
    learned = {e["task_id"]: e["result"] for e in store.knowledge("p-rerun")}
    assert learned["root.1"] == after["root.1"]
    assert store.get_project("p-rerun").status == "completed"


async def test_a_replan_rebuilds_the_subtree_and_forgets_what_the_old_one_learned(
    settings: Settings, store: ProjectStore
) -> None:
    deep = {"max_depth": 2, "skip_atomization": False}
    first = await agent(settings, deep_model(), **deep).arun(GOAL, project_id="p-replan", store=store)
    assert first.status == "completed"
    assert first.graph.get("root.0").node_type is NodeType.PLAN
    old_children = {"root.0.0", "root.0.1"}
    assert old_children <= {n.task_id for n in first.graph}

    second = deep_model(second_plan=True)
    events: list[Event] = []
    result = await agent(settings, second, **deep).arerun(
        "p-replan", "root.0", store=store, replan=True, instructions=ADVICE, subscribers=[events.append]
    )

    assert result.status == "completed"
    planner = second.calls_for("planner")
    assert [c.request.task_id for c in planner] == ["root.0"]
    assert ADVICE in planner[0].request.prompt
    new_children = [c.task_id for c in result.graph.children("root.0")]
    assert [result.graph.get(c).goal for c in new_children] == ["A fact 3", "A fact 4"]
    assert not old_children & set(new_children), "new subtasks get new ids"
    # The instructions hold for the subtasks of the new plan too.
    assert all(ADVICE in c.request.prompt for c in second.calls_for("executor", new_children[0]))
    assert not ran(second) & {"root.1", "root.2"}, "the other branches were not run again"
    assert result.graph.get("root.1").result == first.graph.get("root.1").result
    removed = [e for e in events if isinstance(e, NodesRemoved)]
    assert removed and set(removed[0].task_ids) == old_children
    resets = {e.task_id: e.new for e in events if isinstance(e, NodeStatusChanged) and e.old is TaskStatus.DONE}
    assert resets == {"root.0": TaskStatus.READY, "root": TaskStatus.PLAN_DONE}
    stored_ids = {n.task_id for n in store.load_graph("p-replan")}
    assert not old_children & stored_ids
    assert not old_children & {e["task_id"] for e in store.knowledge("p-replan")}


async def test_an_interrupted_rerun_continues_with_resume(settings: Settings, store: ProjectStore) -> None:
    await agent(settings, flat_model()).arun(GOAL, project_id="p-cut", store=store)
    slow = flat_model("slow", latency=30.0)
    run = asyncio.create_task(agent(settings, slow).arerun("p-cut", "root.2", store=store, instructions=ADVICE))
    await until(lambda: slow.calls_for("executor", "root.2"), "the rerun's executor call")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert store.load_graph("p-cut").get("root.2").status is not TaskStatus.DONE

    third = flat_model("third")
    result = await agent(settings, third).aresume("p-cut", store=store)
    assert result.status == "completed"
    assert ran(third) == {"root.2", "root"}
    assert all(ADVICE in c.request.prompt for c in third.calls_for("executor", "root.2"))
    assert result.graph.get("root.2").result.startswith("third answer of root.2")


async def test_a_rerun_that_makes_no_sense_is_refused_before_any_call(settings: Settings, store: ProjectStore) -> None:
    deep = {"max_depth": 2, "skip_atomization": False}
    await agent(settings, deep_model(), **deep).arun(GOAL, project_id="p-no", store=store)
    model = ScriptedModel()
    runner = agent(settings, model, **deep)
    with pytest.raises(RerunRefusedError, match="whole project"):
        await runner.arerun("p-no", "root", store=store, replan=True)
    with pytest.raises(RerunRefusedError, match="re-plan it"):
        await runner.arerun("p-no", "root.0", store=store)
    with pytest.raises(NodeNotFoundError):
        await runner.arerun("p-no", "root.9", store=store)
    with pytest.raises(RerunRefusedError, match="the instructions contain the control character"):
        await runner.arerun("p-no", "root.1", store=store, instructions="stop\x00")
    with pytest.raises(RerunRefusedError, match="the instructions have no visible text"):
        await runner.arerun("p-no", "root.1", store=store, instructions="\u200b\u200b")
    store.create_project("p-new", GOAL, "general_agent", {}, {})
    with pytest.raises(ProjectStateError, match="not run yet"):
        await runner.arerun("p-new", "root.1", store=store)
    assert not model.calls
    assert "rerun" not in store.get_project("p-no").options
