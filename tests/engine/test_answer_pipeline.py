"""How the pipeline answers a question: from one search first, with the passage it names read by
the verifier; planned when no passage supports that answer, the model's own answer standing
if the research finds nothing better; and never a citation badged verified that the verifier
did not find to support the answer.

Tests of what a plan does turn ``answer_first`` off: otherwise their question would be answered
before it is planned."""

from __future__ import annotations

import pytest

from sentient.agents.models.fake import (
    FakeRequest,
    Output,
    ScriptedModel,
    asks_for,
    default_response,
    executor_answer,
)
from sentient.agents.schemas import AtomizerOutput, ExecutionOutput, QuestionPlan
from sentient.api import ProfiledSentientAgent
from sentient.context.grounding import Reading, Verdict
from sentient.graph.node import NodeType, TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus
from sentient.tools.docs_search import DocsIndex

GOAL = "How does the asyncio event loop run coroutines?"
COMPOUND = "Which component runs coroutines, and what does it share with threads?"
REPORT = "Explain which component runs coroutines and what it shares with threads."  # asked for, not a question
MEMORY = "Question: "  # how the task of an answer from the model's own knowledge starts
# A question answered first whose answer no passage supports is planned as two lookups: what it
# refers to, then the question about that, with a slot (X) for what the first lookup finds.
BRIDGE = QuestionPlan(
    question=COMPOUND, first="Which component runs coroutines?", then="What does X share with threads?"
)
TWO_SEARCHES = PlanOutput(
    subtasks=[
        SubTask(goal="Which component runs coroutines?", task_type=TaskType.SEARCH),
        SubTask(goal="What do threads share?", task_type=TaskType.SEARCH),
    ]
)


def from_first_source(request: FakeRequest) -> Output:
    """An executor that answers from the first passage it was shown, naming it and copying its
    first words as the answer's few words (or from memory)."""
    if asks_for(request, "source"):
        return executor_answer(request, "It runs them as tasks.")
    return ExecutionOutput(answer="The event loop.")


def from_memory(request: FakeRequest) -> dict | ExecutionOutput:
    """An executor whose answer no passage states (source 0); asked without sources, it answers from memory."""
    if asks_for(request, "source"):
        return {"answer": "A scheduler thread runs them.", "source": 0}
    return ExecutionOutput(answer="The event loop runs them.")


SAME = "the same"  # read alone, the passage gives the executor's few words (its first words)


def verdicts(*answers: bool | int | str):
    """A verifier that gives ``answers`` in turn: (a bool) a verdict on the passages named, shown
    the answer, (an int) the passage its second reading over every passage shown names (0: none),
    or (a str, or ``SAME``) the answer it reads in an accepted passage without being shown the
    executor's. Asked for a verdict when the next answer is not one, it finds them supporting."""
    given = list(answers)

    def verifier(request: FakeRequest) -> Verdict | Reading | dict:
        if asks_for(request, "supports") and not (given and isinstance(given[0], bool)):
            return Verdict(supports=True)
        answer = given.pop(0)
        if asks_for(request, "source"):
            assert isinstance(answer, int) and not isinstance(answer, bool), "a second reading was not expected"
            return {"source": answer}
        if asks_for(request, "answer"):
            assert isinstance(answer, str), "a reading of the passage alone was not expected"
            return default_response(request) if answer == SAME else Reading(answer=answer)
        assert isinstance(answer, bool), "a verdict was expected"
        return Verdict(supports=answer)

    return verifier


