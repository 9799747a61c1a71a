"""The event stream of a run is self-sufficient: a subscriber that sees nothing but events
rebuilds the run's graph exactly, and the store counts every agent call once, across resumes."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentient import ProfiledSentientAgent
from sentient.agents.models.fake import FakeRequest, ScriptedModel, default_response
from sentient.events import AgentCallFinished, NodesRemoved, RunStarted
from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus
from sentient.replica import GraphReplica
from sentient.settings import Settings
from sentient.store import ProjectStore

GOAL = "Compare asyncio and threads"


def _plan(*deps: list[int], prefix: str = "step") -> PlanOutput:
    return PlanOutput(
        subtasks=[
            SubTask(goal=f"{prefix} {i}", task_type=TaskType.THINK, depends_on_indices=d) for i, d in enumerate(deps)
        ]
    )


def _failing_executor(task_id: str):
    def respond(request: FakeRequest):
        if request.task_id == task_id:
            return RuntimeError(f"provider exploded on {task_id}")
        return default_response(request)

    return respond


def _dump(graph) -> dict[str, dict]:
    return {node.task_id: node.model_dump(mode="json") for node in graph}


async def test_events_alone_rebuild_a_multi_level_run_with_a_failure_and_a_replan(make_agent, recorder) -> None:
    # Two levels; root.0.0 fails, so root.0 replans its unfinished work.
    model = ScriptedModel(
        script={
            "planner": lambda r: _plan([], [0], prefix=f"{r.task_id} step"),  # not repeating the task's goal
            "plan_modifier": _plan([], [], prefix="redo"),
            "executor": _failing_executor("root.0.0"),
        }
    )
    agent = make_agent(model, max_depth=2, skip_atomization=True, failure_policy="replan", max_replans=1)
    replica = GraphReplica()
    result = await agent.arun(GOAL, write_files=False, subscribers=[replica, recorder])

    assert result.status == "completed"
    assert recorder.of(NodesRemoved), "the scenario must include a replan"
    assert result.graph.get("root.0").replans == 1
    assert any(n.layer == 2 for n in result.graph)
    rebuilt = replica.to_graph()
    assert _dump(rebuilt) == _dump(result.graph)
    assert [n.task_id for n in rebuilt] == [n.task_id for n in result.graph]
    assert all(
        replica.snapshot(n.task_id).to_node().model_dump(mode="json") == n.model_dump(mode="json") for n in result.graph
    )
    # Every call is counted once, on its node: the calls of the nodes still in the graph (the
    # replan removed the failed one) are exactly what the rebuilt nodes count.
    kept = [c for c in recorder.of(AgentCallFinished) if c.task_id in rebuilt]
    assert len(kept) < result.stats.agent_calls
    assert sum(n.agent_calls for n in rebuilt) == len(kept)
    assert sum(n.input_tokens for n in rebuilt) == sum(c.input_tokens for c in kept)


def _wide() -> ScriptedModel:
    plan = PlanOutput(
        subtasks=[SubTask(goal=f"Look up fact {i}", task_type=TaskType.SEARCH) for i in range(6)]
        + [SubTask(goal="Write the comparison", task_type=TaskType.WRITE, depends_on_indices=[0, 1, 2])]
    )
    return ScriptedModel(script={"planner": plan}, latency=0.01)


def _agent(settings: Settings, model: ScriptedModel, **engine: object) -> ProfiledSentientAgent:
    docs = settings.cache_dir.parent / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "loops.md").write_text("# Event loops\n\nAn event loop runs callbacks and coroutines.\n")
    options = {"max_depth": 1, "skip_atomization": True, "max_concurrent_llm_calls": 2, **engine}
    return ProfiledSentientAgent.create_with_profile(
        "general_agent", settings=settings, model=model, docs=docs, **options
    )


@pytest.fixture
def store(tmp_path: Path):
    store = ProjectStore.open(tmp_path / "results")
    yield store
    store.close()


async def test_counters_persisted_after_a_resumed_run_equal_the_graph_and_the_calls(
    tmp_path: Path, store: ProjectStore
) -> None:
    settings = Settings(cache_dir=tmp_path / "cache", results_dir=tmp_path / "results")
    stopped = await _agent(settings, _wide(), max_llm_calls=3).arun(GOAL, project_id="p-count", store=store)
    assert stopped.status == "stopped"

    started: list[RunStarted] = []
    resumed = await _agent(settings, _wide()).aresume(
        "p-count",
        store=store,
        max_llm_calls=100,
        subscribers=[lambda e: started.append(e) if isinstance(e, RunStarted) else None],
    )
    assert resumed.status == "completed"
    (run_started,) = started
    assert run_started.resumed and {n.task_id for n in run_started.nodes} >= {"root"}

    stored = store.load_graph("p-count")
    calls = store.calls("p-count")
    for node in resumed.graph:
        persisted = stored.get(node.task_id)
        assert (persisted.agent_calls, persisted.input_tokens, persisted.output_tokens) == (
            node.agent_calls,
            node.input_tokens,
            node.output_tokens,
        ), node.task_id
        mine = [c for c in calls if c["task_id"] == node.task_id]
        assert persisted.agent_calls == len(mine), node.task_id
        assert persisted.input_tokens == sum(c["input_tokens"] for c in mine), node.task_id
    assert stored.root.status is TaskStatus.DONE
