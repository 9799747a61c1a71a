"""How the pipeline keeps answers: simple goals skip planning, searches keep the question's
words, reasoning steps see the research, and citations are checked against their sources.

Tests of what a plan does turn ``answer_first`` off: otherwise their question would be answered
before it is planned."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sentient.agents.models.fake import FakeRequest, Responder, ScriptedModel, cite_sources
from sentient.agents.schemas import AggregationOutput, AnswerOutput, AtomizerOutput, Citation, ExecutionOutput
from sentient.api import ProfiledSentientAgent
from sentient.exceptions import ModelError
from sentient.graph.node import NodeType, TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus
from sentient.settings import Settings
from sentient.tools.docs_search import DocsIndex

GOAL = "How does the asyncio event loop run coroutines?"  # one passage of the docs holds all its words
COMPOUND = "Which component runs coroutines, and what does it share with threads?"  # two passages do
REPORT = "Explain which component runs coroutines and what it shares with threads."  # asked for, not a question


def grounded_executor(request: FakeRequest) -> ExecutionOutput:
    citations = cite_sources(request.prompt, 1)
    return ExecutionOutput(
        answer=f"It runs them as tasks [{citations[0].source}]." if citations else "No sources.", citations=citations
    )


def embedded(executor: Responder) -> ScriptedModel:
    """The embedded model (grammar-decoded) on the direct path: one step, its executor answering."""
    return ScriptedModel(grammar=True, script={"atomizer": AtomizerOutput(is_atomic=True), "executor": executor})


async def test_a_simple_goal_is_answered_directly_with_one_search_and_a_grounded_citation(make_agent) -> None:
    # The atomizer would plan it; it is not asked: one passage of the documents holds the goal's words.
    model = ScriptedModel(script={"atomizer": AtomizerOutput(is_atomic=False), "executor": grounded_executor})
    result = await make_agent(model, profile="general_agent").arun(GOAL, write_files=False)

    assert result.status == "completed"
    assert len(result.graph) == 1
    root = result.graph.root
    assert root.node_type is NodeType.EXECUTE and root.task_type is TaskType.SEARCH
    assert [c.request.role for c in model.calls] == ["executor"]
    assert root.result == "It runs them as tasks [1]."
    assert root.sources[0].verified is True and root.sources[0].ref.endswith("asyncio.md")
    assert "— verified: “" in result.report_markdown


async def test_a_grammar_decoded_model_answers_plainly_and_its_citations_are_checked_against_the_sources(
    make_agent,
) -> None:
    # As the embedded model is asked: the answer alone, citing [n]; code keeps a citation only where
    # the cited source states the clause (one source is found: [2] moves to it, [1] does not state the rest).
    model = embedded(AnswerOutput(answer="It runs coroutines and tasks [2]. It uses one thread per task [1]."))
    result = await make_agent(model, profile="general_agent").arun(GOAL, write_files=False)

    (call,) = model.calls_for(role="executor")
    assert '{"answer":' in call.request.prompt and "citations" not in call.request.prompt
    root = result.graph.root
    assert [s.ref.rsplit("/", 1)[-1] for s in root.sources] == ["asyncio.md"]
    assert root.result == "It runs coroutines and tasks [1]. It uses one thread per task."
    assert root.sources[0].verified is True and root.sources[0].quote.endswith(
        "The event loop runs coroutines and tasks."
    )
    assert sum("dropped" in w for w in root.warnings) == 2


async def test_a_cited_answer_does_not_also_say_the_sources_do_not_confirm_it(make_agent) -> None:
    # The embedded model is told to say so when it answers from memory, and often says it anyway.
    answer = "It runs coroutines and tasks [1]. The sources do not confirm this answer."
    model = embedded(AnswerOutput(answer=answer))
    result = await make_agent(model, profile="general_agent").arun(GOAL, write_files=False)

    root = result.graph.root
    assert root.result == "It runs coroutines and tasks [1]."
    assert root.sources[0].verified is True
    assert any("do not confirm a cited answer" in w for w in root.warnings)


async def test_a_lookups_executor_reads_only_the_first_passages(settings: Settings, tmp_path: Path) -> None:
    # The embedded model reads each shown token; a lookup's answer is in its first passages.
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "loop.md").write_text("# Loop\n\nThe event loop runs coroutines and tasks.\n")
    for topic in ("timers", "sockets", "signals", "subprocesses", "queues"):
        (folder / f"{topic}.md").write_text(f"# {topic}\n\nThe event loop also runs {topic} callbacks.\n")
    docs = DocsIndex.from_folder(folder)

    async def shown(goal: str) -> int:
        model = ScriptedModel(script={"atomizer": AtomizerOutput(is_atomic=True), "executor": grounded_executor})
        agent = ProfiledSentientAgent.create_with_profile("general_agent", settings=settings, model=model, docs=docs)
        result = await agent.arun(goal, write_files=False)
        assert result.graph.root.node_type is NodeType.EXECUTE
        return len(result.graph.root.sources)

    assert await shown("How does the event loop run coroutines?") == 3  # loop.md holds it all
    # No passage holds "which" thing "handles" both: all five are shown (after the atomizer's verdict).
    assert await shown("Which event loop handles timers and sockets?") == 5


async def test_a_goal_no_passage_holds_is_left_to_the_atomizer(make_agent) -> None:
    model = ScriptedModel(script={"atomizer": AtomizerOutput(is_atomic=True)})
    result = await make_agent(model, profile="general_agent", second_look=False).arun(COMPOUND, write_files=False)
    assert result.graph.root.node_type is NodeType.EXECUTE
    assert [c.request.role for c in model.calls] == ["atomizer", "executor"]

    # A goal that is not a question is planned as the atomizer says.
    model = ScriptedModel(script={"atomizer": AtomizerOutput(is_atomic=False)})
    result = await make_agent(model, profile="general_agent").arun(REPORT, write_files=False)
    assert result.graph.root.node_type is NodeType.PLAN
    assert [c.request.role for c in model.calls][:2] == ["atomizer", "planner"]


def answers_first(request: FakeRequest) -> ExecutionOutput:
    """An executor whose direct answer to the root cites nothing; the subtasks' answers cite their source."""
    if request.task_id == "root":
        return ExecutionOutput(answer="A scheduler thread runs them.", citations=[])
    return grounded_executor(request)