async def test_a_question_is_answered_from_one_search_and_its_passage_read_by_the_verifier(make_agent) -> None:
    model = ScriptedModel(script={"executor": from_first_source, "verifier": verdicts(SAME)})
    result = await make_agent(model, profile="general_agent").arun(GOAL, write_files=False)

    assert result.status == "completed" and len(result.graph) == 1
    assert [c.request.role for c in model.calls] == ["executor", "verifier", "verifier"]  # no atomizer for a question
    root = result.graph.root
    assert root.node_type is NodeType.EXECUTE
    assert root.result == "It runs them as tasks. [1]"
    assert root.sources[0].verified is True and root.sources[0].ref.endswith("asyncio.md")
    # The verifier reads only the passage the answer names, asked what it answers for the
    # question, without being shown the answer; then, shown it, judges whether the passage supports it.
    reading, judging = (c.request.prompt for c in model.calls_for(role="verifier"))
    assert GOAL in reading and "It runs them as tasks." not in reading
    assert GOAL in judging and "It runs them as tasks." in judging
    assert "The event loop runs coroutines and tasks." in judging and "Threads share memory" not in judging
    assert "The event loop runs coroutines and tasks." in reading and "Threads share memory" not in reading
    assert "Not confirmed" not in result.report_markdown


async def test_a_named_passage_that_read_alone_gives_another_answer_is_not_cited_and_researched(
    make_agent,
) -> None:
    # The passage the executor named holds its answer's words; asked what the passage answers
    # without being shown the answer, the verifier reads another answer (or words of the question,
    # which answer nothing). The answer cites nothing, and that doubt is researched: the question
    # is planned. When the research finds nothing better, the other answer that reading gave
    # stands (read off the passage for the question alone), else the model's own, asked without
    # passages: not the executor's, which the passage it named was not read to state.
    nothing_first = QuestionPlan(question=GOAL, first=GOAL, then=GOAL)
    for reading, stands, memory in (
        ("Threads", "Threads", []),
        ("asyncio event loop", "The event loop.", ["executor"]),
    ):
        script = {"executor": from_first_source, "verifier": verdicts(reading), "planner": nothing_first}
        model = ScriptedModel(script=script)
        result = await make_agent(model, profile="general_agent").arun(GOAL, write_files=False)
        root = result.graph.root
        assert [c.request.role for c in model.calls] == ["executor", "verifier", *memory, "planner"]
        assert root.result == stands and not any(s.verified for s in root.sources)
        assert any(f"read for the question alone, gives {reading!r}: not cited" in w for w in root.warnings)
        assert "no source supports the direct answer: the question is planned" in root.warnings
        assert "Not confirmed by the sources" in result.report_markdown


async def test_an_answer_no_passage_states_is_not_verified_and_the_question_is_planned(make_agent) -> None:
    # The direct answer names no passage, and asked again, the executor finds none that states it:
    # no verified badge, the model is asked without passages, the question is planned, and the
    # research's answer, whose passage the verifier reads the same, is the answer.
    model = ScriptedModel(
        script={
            "executor": lambda request: (from_memory if request.task_id == "root" else from_first_source)(request),
            # The direct answer: no passage shown states it; the two lookups, each read the same
            # without the answer.
            "verifier": verdicts(0, SAME, SAME),
            "planner": BRIDGE,
        }
    )
    result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)

    roles = [c.request.role for c in model.calls]
    assert roles[:4] == ["executor", "verifier", "executor", "planner"]
    assert "Which source above states this answer" in model.calls[1].request.prompt
    assert MEMORY in model.calls[2].request.prompt and "Sources you may cite" not in model.calls[2].request.prompt
    assert "aggregator" not in roles  # the last lookup asks the question: its answer is the answer
    root = result.graph.root
    assert root.node_type is NodeType.PLAN and len(result.graph) == 3
    # Two lookups: what the question refers to, then the question about that, filled with what it found.
    first, then = result.graph.children("root")
    assert (first.goal, then.goal) == (
        "Which component runs coroutines?",
        "What does It runs them as tasks. share with threads?",
    )
    assert then.depends_on == [first.task_id]
    statuses = [s.status for s in root.history]
    assert statuses[statuses.index(TaskStatus.EXECUTING) + 1] is TaskStatus.PLANNING
    assert "no source supports the direct answer: the question is planned" in root.warnings
    # The answer is the second lookup's, after what it rests on, each with its verified citation.
    # (Both rest on the same passage here: the second lookup was shown the first one's.)
    assert root.result == "It runs them as tasks. [1]\n\n- Which component runs coroutines? It runs them as tasks. [1]"
    assert [s.verified for s in root.sources] == [True]


