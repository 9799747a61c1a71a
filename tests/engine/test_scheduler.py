"""ExecutionEngine alone: the scheduler driven by a small processor that plans from a dict.

No YAML, no agents, no model. The processor's phases wait on gates the test opens, so every
ordering below is forced by the test, not measured: a test that would hang fails at its
``asyncio.timeout`` instead.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from sentient.budget import Budget
from sentient.engine.resume import prepare_resume
from sentient.engine.scheduler import ExecutionEngine
from sentient.graph.node import NodeType, TaskNode, TaskType
from sentient.graph.plan import SubTask
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.settings import EngineSettings, FailurePolicy

_S = TaskStatus
Plan = Sequence[Sequence[int]]  # one entry per subtask: the indices of the earlier subtasks it depends on
HANG = 5.0  # seconds before a test that would hang fails instead; nothing waits this long when it passes


class DictProcessor:
    """A :class:`~sentient.engine.processor.NodeProcessor` that runs phases from dicts.

    ``plans`` says which nodes plan, and the dependencies of their subtasks (all SEARCH); every
    other node is executed. A node in ``failing`` fails its phase; a node with a gate waits
    for it to open before its phase ends. ``log`` records ``(event, task_id)`` in order, where
    event is one of start, end, fail, replan.
    """

    def __init__(
        self,
        plans: dict[str, Plan],
        *,
        failing: Iterable[str] = (),
        gates: Iterable[str] = (),
        replans: dict[str, Plan] | None = None,
        graph: TaskGraph | None = None,
    ) -> None:
        if graph is None:
            graph = TaskGraph()
            graph.add_root("the overall goal", TaskType.SEARCH, NodeType.EXECUTE)
        self._graph = graph
        self.plans = plans
        self.replans = replans or {}
        self.failing = set(failing)
        self.gates = {task_id: asyncio.Event() for task_id in gates}
        self.started: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.log: list[tuple[str, str]] = []
        self.feedback: dict[str, str] = {}
        self.announced: list[str] = []

    @property
    def graph(self) -> TaskGraph:
        return self._graph

    def move(self, node: TaskNode, target: TaskStatus, error: str | None = None) -> None:
        node.move_to(target)
        if error is not None:
            node.error = error

    def announce(self, node: TaskNode) -> None:
        self.announced.append(node.task_id)

    def fail(self, node: TaskNode, error: str) -> None:
        self.log.append(("fail", node.task_id))
        self.move(node, _S.FAILED, error)

    async def decide_root_type(self, root: TaskNode) -> None:
        root.node_type = NodeType.PLAN if root.task_id in self.plans else NodeType.EXECUTE

    async def plan(self, node: TaskNode) -> None:
        self.move(node, _S.PLANNING)
        if await self._work(node):
            self._adopt(node, self.plans[node.task_id])

    async def replan(self, node: TaskNode, feedback: str) -> None:
        node.replans += 1
        self.feedback[node.task_id] = feedback
        self.log.append(("replan", node.task_id))
        self.move(node, _S.PLAN_MODIFICATION)
        for child in self._graph.children(node.task_id):
            if child.status is not _S.DONE:
                self._graph.remove_subtree(child.task_id)
        self._adopt(node, self.replans[node.task_id])

    async def execute(self, node: TaskNode) -> None:
        self.move(node, _S.EXECUTING)
        if await self._work(node):
            node.result = f"result of {node.task_id}"
            self.move(node, _S.DONE)

    async def aggregate(self, node: TaskNode) -> None:
        done = [c for c in self._graph.children(node.task_id) if c.status is _S.DONE]
        if not done:
            self.fail(node, "no subtask succeeded")
            return
        self.move(node, _S.AGGREGATING)
        if await self._work(node):
            node.result = " + ".join(c.result or "" for c in done)
            self.move(node, _S.DONE)

    async def _work(self, node: TaskNode) -> bool:
        """The body of a phase: wait for the node's gate; False (node failed) if it is scripted to fail."""
        self.log.append(("start", node.task_id))
        self.started[node.task_id].set()
        gate = self.gates.get(node.task_id)
        if gate is not None:
            await gate.wait()
        if node.task_id in self.failing:
            self.fail(node, f"{node.task_id} broke")
            return False
        self.log.append(("end", node.task_id))
        return True

    def _adopt(self, node: TaskNode, plan: Plan) -> None:
        """Add the plan's children: a first plan's child plans if ``plans`` has its id; replanned ones execute."""
        self.move(node, _S.ATOMIZATION)
        subtasks = [
            SubTask(goal=f"subtask {i}", task_type=TaskType.SEARCH, depends_on_indices=list(deps))
            for i, deps in enumerate(plan)
        ]
        ids = [f"{node.task_id}.{i}" for i in range(len(subtasks))]
        types = [NodeType.PLAN if not node.replans and task_id in self.plans else NodeType.EXECUTE for task_id in ids]
        for child in self._graph.add_children(node.task_id, subtasks, types):
            self.announce(child)
        self.move(node, _S.PLAN_DONE)

    def index(self, event: str, task_id: str) -> int:
        return self.log.index((event, task_id))