async def test_a_question_the_atomizer_would_plan_is_answered_first_and_planned_only_if_no_source_confirms_it(
    make_agent,
) -> None:
    # Confirmed: the direct answer is the answer, no plan.
    model = ScriptedModel(script={"atomizer": AtomizerOutput(is_atomic=False), "executor": grounded_executor})
    result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)
    root = result.graph.root
    assert [c.request.role for c in model.calls] == ["atomizer", "executor"]
    assert root.node_type is NodeType.EXECUTE and len(result.graph) == 1
    assert root.result == "It runs them as tasks [1]." and root.sources[0].verified

    # Unconfirmed after the second look: planned, and the plan's report is the answer.
    model = ScriptedModel(
        script={
            "atomizer": AtomizerOutput(is_atomic=False),
            "planner": TWO_SEARCHES,
            "executor": answers_first,
            "aggregator": AggregationOutput(answer="The event loop runs them [1]."),
        }
    )
    result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)
    root = result.graph.root
    roles = [c.request.role for c in model.calls]
    assert roles[:4] == ["atomizer", "executor", "executor", "planner"]  # the answer, its second look, the plan
    assert roles[4:7] == ["executor", "executor", "aggregator"]
    assert root.node_type is NodeType.PLAN and len(result.graph) == 3
    statuses = [s.status for s in root.history]
    assert statuses[statuses.index(TaskStatus.EXECUTING) + 1] is TaskStatus.PLANNING
    assert "no source confirms the direct answer: the question is planned" in root.warnings
    assert root.result == "The event loop runs them [1]."

    # Not answered first when turned off: planned at once.
    model = ScriptedModel(script={"atomizer": AtomizerOutput(is_atomic=False)})
    result = await make_agent(model, profile="general_agent", answer_first=False).arun(COMPOUND, write_files=False)
    assert [c.request.role for c in model.calls][:2] == ["atomizer", "planner"]


async def test_an_unconfirmed_direct_answer_stands_when_the_plan_comes_to_nothing(make_agent) -> None:
    # A plan that splits nothing (it lists the question itself): the question is not answered a third time.
    splits_nothing = PlanOutput(
        subtasks=[
            SubTask(goal=COMPOUND, task_type=TaskType.SEARCH),
            SubTask(goal="What do threads share?", task_type=TaskType.SEARCH),
        ]
    )
    model = ScriptedModel(
        script={"atomizer": AtomizerOutput(is_atomic=False), "planner": splits_nothing, "executor": answers_first}
    )
    result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)
    root = result.graph.root
    assert [c.request.role for c in model.calls] == ["atomizer", "executor", "executor", "planner"]
    assert result.status == "completed" and len(result.graph) == 1
    assert root.result == "A scheduler thread runs them."
    assert any(w.endswith("the unconfirmed direct answer stands") for w in root.warnings)

    # Every subtask failed: the direct answer, not a failed run.
    def subtasks_fail(request: FakeRequest) -> ExecutionOutput:
        if request.task_id != "root":
            raise RuntimeError("disk on fire")
        return answers_first(request)

    model = ScriptedModel(
        script={"atomizer": AtomizerOutput(is_atomic=False), "planner": TWO_SEARCHES, "executor": subtasks_fail}
    )
    result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)
    root = result.graph.root
    assert result.status == "completed_with_failures" and root.result == "A scheduler thread runs them."
    assert [c.status for c in result.graph.children("root")] == [TaskStatus.FAILED, TaskStatus.FAILED]
    assert any(w.startswith("all 2 subtasks failed") and "direct answer stands" in w for w in root.warnings)