async def test_an_answer_read_the_same_blind_but_judged_unsupported_is_not_verified_nor_researched(make_agent) -> None:
    # Read without the answer, the passage gives the executor's answer; shown that answer, the
    # verifier judges that the passage does not support it (a small model can misread one passage
    # the same way twice: another row of a table, a superseded policy). The citation is not shown;
    # the executor is asked once which passage states it (none), and the question is not planned:
    # the two readings agreed, so it is not a doubt that more research would settle.
    model = ScriptedModel(script={"executor": from_first_source, "verifier": verdicts(SAME, False, 0)})
    result = await make_agent(model, profile="general_agent").arun(GOAL, write_files=False)

    root = result.graph.root
    assert [c.request.role for c in model.calls] == ["executor", "verifier", "verifier", "verifier"]
    assert root.node_type is NodeType.EXECUTE and len(result.graph) == 1
    assert root.result == "It runs them as tasks." and root.sources[0].verified is not True
    assert "the verifier, shown the answer, found that source 1 does not support it: not cited" in root.warnings
    assert "Not confirmed by the sources" in result.report_markdown


async def test_when_the_named_passage_does_not_state_the_answer_the_executor_names_one_that_does(
    make_agent,
) -> None:
    # The executor answered right but named a passage without the answer's words; the second
    # reading (the executor asked again), over every passage shown, names the one that states it.
    answer = {"answer": "It runs them as tasks.", "short": "coroutines and tasks", "source": 1}
    model = ScriptedModel(script={"executor": answer, "verifier": verdicts(2, "coroutines and tasks")})
    result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)
    root = result.graph.root
    assert [c.request.role for c in model.calls] == ["executor", "verifier", "verifier", "verifier"]
    assert root.result == "It runs them as tasks. [2]" and len(result.graph) == 1
    assert [s.verified for s in root.sources[:2]] == [None, True]  # only the cited passage carries a badge
    executed, second = (c.request for c in (model.calls[0], model.calls[1]))
    assert "[1] " in second.prompt and "[2] " in second.prompt  # it reads every passage shown
    # In the executor's own prompt with only the task replaced (the same agent, so the same system
    # prompt): the embedded model reads just the new task, from the state the answer left.
    task = "## Your task\n"
    assert second.agent == executed.agent == "search_executor"
    assert second.prompt.split(task)[0] == executed.prompt.split(task)[0]


async def test_an_accepted_passage_that_does_not_contain_the_answer_is_not_cited_and_the_answer_stands(
    make_agent,
) -> None:
    # The verifier accepted the passage, but the answer's own words are not in it: the citation is
    # not shown as evidence, and the answer stands without more research (not planned).
    answer = {"answer": "A scheduler thread runs them.", "short": "a scheduler thread", "source": 1}
    model = ScriptedModel(script={"executor": answer, "verifier": verdicts(True)})
    result = await make_agent(model, profile="general_agent").arun(GOAL, write_files=False)
    root = result.graph.root
    # Not read again: a passage without the answer's words cannot be shown to state it.
    assert [c.request.role for c in model.calls] == ["executor", "verifier"] and len(result.graph) == 1
    assert root.result == "A scheduler thread runs them." and not any(s.verified for s in root.sources)
    assert any("does not contain the answer ('a scheduler thread')" in w for w in root.warnings)
    assert "Not confirmed by the sources" in result.report_markdown


async def test_the_models_own_answer_stands_when_the_research_is_not_supported(make_agent) -> None:
    model = ScriptedModel(
        script={
            "executor": from_memory,
            # No passage named for the direct answer, nor for either lookup's, and none found by
            # the second readings.
            "verifier": verdicts(0, 0, 0),
            "planner": BRIDGE,
        }
    )
    result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)

    root = result.graph.root
    assert result.status == "completed"
    assert root.result == "The event loop runs them."  # asked without passages, not the misled sourced answer
    assert not any(s.verified for s in root.sources)
    assert any(w.endswith("the unconfirmed direct answer stands") for w in root.warnings)
    assert "Not confirmed by the sources" in result.report_markdown