def engine_for(processor: DictProcessor, *, budget: Budget | None = None, **settings: Any) -> ExecutionEngine:
    return ExecutionEngine(processor, EngineSettings.model_validate(settings), budget)


async def run(processor: DictProcessor, **settings: Any) -> TaskNode:
    async with asyncio.timeout(HANG):
        return await engine_for(processor, **settings).run()


def statuses(processor: DictProcessor) -> dict[str, TaskStatus]:
    return {node.task_id: node.status for node in processor.graph}


# -- scheduling -----------------------------------------------------------------------------------


async def test_a_leaf_root_is_executed_and_its_result_returned() -> None:
    processor = DictProcessor({})
    root = await run(processor)
    assert root.status is _S.DONE
    assert root.result == "result of root"
    assert processor.announced == ["root"]


async def test_dependent_starts_as_soon_as_its_dependency_finishes() -> None:
    # root.1 depends on root.0; root.2 is an unrelated sibling held open until the end.
    processor = DictProcessor({"root": [[], [0], []]}, gates=["root.2"])
    engine = engine_for(processor)
    async with asyncio.timeout(HANG):
        running = asyncio.create_task(engine.run())
        while ("end", "root.1") not in processor.log:
            await asyncio.sleep(0)  # let the scheduled phases run; the gate keeps root.2 in flight
        assert processor.index("start", "root.1") > processor.index("end", "root.0")
        assert ("end", "root.2") not in processor.log
        processor.gates["root.2"].set()
        root = await running
    assert root.status is _S.DONE
    assert processor.index("start", "root") < processor.index("start", "root.0")


async def test_dependent_of_several_dependencies_waits_for_the_last_one() -> None:
    processor = DictProcessor({"root": [[], [], [0, 1]]}, gates=["root.1"])
    engine = engine_for(processor)
    async with asyncio.timeout(HANG):
        running = asyncio.create_task(engine.run())
        await processor.started["root.1"].wait()
        while ("end", "root.0") not in processor.log:
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert processor.graph.get("root.2").status is _S.PENDING  # root.0 is done, root.1 is not
        processor.gates["root.1"].set()
        await running
    assert processor.index("start", "root.2") > processor.index("end", "root.1")


async def test_independent_siblings_run_concurrently() -> None:
    # Each sibling's phase ends only once all three are in flight together: run one at a time, it would hang.
    processor = DictProcessor({"root": [[], [], []]}, gates=["root.0", "root.1", "root.2"])
    engine = engine_for(processor)
    async with asyncio.timeout(HANG):
        running = asyncio.create_task(engine.run())
        for task_id in ("root.0", "root.1", "root.2"):
            await processor.started[task_id].wait()
        assert not any(event == "end" and task_id.startswith("root.") for event, task_id in processor.log)
        for gate in processor.gates.values():
            gate.set()
        root = await running
    assert root.status is _S.DONE
    assert root.result == "result of root.0 + result of root.1 + result of root.2"


async def test_parent_aggregates_only_after_all_children_finished() -> None:
    processor = DictProcessor({"root": [[], []], "root.1": [[], [0]]}, gates=["root.1.1"])
    engine = engine_for(processor)
    async with asyncio.timeout(HANG):
        running = asyncio.create_task(engine.run())
        await processor.started["root.1.1"].wait()
        await asyncio.sleep(0)
        assert processor.log.count(("start", "root")) == 1  # planned, not aggregating yet
        assert processor.graph.get("root.1").status is _S.PLAN_DONE
        processor.gates["root.1.1"].set()
        root = await running
    assert root.status is _S.DONE
    aggregations = [i for i, entry in enumerate(processor.log) if entry == ("start", "root.1")]
    assert aggregations[-1] > processor.index("end", "root.1.1")
    assert processor.log[-1] == ("end", "root")
    assert processor.announced == ["root", "root.0", "root.1", "root.1.0", "root.1.1"]


# -- failures -------------------------------------------------------------------------------------


async def test_with_continue_a_failed_node_releases_its_dependents_and_the_parent_aggregates() -> None:
    processor = DictProcessor({"root": [[], [0], []]}, failing=["root.0"])
    root = await run(processor, failure_policy=FailurePolicy.CONTINUE)
    assert statuses(processor) == {"root": _S.DONE, "root.0": _S.FAILED, "root.1": _S.DONE, "root.2": _S.DONE}
    assert root.result == "result of root.1 + result of root.2"


async def test_with_fail_parent_a_failed_node_cancels_its_siblings_and_fails_the_parent() -> None:
    processor = DictProcessor({"root": [[], [0], []]}, failing=["root.0"], gates=["root.2"])
    root = await run(processor, failure_policy=FailurePolicy.FAIL_PARENT)
    assert statuses(processor) == {
        "root": _S.FAILED,
        "root.0": _S.FAILED,
        "root.1": _S.CANCELLED,  # its dependency failed: never started
        "root.2": _S.CANCELLED,  # held by its gate: cancelled before or while it waited
    }
    assert root.error == "subtask root.0 failed: root.0 broke"
    assert ("start", "root.1") not in processor.log