async def test_a_plan_that_repeats_its_goal_is_dropped_and_the_goal_executed(make_agent) -> None:
    # The small planner often lists the question itself among its subtasks, beside guesses.
    repeating = PlanOutput(
        subtasks=[
            SubTask(goal=COMPOUND.upper().rstrip("?"), task_type=TaskType.SEARCH),  # the goal, case and "?" aside
            SubTask(goal="The component is the event loop.", task_type=TaskType.THINK, depends_on_indices=[0]),
        ]
    )
    model = ScriptedModel(
        script={"atomizer": AtomizerOutput(is_atomic=False), "planner": repeating, "executor": grounded_executor}
    )
    result = await make_agent(model, profile="general_agent", answer_first=False).arun(COMPOUND, write_files=False)

    assert result.status == "completed"
    assert len(result.graph) == 1
    root = result.graph.root
    assert root.node_type is NodeType.EXECUTE
    assert [c.request.role for c in model.calls] == ["atomizer", "planner", "executor"]
    assert [s.status for s in root.history][-3:] == [TaskStatus.PLANNING, TaskStatus.EXECUTING, TaskStatus.DONE]
    assert root.result == result.final_answer == "It runs them as tasks [1]."
    assert any("include the task itself" in w for w in root.warnings)

    splitting = PlanOutput(
        subtasks=[*repeating.subtasks[1:], SubTask(goal="What do threads share?", task_type=TaskType.SEARCH)]
    )
    model = ScriptedModel(script={"atomizer": AtomizerOutput(is_atomic=False), "planner": splitting})
    result = await make_agent(model, profile="general_agent", answer_first=False).arun(COMPOUND, write_files=False)
    assert result.graph.root.node_type is NodeType.PLAN and len(result.graph) == 3


async def test_the_embedded_planner_stops_writing_once_its_plan_lists_the_goal(make_agent) -> None:
    # Decoded as the embedded model is, the planner stops at the subtask that repeats the goal:
    # what it would write after it is not used (the goal is executed directly).
    repeating = PlanOutput(
        subtasks=[
            SubTask(goal=COMPOUND, task_type=TaskType.SEARCH),
            SubTask(goal="The component is the event loop.", task_type=TaskType.THINK, depends_on_indices=[0]),
        ]
    )
    model = ScriptedModel(
        grammar=True,
        script={
            "atomizer": AtomizerOutput(is_atomic=False),
            "planner": repeating,
            "executor": AnswerOutput(answer="The event loop runs coroutines [1]."),
        },
    )
    result = await make_agent(model, profile="general_agent", answer_first=False).arun(COMPOUND, write_files=False)

    assert result.status == "completed" and len(result.graph) == 1
    root = result.graph.root
    assert [c.request.role for c in model.calls] == ["atomizer", "planner", "executor"]
    (planner,) = model.calls_for(role="planner")
    assert planner.output == repeating.model_dump_json().split("},{")[0] + "}"  # the first subtask, no more
    assert any("include the task itself" in w for w in root.warnings)
    assert not any("cut off" in w for w in root.warnings)  # stopped on purpose, not by the token limit

    # A plan that does not list its goal is written whole.
    splitting = PlanOutput(
        subtasks=[*repeating.subtasks[1:], SubTask(goal="What do threads share?", task_type=TaskType.SEARCH)]
    )
    model = ScriptedModel(grammar=True, script={"atomizer": AtomizerOutput(is_atomic=False), "planner": splitting})
    result = await make_agent(model, profile="general_agent", answer_first=False).arun(COMPOUND, write_files=False)
    assert model.calls_for(role="planner")[0].output == splitting.model_dump_json()
    assert result.graph.root.node_type is NodeType.PLAN and len(result.graph) == 3