@pytest.mark.parametrize("direct", ["reading", "memory"])
async def test_an_unconfirmed_research_answer_replaces_a_passages_reading_but_not_the_models_own(
    make_agent, direct: str
) -> None:
    # Neither lookup is confirmed: each passage, read for its question alone, gives another
    # answer. The research's answer still asks the question as asked, so it stands (without
    # citations) over a direct answer that was a passage's reading of the question; but not over
    # the model's own answer, asked without passages: research must not lose what the model knows.
    root_executor = from_first_source if direct == "reading" else from_memory
    model = ScriptedModel(
        script={
            "executor": lambda request: (root_executor if request.task_id == "root" else from_first_source)(request),
            # The direct answer's passage read alone gives another answer (or no passage states it); then each lookup's.
            "verifier": verdicts("A scheduler" if direct == "reading" else 0, "Memory", "Memory"),
            "planner": BRIDGE,
        }
    )
    result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)
    root = result.graph.root
    assert root.answered_from_memory is (direct == "memory")
    assert not any(s.verified for s in root.sources) and "Not confirmed by the sources" in result.report_markdown
    if direct == "reading":
        assert root.result == "It runs them as tasks.\n\n- Which component runs coroutines? It runs them as tasks."
        assert "no source supports the research's answer; it stands over the direct answer's reading" in root.warnings
    else:
        assert root.result == "The event loop runs them."
        assert "no source supports the research's answer; the unconfirmed direct answer stands" in root.warnings


def bridge_executor(request: FakeRequest) -> Output:
    """The first lookup's executor answers from memory ("The event loop", no passage states it);
    the second's from the first passage it was shown."""
    if request.task_id == "root.0" and asks_for(request, "source"):
        return {"answer": "The event loop [1]", "source": 0}
    return from_memory(request) if request.task_id != "root.1" else from_first_source(request)


async def test_the_last_lookup_asks_the_question_with_what_the_first_found_in_its_slot(make_agent) -> None:
    # The first lookup finds what the question refers to (no passage confirms it); the planner's
    # question about it has a slot, filled with that (no call), and the second lookup is searched,
    # answered and verified as the filled question. Its answer is the answer, but not confirmed:
    # its passage states it about what the first lookup found, which no passage confirms is what
    # the question names. So it is shown without citations, as not confirmed.
    asked = "What does The event loop share with threads?"
    model = ScriptedModel(
        script={
            "executor": bridge_executor,
            # The direct answer: no passage named, none found; the first lookup: the same; the second: supported.
            "verifier": verdicts(0, 0, SAME),
            "planner": BRIDGE,
        }
    )
    result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)
    root, then = result.graph.root, result.graph.get("root.1")
    assert (then.goal, then.restates) == (asked, COMPOUND)
    assert any(w == f"asked as {asked!r}, with what root.0 found" for w in then.warnings)
    calls = model.calls_for(task_id="root.1")
    assert calls and all(
        f"Task: {asked}" in c.request.prompt or f"Question: {asked}" in c.request.prompt for c in calls
    )
    assert [c.request.role for c in model.calls].count("planner") == 1
    assert then.result == "It runs them as tasks. [1]" and then.sources[0].verified
    assert root.result == "It runs them as tasks.\n\n- Which component runs coroutines? The event loop"
    assert "the research's answer is about what a lookup no source supports found" in root.warnings
    assert "Not confirmed by the sources" in result.report_markdown


