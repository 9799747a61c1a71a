"""Follow-up questions: a question asked of a project that ran is researched as a project of its own
that follows it, from the project's findings and passages first; the project is left as it was."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fakes.loops import LOOPS, agent
from fakes.waiting import until

from sentient.agents.models.fake import FakeRequest, ScriptedModel, default_response, executor_answer
from sentient.context.grounding import Verdict
from sentient.exceptions import InvalidGoalError
from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.projects import ProjectRunningError, ProjectService, ProjectStateError
from sentient.projects.followups import FOLLOWS
from sentient.settings import Settings
from sentient.store import ProjectNotFoundError, ProjectStatus, ProjectStore

GOAL = "Compare the event loops of asyncio and trio"
QUESTION = "What does an event loop run?"
KNOWN = LOOPS  # in the docs the project read
LATER = "Nurseries supervise the tasks that trio schedules."  # added to the docs after the project ran


def project_model() -> ScriptedModel:
    """The project: two searches about event loops, each answering from the first passage it is shown."""
    plan = PlanOutput(
        subtasks=[
            SubTask(goal=f"Look up what an event loop of {lib} runs", task_type=TaskType.SEARCH)
            for lib in ("asyncio", "trio")
        ]
    )

    def execute(request: FakeRequest) -> object:
        return executor_answer(request, f"Answer of {request.task_id}: it runs callbacks")

    return ScriptedModel(script={"planner": plan, "executor": execute})


def followup_model(*, supported: bool = True, latency: float = 0.0) -> ScriptedModel:
    """Answers from the first passage shown; its verifier finds the project's passage does not
    support the answer unless ``supported``."""

    def verify(request: FakeRequest) -> object:
        if supported or KNOWN not in request.prompt:
            return default_response(request)
        return {"source": 0} if "source" in str(request.response_format) else Verdict(supports=False)

    def execute(request: FakeRequest) -> object:
        return executor_answer(request, f"Follow-up answer of {request.task_id}")

    return ScriptedModel(script={"executor": execute, "verifier": verify}, latency=latency)


async def ran_project(settings: Settings, store: ProjectStore, docs: Path, project_id: str = "p-loops") -> None:
    result = await agent(settings, project_model(), flat=False).arun(GOAL, project_id=project_id, store=store)
    assert result.status == "completed"
    assert any(s.snippet and KNOWN in s.snippet for n in result.graph for s in n.sources), "the project cited its docs"


def held(store: ProjectStore, project_id: str) -> tuple[object, ...]:
    """Everything the project holds that a follow-up must leave as it is."""
    record = store.get_project(project_id)
    graph = store.load_graph(project_id).to_dict()
    return (
        record.goal,
        record.status,
        record.options,
        record.settings,
        graph,
        store.get_report(project_id),
        store.knowledge(project_id),
    )


async def test_a_followup_answers_from_the_projects_passages_and_findings_and_leaves_the_project_as_it_was(
    settings: Settings, store: ProjectStore, docs: Path
) -> None:
    await ran_project(settings, store, docs)
    before = held(store, "p-loops")
    (docs / "later.md").write_text(f"# Trio\n\n{LATER}\n")

    model = followup_model()
    result = await agent(settings, model, flat=False).aask("p-loops", QUESTION, store=store)

    assert result.status == "completed"
    assert result.project_id != "p-loops"
    executor = model.calls_for("executor", "root")
    assert executor, "the question was answered directly first"
    prompt = executor[0].request.prompt
    assert KNOWN in prompt, "the passage the project read is offered to cite"
    assert "Finding of the project this question follows up" in prompt
    assert "it runs callbacks" in prompt, "the project's findings are in the context"
    assert LATER not in prompt, "the project's passages answered it: nothing was searched again"
    cited = [s for s in result.graph.root.sources if s.verified]
    assert cited and KNOWN in cited[0].snippet, "the answer cites the project's passage"
    assert {n.task_id for n in result.graph} == {"root"}

    assert held(store, "p-loops") == before, "the project keeps its goal, graph, report and knowledge"
    record = store.get_project(result.project_id)
    assert record.goal == QUESTION and record.status is ProjectStatus.COMPLETED
    assert record.options[FOLLOWS] == "p-loops"
    assert record.options["docs"] == str(docs.resolve()), "it runs with the project's docs"
    service = ProjectService(store, settings)
    assert [f.project_id for f in service.followups("p-loops")] == [result.project_id]
    assert service.followups(result.project_id) == []


async def test_a_followup_the_projects_passages_do_not_support_is_planned_and_searched_again(
    settings: Settings, store: ProjectStore, docs: Path
) -> None:
    await ran_project(settings, store, docs)
    (docs / "later.md").write_text(f"# Trio\n\n{LATER}\n")

    model = followup_model(supported=False)
    question = "What does the event loop of trio run, and what do its nurseries supervise?"
    result = await agent(settings, model, flat=False).aask("p-loops", question, store=store)

    first = model.calls_for("executor", "root")[0].request.prompt
    assert KNOWN in first and LATER not in first, "answered first from the project's passage alone"
    searched = [c for c in model.calls_for("executor") if c.request.task_id != "root"]
    assert searched, "the question was planned"
    assert any(LATER in c.request.prompt for c in searched), "its subtasks searched the docs again"
    assert result.status == "completed"


async def test_an_interrupted_followup_continues_with_resume_of_its_own_id(
    settings: Settings, store: ProjectStore, docs: Path
) -> None:
    await ran_project(settings, store, docs)
    before = held(store, "p-loops")
    slow = followup_model(latency=30.0)
    run = asyncio.create_task(agent(settings, slow, flat=False).aask("p-loops", QUESTION, store=store))
    await until(lambda: slow.calls_for("executor", "root"), "the follow-up's executor call")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    service = ProjectService(store, settings)
    (followup,) = service.followups("p-loops")
    assert followup.status is ProjectStatus.CANCELLED

    model = followup_model()
    result = await agent(settings, model, flat=False).aresume(followup.project_id, store=store)

    assert result.status == "completed"
    assert KNOWN in model.calls_for("executor", "root")[0].request.prompt, "a resumed follow-up reads the project too"
    assert held(store, "p-loops") == before


async def test_a_followup_is_refused_for_an_unknown_project_an_empty_question_and_a_project_that_runs_or_never_ran(
    settings: Settings, store: ProjectStore, docs: Path
) -> None:
    await ran_project(settings, store, docs)
    model = ScriptedModel()
    asker = agent(settings, model, flat=False)
    with pytest.raises(ProjectNotFoundError):
        await asker.aask("p-none", QUESTION, store=store)
    with pytest.raises(InvalidGoalError, match="the question is empty"):
        await asker.aask("p-loops", "  \n", store=store)
    store.create_project("p-new", GOAL, "general_agent", {}, {})
    with pytest.raises(ProjectStateError, match="not run yet"):
        await asker.aask("p-new", QUESTION, store=store)
    store.claim("p-loops")  # running in this (live) process
    with pytest.raises(ProjectRunningError, match="once it has ended"):
        await asker.aask("p-loops", QUESTION, store=store)
    assert model.calls == []
    assert [p.project_id for p in store.list_projects()] == ["p-new", "p-loops"], "no follow-up was stored"


async def test_deleting_a_project_deletes_its_followups(settings: Settings, store: ProjectStore, docs: Path) -> None:
    await ran_project(settings, store, docs)
    result = await agent(settings, followup_model(), flat=False).aask("p-loops", QUESTION, store=store)
    service = ProjectService(store, settings)
    service.delete("p-loops")
    assert store.list_projects() == []
    assert not (settings.results_dir / result.project_id).exists()