async def test_a_subtask_the_plan_lists_twice_runs_once(make_agent) -> None:
    which = SubTask(goal="Which component runs coroutines?", task_type=TaskType.SEARCH)
    share = SubTask(goal="What does it share with threads?", task_type=TaskType.SEARCH, depends_on_indices=[1, 9])
    twice = PlanOutput(subtasks=[which, which.model_copy(update={"goal": "which component runs coroutines"}), share])
    model = ScriptedModel(
        script={"atomizer": AtomizerOutput(is_atomic=True), "planner": twice, "executor": grounded_executor}
    )
    # Planned although one passage holds the goal's words: the root's atomizer is not asked. (The
    # canned report cites nothing; its second look is not counted here.)
    agent = make_agent(model, profile="general_agent", force_root_planning=True, second_look=False)
    result = await agent.arun(GOAL, write_files=False)

    assert result.status == "completed"
    first, second = result.graph.children("root")
    assert (first.goal, second.goal) == (which.goal, share.goal)
    assert second.depends_on == [first.task_id]  # it depended on the repeat
    assert "dropped dependency 9: out of range (plan has 2 subtasks)" in second.warnings
    assert len(model.calls_for(role="executor")) == 2
    assert any("1 repeated subtask(s) dropped" in w for w in result.graph.root.warnings)

    # A plan of one subtask said twice splits nothing: the goal itself is executed.
    model = ScriptedModel(
        script={
            "atomizer": AtomizerOutput(is_atomic=True),
            "planner": PlanOutput(subtasks=[which, which]),
            "executor": grounded_executor,
        }
    )
    result = await make_agent(model, profile="general_agent", force_root_planning=True).arun(GOAL, write_files=False)
    assert len(result.graph) == 1 and result.graph.root.node_type is NodeType.EXECUTE
    assert [c.request.role for c in model.calls] == ["planner", "executor"]
    assert any("all ask one thing" in w for w in result.graph.root.warnings)


async def test_an_answer_that_gives_a_source_number_for_the_answer_is_asked_again(make_agent) -> None:
    # "The component is [1]." takes a source's number for the thing asked about.
    def executor(request: FakeRequest) -> AnswerOutput:
        if "previous answer said: The component that runs coroutines is [1]." in request.prompt:
            return AnswerOutput(answer="The event loop runs coroutines and tasks [1].")
        return AnswerOutput(answer="The component that runs coroutines is [1].")

    model = embedded(executor)
    result = await make_agent(model, profile="general_agent").arun(GOAL, write_files=False)

    root = result.graph.root
    assert len(model.calls_for(role="executor")) == 2
    assert root.result == "The event loop runs coroutines and tasks [1]."
    assert root.sources[0].verified is True
    assert any("citation number as its answer" in w for w in root.warnings)
    assert root.agent_calls == 2


# COMPOUND's two questions, one search each.
TWO_SEARCHES = PlanOutput(
    subtasks=[
        SubTask(goal="Which component runs coroutines?", task_type=TaskType.SEARCH),
        SubTask(goal="What do threads share?", task_type=TaskType.SEARCH),
    ]
)


async def test_a_report_that_gives_a_source_number_for_the_answer_states_the_result_instead(make_agent) -> None:
    model = ScriptedModel(
        script={
            "atomizer": AtomizerOutput(is_atomic=False),
            "planner": TWO_SEARCHES,
            "executor": grounded_executor,
            "aggregator": AggregationOutput(answer="The component that runs coroutines is [1]. It is fast."),
        }
    )
    result = await make_agent(model, profile="general_agent", answer_first=False).arun(COMPOUND, write_files=False)

    # Asked once: the subtask's result that cites the same source says what it states.
    assert len(model.calls_for(role="aggregator")) == 1
    assert result.graph.root.result == "It runs them as tasks [1]. It is fast."
    assert any("replaced by the result" in w for w in result.graph.root.warnings)


async def test_a_last_sentence_the_model_stopped_in_the_middle_of_is_not_kept(make_agent) -> None:
    model = ScriptedModel(
        grammar=True,
        script={
            "atomizer": AtomizerOutput(is_atomic=False),
            "planner": TWO_SEARCHES,
            "executor": AnswerOutput(answer="The event loop runs coroutines and tasks [1]. It is stored in the"),
            "aggregator": AggregationOutput(answer="The event loop runs coroutines and tasks [1]. Such as"),
        },
    )
    result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)

    root = result.graph.root
    for node in (root, *result.graph.children(root.task_id)):
        assert re.fullmatch(r"The event loop runs coroutines and tasks \[\d\]\.", node.result or "")
        assert any("stopped mid-way" in w for w in node.warnings)