async def test_a_lookup_asked_about_a_confirmed_bridge_answers_the_question_not_confirmed(make_agent) -> None:
    # The first lookup's answer is confirmed (the bridge); the second, asked about it, is not (its
    # passage, read alone, gives another answer). Its answer, asked about what the question refers
    # to, stands over the direct one, shown without citations and marked not confirmed. When the
    # second lookup asks the question itself (the planner wrote no slot), it is no answer about
    # the bridge: the model's own answer stands.
    unslotted = QuestionPlan(question=COMPOUND, first=BRIDGE.first, then="What does it share with threads?")
    for plan, stands in ((BRIDGE, "It runs them as tasks."), (unslotted, "The event loop runs them.")):
        model = ScriptedModel(
            script={
                "executor": lambda request: (from_memory if request.task_id == "root" else from_first_source)(request),
                # The direct answer: no passage states it; the first lookup's passage reads the
                # same, the second's gives another answer.
                "verifier": verdicts(0, SAME, "Memory"),
                "planner": plan,
            }
        )
        result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)
        root, first, then = result.graph.root, result.graph.get("root.0"), result.graph.get("root.1")
        assert first.result == "It runs them as tasks. [1]" and first.sources[0].verified
        assert then.result == "It runs them as tasks." and (then.restates is not None) is (plan is BRIDGE)
        assert root.result.split("\n\n")[0] == stands and "Not confirmed by the sources" in result.report_markdown
        if plan is BRIDGE:
            assert root.result == f"{stands}\n\n- Which component runs coroutines? It runs them as tasks."
            why = "no source supports the research's answer, asked about what a confirmed lookup found"
            assert why in root.warnings


@pytest.mark.parametrize(
    ("goal", "then"),
    [
        (COMPOUND, "What does it share?"),  # the planner wrote no slot
        # The question's own X is a word: a slot the planner wrote there is not filled.
        ("Which component runs coroutines on X, and what does it share?", "What does X share?"),
    ],
)
async def test_without_a_slot_the_last_lookup_asks_the_question_itself(make_agent, goal: str, then: str) -> None:
    # The second lookup asks the question itself, searched with what the first found.
    plan = QuestionPlan(question=goal, first="Which component runs coroutines?", then=then)
    script = {"executor": bridge_executor, "verifier": verdicts(0, 0, SAME), "planner": plan}
    result = await make_agent(ScriptedModel(script=script), profile="general_agent").arun(goal, write_files=False)
    asked = result.graph.get("root.1")
    assert (asked.goal, asked.restates) == (goal, None)
    assert result.graph.root.result.startswith("It runs them as tasks. [1]")


async def test_the_models_own_answer_stands_when_the_plan_comes_to_nothing(make_agent) -> None:
    # The planner finds nothing to look up first (it gives the question itself): the question is
    # not answered again.
    nothing_first = QuestionPlan(question=COMPOUND, first=f" {COMPOUND.lower()} ", then=COMPOUND)
    model = ScriptedModel(script={"executor": from_memory, "planner": nothing_first, "verifier": verdicts(0)})
    result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)
    root = result.graph.root
    assert [c.request.role for c in model.calls] == ["executor", "verifier", "executor", "planner"]
    assert result.status == "completed" and len(result.graph) == 1
    assert root.result == "The event loop runs them."
    assert "the planner found nothing to look up first; the unconfirmed direct answer stands" in root.warnings

    # Every subtask failed: the model's own answer, not a failed run.
    def subtasks_fail(request: FakeRequest) -> dict | ExecutionOutput:
        if request.task_id != "root":
            raise RuntimeError("disk on fire")
        return from_memory(request)

    model = ScriptedModel(script={"planner": BRIDGE, "executor": subtasks_fail, "verifier": verdicts(0)})
    result = await make_agent(model, profile="general_agent").arun(COMPOUND, write_files=False)
    root = result.graph.root
    assert result.status == "completed_with_failures" and root.result == "The event loop runs them."
    assert [c.status for c in result.graph.children("root")] == [TaskStatus.FAILED, TaskStatus.FAILED]
    assert any(w.startswith("all 2 subtasks failed") and "direct answer stands" in w for w in root.warnings)


async def test_a_verifier_that_cannot_be_asked_verifies_nothing(make_agent) -> None:
    model = ScriptedModel(
        script={"executor": from_first_source, "verifier": RuntimeError("verifier down")},
    )
    result = await make_agent(model, profile="general_agent", answer_first=False, force_root_planning=False).arun(
        REPORT, write_files=False
    )
    for node in result.graph:
        assert not any(s.verified for s in node.sources)
    assert any("the verifier could not read the passage" in w for node in result.graph for w in node.warnings)