async def test_with_replan_a_failed_node_is_rebuilt_and_finished_work_kept() -> None:
    processor = DictProcessor({"root": [[], []]}, failing=["root.1"], replans={"root": [[]]})
    root = await run(processor, failure_policy=FailurePolicy.REPLAN, max_replans=1)
    assert root.status is _S.DONE
    assert root.replans == 1
    assert processor.feedback["root"] == "These subtasks failed:\n- root.1 (subtask 1): root.1 broke"
    assert statuses(processor) == {"root": _S.DONE, "root.0": _S.DONE, "root.2": _S.DONE}
    assert root.result == "result of root.0 + result of root.2"


async def test_when_every_child_fails_the_parent_fails_and_the_run_still_ends() -> None:
    processor = DictProcessor({"root": [[], [0]]}, failing=["root.0", "root.1"])
    root = await run(processor, failure_policy=FailurePolicy.CONTINUE)
    assert statuses(processor) == {"root": _S.FAILED, "root.0": _S.FAILED, "root.1": _S.FAILED}
    assert root.error == "no subtask succeeded"


async def test_a_failed_plan_ends_the_run_without_children() -> None:
    processor = DictProcessor({"root": [[], []]}, failing=["root"])
    root = await run(processor)
    assert root.status is _S.FAILED
    assert len(processor.graph) == 1


async def test_a_bug_in_a_phase_propagates_out_of_the_run_instead_of_hanging_it() -> None:
    class Broken(DictProcessor):
        async def execute(self, node: TaskNode) -> None:
            if node.task_id == "root.1":
                raise RuntimeError("processor bug")
            await super().execute(node)

    processor = Broken({"root": [[], [], []]}, gates=["root.0"])
    with pytest.raises(ExceptionGroup) as caught:
        await run(processor)
    assert caught.group_contains(RuntimeError, match="processor bug")
    assert processor.graph.get("root.0").status is _S.CANCELLED  # the in-flight sibling was cancelled


# -- cancelling and stopping ----------------------------------------------------------------------


async def test_cancelling_the_run_task_cancels_in_flight_work_and_ends_every_node() -> None:
    processor = DictProcessor({"root": [[], [0], []]}, gates=["root.0", "root.2"])
    engine = engine_for(processor)
    async with asyncio.timeout(HANG):
        running = asyncio.create_task(engine.run())
        await processor.started["root.0"].wait()
        await processor.started["root.2"].wait()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    assert statuses(processor) == {
        "root": _S.CANCELLED,
        "root.0": _S.CANCELLED,
        "root.1": _S.CANCELLED,
        "root.2": _S.CANCELLED,
    }


async def test_engine_cancel_ends_the_run_with_every_unfinished_node_cancelled() -> None:
    processor = DictProcessor({"root": [[], [0], []]}, gates=["root.2"])
    engine = engine_for(processor)
    async with asyncio.timeout(HANG):
        running = asyncio.create_task(engine.run())
        while ("end", "root.1") not in processor.log:
            await asyncio.sleep(0)
        engine.cancel()
        root = await running
    assert statuses(processor) == {
        "root": _S.CANCELLED,
        "root.0": _S.DONE,
        "root.1": _S.DONE,
        "root.2": _S.CANCELLED,
    }
    assert root.status is _S.CANCELLED
    assert engine.stop_reason is None


async def test_an_exhausted_budget_stops_the_run_and_starts_nothing_new() -> None:
    clock = [0.0]
    budget = Budget(EngineSettings(max_time_s=60), clock=lambda: clock[0])
    processor = DictProcessor({"root": [[], [0]]}, gates=["root.0"])
    engine = engine_for(processor, budget=budget)
    async with asyncio.timeout(HANG):
        running = asyncio.create_task(engine.run())
        await processor.started["root.0"].wait()
        clock[0] = 61.0
        assert budget.check() == "time budget reached (60 s)"
        processor.gates["root.0"].set()
        root = await running
    assert engine.stop_reason == "time budget reached (60 s)"
    assert statuses(processor) == {"root": _S.CANCELLED, "root.0": _S.CANCELLED, "root.1": _S.CANCELLED}
    assert ("start", "root.1") not in processor.log
    assert root.status is _S.CANCELLED


# -- resuming -------------------------------------------------------------------------------------


async def test_resuming_runs_only_the_unfinished_work() -> None:
    first = DictProcessor({"root": [[], [0], []]}, failing=["root.1"])
    await run(first, failure_policy=FailurePolicy.CONTINUE)
    assert statuses(first)["root.1"] is _S.FAILED

    again = DictProcessor({"root": [[], [0], []]}, graph=first.graph)
    prepare_resume(again.graph)
    async with asyncio.timeout(HANG):
        root = await engine_for(again, failure_policy=FailurePolicy.CONTINUE).run(resume=True)
    assert root.status is _S.DONE
    assert [task_id for event, task_id in again.log if event == "start"] == ["root.1", "root"]
    assert root.result == "result of root.0 + result of root.1 + result of root.2"