async def test_an_unsupported_citation_is_dropped_and_noted_on_the_node(make_agent) -> None:
    bad = ExecutionOutput(
        answer="The loop uses threads [1].", citations=[{"source": 1, "quote": "the loop spawns one thread per task"}]
    )
    model = ScriptedModel(script={"atomizer": AtomizerOutput(is_atomic=True), "executor": bad})
    result = await make_agent(model, profile="general_agent").arun(GOAL, write_files=False)

    root = result.graph.root
    assert root.result == "The loop uses threads."
    assert any("quote does not occur" in w for w in root.warnings)
    assert "## References" not in result.report_markdown


async def test_a_second_hop_searches_with_the_first_hops_result_and_skips_its_passages(make_agent, docs_index) -> None:
    plan = PlanOutput(
        subtasks=[
            SubTask(goal="Which component runs coroutines?", task_type=TaskType.SEARCH),
            SubTask(goal="What does that component share?", task_type=TaskType.SEARCH, depends_on_indices=[0]),
        ]
    )
    queries: list[str] = []
    limits: list[int] = []
    search = docs_index.search

    def spy(query: str, limit: int = 5, **options):  # records what the executors searched for
        queries.append(query)
        limits.append(limit)
        return search(query, limit, **options)

    docs_index.search = spy  # type: ignore[method-assign]
    try:
        model = ScriptedModel(script={"planner": plan, "executor": grounded_executor})
        # No second look at the report (its search would be one more here).
        result = await make_agent(model, max_depth=1, second_look=False, answer_first=False).arun(
            COMPOUND, write_files=False
        )
    finally:
        del docs_index.search
    assert result.status == "completed"
    lookup, first, second, report = queries  # is the goal a lookup? the executors' searches, the report's
    assert lookup == report == COMPOUND
    assert first.splitlines() == ["Which component runs coroutines?", COMPOUND]
    assert "It runs them as tasks." in second  # the first hop's result, citations removed
    # The passage the first hop cites reaches the second through its result, so the second
    # hop's search asks for one more passage to make up for skipping it.
    assert limits == [5, 5, 6, 5]
    hop2 = result.graph.get("root.1")
    assert [s.ref for s in hop2.sources].count(result.graph.get("root.0").sources[0].ref) == 1


# A plan gone astray: no step asks what the goal asks.
ASTRAY = PlanOutput(
    subtasks=[
        SubTask(goal="What time is it now?", task_type=TaskType.SEARCH),
        SubTask(goal="Which year is it?", task_type=TaskType.SEARCH),
    ]
)


async def test_the_report_reads_the_best_passages_for_the_goal_beside_the_results(make_agent) -> None:
    # The subtasks went astray (each answers without a source); one search for the goal finds the answer.

    def report(request: FakeRequest) -> AggregationOutput:
        cited = cite_sources(request.prompt, 1)
        return AggregationOutput(answer=f"The event loop runs them [{cited[0].source}]." if cited else "Unknown.")

    model = ScriptedModel(
        script={
            "planner": ASTRAY,
            "executor": ExecutionOutput(answer="It is late.", citations=[]),
            "aggregator": report,
        }
    )
    result = await make_agent(model, max_depth=1).arun(COMPOUND, write_files=False)

    (call,) = model.calls_for(role="aggregator")
    assert "from the results and the numbered sources" in call.request.prompt
    assert "## Sources you may cite as [n]\n[1]" in call.request.prompt
    # The report's citation is checked as an executor's is: it moves to the passage that states it.
    root = result.graph.root
    (cited,) = re.findall(r"\[(\d)\]", root.result)
    assert root.result.startswith("The event loop runs them [")
    assert root.sources[int(cited) - 1].ref.endswith("asyncio.md") and root.sources[int(cited) - 1].verified


STRICT = "If the sources do not state the answer, say so."  # a second look's instruction


def quoting(request: FakeRequest, words: str, source: int = 1) -> Citation:
    """A citation of ``source`` (:func:`ground` moves it to the source that holds the quote)
    quoting ``words``; under a grammar, the sentence offered to the embedded model that holds them."""
    schema = request.response_format["json_schema"]["schema"] if request.response_format else {}
    offered = schema.get("$defs", {}).get("Citation", {}).get("properties", {}).get("quote", {}).get("enum")
    if offered is None:
        return Citation(source=source, quote=words)
    return Citation(source=source, quote=next(sentence for sentence in offered if words in sentence))