@pytest.mark.parametrize("grammar", [True, False], ids=["embedded", "hosted"])
async def test_an_answer_that_is_only_a_citation_number_is_refused_by_its_schema(make_agent, grammar) -> None:
    answers = iter(["[2]", "It runs them as tasks."])

    def executor(request: FakeRequest) -> dict:
        return {"answer": next(answers), "short": "coroutines and tasks", "source": 1}

    reads_the_same = verdicts("coroutines and tasks")
    model = ScriptedModel(grammar=grammar, script={"executor": executor, "verifier": reads_the_same})
    result = await make_agent(model, profile="general_agent").arun(GOAL, write_files=False)
    _, second = model.calls_for(role="executor")
    assert "only a citation number" in second.request.prompt  # the validation error is fed back
    assert result.graph.root.result == "It runs them as tasks. [1]"


async def test_a_goal_that_is_not_a_question_goes_to_the_atomizer(make_agent) -> None:
    model = ScriptedModel(script={"atomizer": AtomizerOutput(is_atomic=True), "executor": from_first_source})
    result = await make_agent(model, profile="general_agent").arun(REPORT, write_files=False)
    assert [c.request.role for c in model.calls] == ["atomizer", "executor", "verifier", "verifier"]
    assert result.graph.root.node_type is NodeType.EXECUTE

    # Not answered first when turned off: the atomizer decides for a question too.
    model = ScriptedModel(script={"atomizer": AtomizerOutput(is_atomic=False)})
    result = await make_agent(model, profile="general_agent", answer_first=False).arun(COMPOUND, write_files=False)
    assert [c.request.role for c in model.calls][:2] == ["atomizer", "planner"]


async def test_a_plan_that_repeats_its_goal_is_dropped_and_the_goal_executed(make_agent) -> None:
    # The small planner often lists the question itself among its subtasks, beside guesses.
    repeating = PlanOutput(
        subtasks=[
            SubTask(goal=COMPOUND.upper().rstrip("?"), task_type=TaskType.SEARCH),  # the goal, case and "?" aside
            SubTask(goal="The component is the event loop.", task_type=TaskType.THINK, depends_on_indices=[0]),
        ]
    )
    model = ScriptedModel(
        script={"atomizer": AtomizerOutput(is_atomic=False), "planner": repeating, "executor": from_first_source}
    )
    result = await make_agent(model, profile="general_agent", answer_first=False).arun(COMPOUND, write_files=False)

    assert result.status == "completed"
    assert len(result.graph) == 1
    root = result.graph.root
    assert root.node_type is NodeType.EXECUTE
    assert [c.request.role for c in model.calls] == ["atomizer", "planner", "executor", "verifier", "verifier"]
    assert [s.status for s in root.history][-3:] == [TaskStatus.PLANNING, TaskStatus.EXECUTING, TaskStatus.DONE]
    assert root.result == result.final_answer == "It runs them as tasks. [1]"
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
        script={"atomizer": AtomizerOutput(is_atomic=False), "planner": repeating, "executor": from_first_source},
    )
    result = await make_agent(model, profile="general_agent", answer_first=False).arun(COMPOUND, write_files=False)

    assert result.status == "completed" and len(result.graph) == 1
    root = result.graph.root
    assert [c.request.role for c in model.calls] == ["atomizer", "planner", "executor", "verifier", "verifier"]
    (planner,) = model.calls_for(role="planner")
    assert planner.output == repeating.model_dump_json().split("},{")[0] + "}"  # the first subtask, no more
    assert any("include the task itself" in w for w in root.warnings)
    assert not any("cut off" in w for w in root.warnings)  # stopped on purpose, not by the token limit


