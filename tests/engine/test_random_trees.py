"""Property tests: random plans, random failures and timeouts, random cancellation points.

Whatever the tree and whatever fails, the run returns, every node ends terminal, no node starts
before its dependencies ended, and a failed dependency only lets its dependents run under the
'continue' policy (configured, or the fallback once a parent's replans are spent).

Each fake answer is derived from (seed, role, task id, attempt, subject) rather than from call
order, so an example replays identically even though concurrent calls interleave freely.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from sentient.agents.models.fake import FakeRequest, ScriptedModel
from sentient.agents.schemas import AggregationOutput, AtomizerOutput, ExecutionOutput
from sentient.api import ProfiledSentientAgent, RunResult
from sentient.events import Event
from sentient.graph.node import NodeType, TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TERMINAL, TaskStatus
from sentient.settings import FailurePolicy

_S = TaskStatus
TIMEOUT_S = 0.05
RUN_DEADLINE_S = 20.0  # far above any example; hitting it means the run hung
INVALID_OUTPUTS = ("not json at all", '{"subtasks": []}', '{"answer": ""}', '{"is_atomic": "maybe"}', "{")


@dataclass(frozen=True)
class Chaos:
    """A deterministic fake world: plans, atomizer verdicts, failures and timeouts from a seed."""

    seed: int
    failure_rate: float
    timeout_rate: float

    def _rng(self, *key: object) -> random.Random:
        return random.Random("|".join(map(str, (self.seed, *key))))

    @staticmethod
    def _key(request: FakeRequest) -> tuple[object, ...]:
        # Atomizer calls run on the parent's behalf, one per planned subtask: the subtask is
        # named in the task part of the prompt.
        subject = request.prompt.rsplit("## Your task", 1)[-1] if request.role == "atomizer" else ""
        return (request.role, request.task_id, request.attempt, subject)

    def respond(self, request: FakeRequest) -> object:
        rng = self._rng(*self._key(request))
        roll = rng.random()
        if roll < self.failure_rate / 2:
            return RuntimeError(f"injected failure in {request.role} of {request.task_id}")
        if roll < self.failure_rate:
            return rng.choice(INVALID_OUTPUTS)
        if request.role in ("planner", "plan_modifier"):
            count = rng.randint(1, 4)
            return PlanOutput(
                subtasks=[
                    SubTask(
                        goal=f"subgoal {rng.getrandbits(40):010x}",
                        task_type=rng.choice(list(TaskType)),
                        # Deliberately includes self, forward, negative and out-of-range indices.
                        depends_on_indices=[rng.randint(-2, count + 1) for _ in range(rng.randint(0, 3))],
                    )
                    for _ in range(count)
                ]
            )
        if request.role == "atomizer":
            return AtomizerOutput(is_atomic=rng.random() < 0.5)
        if request.role == "aggregator":
            return AggregationOutput(answer=f"aggregate of {request.task_id}")
        return ExecutionOutput(answer=f"answer of {request.task_id}")

    def latency(self, request: FakeRequest) -> float:
        timed_out = self._rng("latency", *self._key(request)).random() < self.timeout_rate
        return TIMEOUT_S * 20 if timed_out else 0.0


def check_invariants(model: ScriptedModel, recorder, policy: FailurePolicy, max_replans: int) -> None:
    """Invariants that hold for every run, finished or cancelled, read from events and calls."""
    final = recorder.final_statuses()
    stuck = {t: s for t, s in final.items() if s not in TERMINAL}
    assert not stuck, f"nodes left non-terminal: {stuck}"
    # Removed nodes (torn down by a replan) must have ended too before they were removed.
    assert all(recorder.status[t] in TERMINAL for t in recorder.removed)

    for task_id, created in recorder.created.items():
        for dep_id in created.depends_on:
            assert dep_id in recorder.ended, f"{task_id} depends on {dep_id}, which never ended"
        if task_id not in recorder.started or not created.depends_on:
            continue
        started = recorder.started[task_id]
        for dep_id in created.depends_on:
            assert started >= recorder.ended[dep_id], f"{task_id} started before its dependency {dep_id} ended"
            dep_calls = [
                c for c in model.calls if c.request.task_id == dep_id or c.request.task_id.startswith(f"{dep_id}.")
            ]
            own_calls = model.calls_for(task_id=task_id)
            if own_calls and dep_calls:
                first = min(c.started_at for c in own_calls)
                assert all(c.finished_at <= first for c in dep_calls if c.finished_at), (
                    f"{task_id} called the model while its dependency {dep_id} was still calling it"
                )
        failed_deps = [d for d in created.depends_on if recorder.status[d] is not _S.DONE]
        if failed_deps:
            parent = created.parent_id
            replans_before = sum(
                1 for at, t, s in recorder.moves if t == parent and s is _S.NEEDS_REPLAN and at <= started
            )
            effectively_continue = policy is FailurePolicy.CONTINUE or (
                policy is FailurePolicy.REPLAN and replans_before >= max_replans
            )
            assert effectively_continue, f"{task_id} ran after {failed_deps} failed under policy {policy}"

    # A parent aggregates only once every call of its subtree has ended.
    for call in model.calls_for(role="aggregator"):
        prefix = f"{call.request.task_id}."
        below = [c for c in model.calls if c.request.task_id.startswith(prefix)]
        assert all(c.finished_at <= call.started_at for c in below if c.finished_at)


def check_result(result: RunResult, recorder, policy: FailurePolicy) -> None:
    """Invariants of a run that returned."""
    graph = result.graph
    assert all(n.is_terminal for n in graph)
    assert recorder.final_statuses() == {n.task_id: n.status for n in graph}  # the events told the truth
    root = graph.root
    expected = {_S.DONE: "completed", _S.FAILED: "failed", _S.CANCELLED: "cancelled"}[root.status]
    if expected == "completed" and any(n.status is _S.FAILED for n in graph):
        expected = "completed_with_failures"
    assert result.status == expected
    assert recorder.run_finished.status == expected
    if root.status is _S.DONE:
        assert result.final_answer and result.final_answer == root.result
        assert (result.error is None) == (expected == "completed"), "the error names the failed subtasks"
    else:
        assert result.final_answer is None and result.error == root.error
    for node in graph:
        if node.status is _S.DONE:
            # A result, or why it has none (a report's search that found no passage).
            assert node.result or node.warnings
        if node.status is _S.FAILED:
            assert node.error
        if node.status is _S.DONE and node.node_type is NodeType.PLAN:
            assert any(c.status is _S.DONE for c in graph.children(node.task_id))
        if policy is FailurePolicy.FAIL_PARENT and node.status is _S.FAILED and node.parent_id is not None:
            assert graph.get(node.parent_id).status is _S.FAILED


scenarios = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32 - 1),
        "policy": st.sampled_from(list(FailurePolicy)),
        "max_depth": st.integers(1, 3),
        "failure_rate": st.sampled_from([0.0, 0.1, 0.25, 0.5]),
        "timeout_rate": st.sampled_from([0.0, 0.0, 0.03]),
        "force_root_planning": st.booleans(),
        "max_concurrent_llm_calls": st.integers(1, 4),
    }
)


def build(make_agent, scenario: dict) -> tuple[ScriptedModel, ProfiledSentientAgent]:
    chaos = Chaos(scenario["seed"], scenario["failure_rate"], scenario["timeout_rate"])
    model = ScriptedModel(
        script={role: chaos.respond for role in ("planner", "plan_modifier", "atomizer", "executor", "aggregator")},
        latency=chaos.latency,
    )
    agent = make_agent(
        model,
        max_depth=scenario["max_depth"],
        failure_policy=scenario["policy"],
        force_root_planning=scenario["force_root_planning"],
        max_concurrent_llm_calls=scenario["max_concurrent_llm_calls"],
        agent_timeout_s=TIMEOUT_S,
        max_validation_retries=1,
        max_replans=1,
    )
    return model, agent


@settings(max_examples=70, deadline=None, database=None)
@given(scenario=scenarios)
def test_random_trees_with_random_failures_always_terminate_consistently(
    make_agent, new_recorder: Callable[[], object], scenario: dict
) -> None:
    model, agent = build(make_agent, scenario)
    recorder = new_recorder()

    async def run() -> RunResult:
        return await asyncio.wait_for(
            agent.arun("Random research goal", write_files=False, subscribers=[recorder]), RUN_DEADLINE_S
        )

    result = asyncio.run(run())
    check_invariants(model, recorder, scenario["policy"], max_replans=1)
    check_result(result, recorder, scenario["policy"])


@settings(max_examples=30, deadline=None, database=None)
@given(scenario=scenarios, cancel_after_events=st.integers(1, 120))
def test_cancelling_at_a_random_point_leaves_every_node_terminal(
    make_agent, new_recorder: Callable[[], object], scenario: dict, cancel_after_events: int
) -> None:
    model, agent = build(make_agent, scenario)
    recorder = new_recorder()

    async def run() -> RunResult | None:
        task = asyncio.create_task(agent.arun("Random research goal", write_files=False, subscribers=[recorder]))

        def cancel_on_nth_event(event: Event) -> None:
            # Cancelling from inside a subscriber hits the engine mid-step, between a node
            # finishing and the tasks it releases getting their first turn.
            # RunStarted (the first event) comes before the engine runs: count the engine's events.
            if len(recorder.events) == cancel_after_events + 1:
                task.cancel()

        recorder.hooks.append(cancel_on_nth_event)
        try:
            return await asyncio.wait_for(task, RUN_DEADLINE_S)
        except asyncio.CancelledError:
            return None

    result = asyncio.run(run())
    check_invariants(model, recorder, scenario["policy"], max_replans=1)
    finished = recorder.run_finished
    expected = {_S.DONE: "completed", _S.FAILED: "failed", _S.CANCELLED: "cancelled"}[recorder.status["root"]]
    # Nodes a replan removed are no longer part of the run's tree, whatever they ended as.
    remaining = [status for task_id, status in recorder.status.items() if task_id not in recorder.removed]
    if expected == "completed" and _S.FAILED in remaining:
        expected = "completed_with_failures"
    assert finished.status == expected
    if result is not None:
        check_result(result, recorder, scenario["policy"])