@pytest.mark.parametrize("grammar", [True, False], ids=["embedded", "hosted"])
async def test_an_answer_no_source_confirms_is_replaced_by_a_second_look_that_one_does(make_agent, grammar) -> None:
    # The executor answers from memory; asked once more, from the passages alone, it copies the
    # sentence that supports its answer first (the embedded model too, which otherwise answers
    # plainly), and the quote confirms the answer.
    def executor(request: FakeRequest) -> AnswerOutput | ExecutionOutput:
        if STRICT in request.prompt:
            return ExecutionOutput(
                answer="The event loop runs coroutines and tasks [1].",
                citations=[quoting(request, "The event loop runs coroutines and tasks.")],
            )
        answer = "Coroutines are run by a scheduler thread. The sources do not confirm it."
        return AnswerOutput(answer=answer) if grammar else ExecutionOutput(answer=answer, citations=[])

    model = ScriptedModel(grammar=grammar, script={"atomizer": AtomizerOutput(is_atomic=True), "executor": executor})
    result = await make_agent(model, profile="general_agent").arun(GOAL, write_files=False)

    first, second = model.calls_for(role="executor")
    assert STRICT not in first.request.prompt and "give the best answer you know" in first.request.prompt
    assert ('"citations"' in first.request.prompt) is not grammar and '"citations"' in second.request.prompt
    # The embedded model may only quote the sentences it was shown.
    assert (quoting(second.request, "runs coroutines").quote != "runs coroutines") is grammar
    # The same goal and passages, then what a search with the answer's words ("thread") adds.
    shown = first.request.prompt.split("## Your task")[0].rstrip()
    assert second.request.prompt.startswith(shown) and "threads.md" not in shown
    assert "threads.md" in second.request.prompt.split("## Your task")[0]
    root = result.graph.root
    assert root.result == "The event loop runs coroutines and tasks [1]."
    assert root.sources[0].verified is True
    assert any("replaced by a second look" in w for w in root.warnings)
    assert "Not confirmed" not in result.report_markdown


async def test_a_second_look_that_only_restates_the_question_is_answered_by_the_sentence_it_quoted(make_agent) -> None:
    quoted: list[str] = []

    def executor(request: FakeRequest) -> AnswerOutput | ExecutionOutput:
        if STRICT in request.prompt:
            citation = quoting(request, "The event loop runs coroutines and tasks.")
            quoted.append(citation.quote)
            return ExecutionOutput(answer="The asyncio event loop runs coroutines [1].", citations=[citation])
        return AnswerOutput(answer="Coroutines are run by a scheduler thread.")

    result = await make_agent(embedded(executor), profile="general_agent").arun(GOAL, write_files=False)

    root = result.graph.root
    assert root.result == f"{quoted[0]} [1]" and root.sources[0].verified
    assert any("only restated the question" in w for w in root.warnings)


@pytest.mark.parametrize(
    ("answer", "replaced"),
    [("The event loop runs coroutines and tasks [1].", True), ("The asyncio event loop runs coroutines [1].", False)],
    ids=["an answer a source states", "a restatement of the question"],
)
async def test_a_second_look_whose_quote_does_not_state_its_answer_is_checked_against_the_sources(
    make_agent, answer: str, replaced: bool
) -> None:
    # Held to the sentences shown, the embedded model copied one that does not state its answer;
    # a source states the answer all the same. An answer that restates the question says nothing.
    def executor(request: FakeRequest) -> AnswerOutput | ExecutionOutput:
        if STRICT in request.prompt:
            return ExecutionOutput(answer=answer, citations=[quoting(request, "Threads share memory")])
        return AnswerOutput(answer="Coroutines are run by a scheduler thread.")

    result = await make_agent(embedded(executor), profile="general_agent").arun(GOAL, write_files=False)

    root = result.graph.root
    if not replaced:
        assert root.result == "Coroutines are run by a scheduler thread."
        return
    (cited,) = re.findall(r"\[(\d)\]", root.result)
    assert root.result.startswith("The event loop runs coroutines and tasks [")
    assert root.sources[int(cited) - 1].ref.endswith("asyncio.md") and root.sources[int(cited) - 1].verified
    assert not any(s.verified for s in root.sources if s.ref.endswith("threads.md"))


FILLER = " ".join(f"Float comparison of NaN values is described here, part {i}." for i in range(14))
IEEE = "This behaviour is compliant with IEEE 754."
NAN_GOAL = "Which standard does the float comparison of NaN values follow?"
NAN_TEXT = "Float comparison of NaN values: a NaN value compares unequal to every value."