async def test_a_subtask_the_plan_lists_twice_runs_once(make_agent) -> None:
    which = SubTask(goal="Which component runs coroutines?", task_type=TaskType.SEARCH)
    share = SubTask(goal="What does it share with threads?", task_type=TaskType.SEARCH, depends_on_indices=[1, 9])
    twice = PlanOutput(subtasks=[which, which.model_copy(update={"goal": "which component runs coroutines"}), share])
    model = ScriptedModel(
        script={"atomizer": AtomizerOutput(is_atomic=True), "planner": twice, "executor": from_first_source}
    )
    result = await make_agent(model, profile="general_agent", force_root_planning=True).arun(GOAL, write_files=False)

    assert result.status == "completed"
    first, second = result.graph.children("root")
    assert (first.goal, second.goal) == (which.goal, share.goal)
    assert second.depends_on == [first.task_id]  # it depended on the repeat
    assert "dropped dependency 9: out of range (plan has 2 subtasks)" in second.warnings
    assert len(model.calls_for(role="executor")) == 2
    assert any("1 repeated subtask(s) dropped" in w for w in result.graph.root.warnings)


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
        model = ScriptedModel(script={"planner": plan, "executor": from_first_source})
        result = await make_agent(model, max_depth=1, answer_first=False).arun(COMPOUND, write_files=False)
    finally:
        del docs_index.search
    assert result.status == "completed"
    first, second = queries
    assert first.splitlines() == ["Which component runs coroutines?", COMPOUND]
    assert "It runs them as tasks." in second  # the first hop's result, citations removed
    # The passage the first hop cites reaches the second through its result, so the second
    # hop's search asks for one more passage to make up for skipping it.
    assert limits == [5, 6]
    hop2 = result.graph.get("root.1")
    assert [s.ref for s in hop2.sources].count(result.graph.get("root.0").sources[0].ref) == 1
    # The verifier judges the second hop's passage after what the first found (its passage states
    # the answer about that), and the first hop's without anything found before.
    first_check, _, second_check, _ = (c.request.prompt for c in model.calls_for(role="verifier"))
    assert "Found before" not in first_check
    assert "Found before: Which component runs coroutines?\nIt runs them as tasks." in second_check


async def test_a_reasoning_step_without_dependencies_waits_for_the_searches_before_it(make_agent) -> None:
    plan = PlanOutput(
        subtasks=[
            SubTask(goal="Find how the loop runs coroutines", task_type=TaskType.SEARCH),
            SubTask(goal="Explain why that is efficient", task_type=TaskType.THINK, depends_on_indices=[1]),
        ]
    )
    model = ScriptedModel(script={"planner": plan})
    result = await make_agent(model, max_depth=1, answer_first=False).arun(COMPOUND, write_files=False)
    think = result.graph.get("root.1")
    assert think.depends_on == ["root.0"]
    assert any("dropped dependency on itself" in w for w in think.warnings)
    assert any("depends on the earlier searches [0]" in w for w in think.warnings)
    assert think.status is TaskStatus.DONE


@pytest.mark.parametrize(
    ("question", "files", "stated"),
    [
        (
            "Wie lange werden GPS-Spuren aufbewahrt?",
            {
                "aufbewahrung.md": "# Aufbewahrung\n\nGPS-Spuren werden 90 Tage aufbewahrt.\n",
                "other.md": "# Anderes\n\nNichts.\n",
            },
            "GPS-Spuren werden 90 Tage aufbewahrt.",
        ),
        (
            "Combien coûte une part de membre ?",
            {"parts.md": "# Parts sociales\n\nUne part de membre coûte 400 euros.\n", "other.md": "# Autre\n\nRien.\n"},
            "Une part de membre coûte 400 euros.",
        ),
    ],
    ids=["de", "fr"],
)
async def test_a_question_in_another_language_is_answered_and_cited_from_its_documents(
    settings, tmp_path, question: str, files: dict[str, str], stated: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    model = ScriptedModel(script={"executor": from_first_source})  # its verifier accepts, and reads the same answer
    agent = ProfiledSentientAgent.create_with_profile(
        "general_agent", settings=settings, model=model, docs=DocsIndex.from_folder(tmp_path)
    )
    result = await agent.arun(question, write_files=False)

    root = result.graph.root
    assert [c.request.role for c in model.calls] == ["executor", "verifier", "verifier"]  # recognised as a question
    assert root.sources[0].verified is True and root.sources[0].ref.endswith(next(iter(files)))
    assert stated in model.calls_for(role="verifier")[0].request.prompt
    assert root.result.endswith("[1]") and "Not confirmed" not in result.report_markdown