def docs_folder(tmp_path: Path, **texts: str) -> Path:
    """A folder of one Markdown document per keyword: ``NAME.md``, headed by its name."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in texts.items():
        (folder / f"{name}.md").write_text(f"# {name}\n\n{text}\n")
    return folder


@pytest.mark.parametrize(
    "notes",
    [IEEE, f"{FILLER} {IEEE}"],
    ids=["in a passage without the goal's words", "past the goal's snippet of a long passage"],
)
async def test_a_second_look_also_searches_with_the_words_the_unconfirmed_answer_adds(
    settings: Settings, tmp_path: Path, notes: str
) -> None:
    # The goal's search does not show the sentence that states the answer: a search with the
    # answer's "IEEE 754" finds it.
    folder = docs_folder(
        tmp_path, a=NAN_TEXT, b="Float values compare by value; NaN values are special float values.", notes=notes
    )

    def executor(request: FakeRequest) -> AnswerOutput | ExecutionOutput:
        if STRICT not in request.prompt:
            return AnswerOutput(answer="NaN comparison follows the IEEE 754 standard.")  # from memory
        shown = re.search(rf"\[(\d)\] notes\.md[^\n]*{IEEE}", request.prompt)
        if not shown:
            return ExecutionOutput(answer="The sources do not say.", citations=[])
        citation = quoting(request, IEEE, source=int(shown[1]))
        return ExecutionOutput(answer=f"It follows IEEE 754 [{shown[1]}].", citations=[citation])

    model = embedded(executor)
    with DocsIndex.from_folder(folder) as docs:
        agent = ProfiledSentientAgent.create_with_profile("general_agent", settings=settings, model=model, docs=docs)
        result = await agent.arun(NAN_GOAL, write_files=False)

    first, _ = model.calls_for(role="executor")
    assert "IEEE" not in first.request.prompt
    assert ("notes.md" in first.request.prompt) is (notes != IEEE)  # the long passage, cut before it
    root = result.graph.root
    (cited,) = re.findall(r"\[(\d)\]", root.result)
    assert root.result.startswith("It follows IEEE 754 [")
    assert root.sources[int(cited) - 1].ref.endswith("notes.md") and root.sources[int(cited) - 1].verified
    assert any("replaced by a second look" in w for w in root.warnings)


async def test_a_second_look_no_source_confirms_either_leaves_the_first_answer(make_agent) -> None:
    model = embedded(AnswerOutput(answer="Coroutines are run by a scheduler thread."))
    result = await make_agent(model, profile="general_agent").arun(GOAL, write_files=False)

    assert len(model.calls_for(role="executor")) == 2
    root = result.graph.root
    assert root.result == "Coroutines are run by a scheduler thread."
    assert not any(s.verified for s in root.sources)
    assert any("first answer is kept" in w for w in root.warnings)
    assert "Not confirmed by the sources" in result.report_markdown


@pytest.mark.parametrize(
    ("second_look", "budget", "warning"),
    [
        ("declines", {}, "no source states its answer either"),
        ("fails", {}, "second look failed"),
        ("declines", {"max_llm_calls": 2}, "the budget has no room left"),
    ],
)
async def test_a_first_answer_a_second_look_fails_to_confirm_is_cited_where_its_passages_state_it(
    settings: Settings, tmp_path: Path, second_look: str, budget: dict[str, int], warning: str
) -> None:
    # The model answered from memory and, asked again, could not answer from the passages (or
    # was not asked: the call failed, or the budget had no room for it); but the search with the
    # first answer's words ("IEEE 754") found the sentence that states it.
    folder = docs_folder(tmp_path, a=NAN_TEXT, notes=IEEE)

    def executor(request: FakeRequest) -> AnswerOutput | ExecutionOutput:
        if STRICT not in request.prompt:
            return AnswerOutput(answer="NaN comparison follows the IEEE 754 standard.")
        if second_look == "fails":
            return ModelError("the model crashed")
        return ExecutionOutput(answer="The sources do not say.", citations=[])

    with DocsIndex.from_folder(folder) as docs:
        agent = ProfiledSentientAgent.create_with_profile(
            "general_agent", settings=settings, model=embedded(executor), docs=docs, **budget
        )
        result = await agent.arun(NAN_GOAL, write_files=False)

    root = result.graph.root
    (cited,) = re.findall(r"\[(\d)\]", root.result)
    assert root.result == f"NaN comparison follows the IEEE 754 standard [{cited}]."
    source = root.sources[int(cited) - 1]
    assert source.ref.endswith("notes.md") and source.verified and IEEE in (source.quote or "")
    assert any(warning in w for w in root.warnings)
    assert any("a passage the second look read states the first answer" in w for w in root.warnings)
    assert "Not confirmed by the sources" not in result.report_markdown
    assert result.status == "completed"


async def test_no_second_look_for_a_confirmed_answer_a_report_asked_for_or_when_turned_off(make_agent) -> None:
    async def executors(goal: str, answer: str, **engine: object) -> int:
        model = embedded(AnswerOutput(answer=answer))
        await make_agent(model, profile="general_agent", **engine).arun(goal, write_files=False)
        return len(model.calls_for(role="executor"))

    assert await executors(GOAL, "The event loop runs coroutines and tasks [1].") == 1  # confirmed
    assert await executors(GOAL, "A scheduler thread.", second_look=False) == 1
    # A report is asked for, not a question: a short answer must not replace it.
    report = "Write an overview of how the asyncio event loop runs coroutines."
    assert await executors(report, "A scheduler thread.") == 1
    assert await executors(GOAL, "# The loop\n\nA scheduler thread runs them.\n\n- It is fast.") == 1  # written as one
    assert await executors(GOAL, "A scheduler thread.") == 2
    # A cited supporting fact does not confirm an answer whose own sentence cites nothing.
    assert await executors(GOAL, "A scheduler thread runs them. The event loop runs coroutines and tasks [1].") == 2


async def test_a_second_look_runs_only_where_the_budget_has_room_for_it(make_agent) -> None:
    # Optional work must not be what exhausts a budget: that would stop a run that has its answer.
    async def run(**budget: float) -> tuple[str, int, list[str]]:
        model = embedded(AnswerOutput(answer="A scheduler thread."))
        result = await make_agent(model, profile="general_agent", **budget).arun(GOAL, write_files=False)
        return result.status, len(model.calls_for(role="executor")), result.graph.root.warnings

    status, executors, warnings = await run(max_llm_calls=1)
    assert (status, executors) == ("completed", 1)
    assert any("the budget has no room left" in w for w in warnings)
    # Room for the second look's every attempt (3 validation x 4 transient) beside the first call.
    assert (await run(max_llm_calls=13))[:2] == ("completed", 2)
    assert (await run(max_llm_calls=12))[:2] == ("completed", 1)
    # Less time left than the call's timeout (120 s).
    assert (await run(max_time_s=60))[:2] == ("completed", 1)
    assert (await run(max_time_s=600))[:2] == ("completed", 2)


async def test_a_planned_goals_second_look_reads_the_passages_not_the_results(make_agent) -> None:
    # The plan went astray and the report states what no source does: the second look is shown the
    # goal's own passages and none of the subtasks' results.

    def executor(request: FakeRequest) -> AnswerOutput | ExecutionOutput:
        if STRICT in request.prompt:
            citation = quoting(request, "The event loop runs coroutines and tasks.")
            return ExecutionOutput(answer="The event loop runs coroutines and tasks [1].", citations=[citation])
        return AnswerOutput(answer="It is late.")

    model = ScriptedModel(
        grammar=True,
        script={
            "atomizer": AtomizerOutput(is_atomic=False),
            "planner": ASTRAY,
            "executor": executor,
            "aggregator": AggregationOutput(answer="A scheduler thread runs them late."),
        },
    )
    result = await make_agent(model, profile="general_agent", answer_first=False).arun(COMPOUND, write_files=False)

    (look,) = model.calls_for(role="executor", task_id="root")
    assert STRICT in look.request.prompt
    assert "It is late." not in look.request.prompt and "Result of" not in look.request.prompt
    assert "The event loop runs coroutines and tasks." in look.request.prompt
    # Its [1] moves to the passage its quote is from, as an executor's does.
    root = result.graph.root
    (cited,) = re.findall(r"\[(\d)\]", root.result)
    assert root.result.startswith("The event loop runs coroutines and tasks [")
    assert root.sources[int(cited) - 1].ref.endswith("asyncio.md") and root.sources[int(cited) - 1].verified


async def test_a_reasoning_step_without_dependencies_waits_for_the_searches_before_it(make_agent) -> None:
    plan = PlanOutput(
        subtasks=[
            SubTask(goal="Find how the loop runs coroutines", task_type=TaskType.SEARCH),
            SubTask(goal="Explain why that is efficient", task_type=TaskType.THINK, depends_on_indices=[1]),
        ]
    )
    model = ScriptedModel(script={"planner": plan})
    result = await make_agent(model, max_depth=1).arun(COMPOUND, write_files=False)
    think = result.graph.get("root.1")
    assert think.depends_on == ["root.0"]
    assert any("dropped dependency on itself" in w for w in think.warnings)
    assert any("depends on the earlier searches [0]" in w for w in think.warnings)
    assert think.status is TaskStatus.DONE
