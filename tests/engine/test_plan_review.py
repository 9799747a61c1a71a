"""Plan review: a PlanReviewer approves, modifies (instructions or an edited plan) or rejects."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from sentient.agents.models.fake import FakeRequest, ScriptedModel, asks_for, default_response, executor_answer
from sentient.agents.schemas import AggregationOutput, AtomizerOutput, QuestionPlan
from sentient.context.grounding import Reading, Verdict
from sentient.events import ReviewAnswered
from sentient.graph.node import NodeType, TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus
from sentient.hitl.protocol import Approve, Modify, Reject, ReviewDecision, ReviewRequest

GOAL = "Explain the Python GIL"


def plan(*goals: str, deps: dict[int, list[int]] | None = None) -> PlanOutput:
    deps = deps or {}
    return PlanOutput(
        subtasks=[
            SubTask(goal=g, task_type=TaskType.THINK, depends_on_indices=deps.get(i, [])) for i, g in enumerate(goals)
        ]
    )


class ScriptedReviewer:
    """A PlanReviewer that answers from a list of decisions (then approves) and records requests."""

    def __init__(self, decisions: Iterable[ReviewDecision] = ()) -> None:
        self._decisions = list(decisions)
        self.requests: list[ReviewRequest] = []

    async def review_plan(self, request: ReviewRequest) -> ReviewDecision:
        self.requests.append(request)
        return self._decisions.pop(0) if self._decisions else Approve()


PLANNED = plan("what the GIL is", "why it exists", deps={1: [0]})
MODIFIED = plan("history of the GIL", "free-threaded builds", "summary", deps={2: [0, 1]})


def child_goals(result, parent: str = "root") -> list[str]:
    return [c.goal for c in result.graph.children(parent)]


async def test_an_approved_plan_is_used_as_proposed(make_agent) -> None:
    reviewer = ScriptedReviewer([Approve()])
    model = ScriptedModel(script={"planner": PLANNED})
    result = await make_agent(model, reviewer=reviewer, max_depth=1, review="all").arun(GOAL, write_files=False)

    assert result.status == "completed"
    (request,) = reviewer.requests
    assert (request.task_id, request.goal, request.layer, request.round) == ("root", GOAL, 0, 1)
    assert request.plan == PLANNED
    assert child_goals(result) == ["what the GIL is", "why it exists"]
    assert result.graph.get("root.1").depends_on == ["root.0"]


async def test_modify_with_instructions_calls_the_plan_modifier_and_asks_again(make_agent, recorder) -> None:
    reviewer = ScriptedReviewer([Modify(instructions="Add the free-threaded builds of 3.13")])
    model = ScriptedModel(script={"planner": PLANNED, "plan_modifier": MODIFIED})
    agent = make_agent(model, reviewer=reviewer, max_depth=1, review="all")
    result = await agent.arun(GOAL, write_files=False, subscribers=[recorder])

    assert result.status == "completed"
    (modifier,) = model.calls_for(role="plan_modifier")
    assert "Add the free-threaded builds of 3.13" in modifier.request.prompt
    assert "what the GIL is" in modifier.request.prompt  # it sees the plan it revises
    assert [r.round for r in reviewer.requests] == [1, 2]
    assert reviewer.requests[1].plan == MODIFIED
    assert child_goals(result) == ["history of the GIL", "free-threaded builds", "summary"]
    assert result.graph.get("root.2").depends_on == ["root.0", "root.1"]
    assert TaskStatus.PLAN_MODIFICATION in [h.status for h in result.graph.root.history]
    assert [e.action for e in recorder.of(ReviewAnswered)] == ["modify", "approve"]


async def test_modify_with_an_edited_plan_uses_it_as_is(make_agent) -> None:
    edited = plan("only this", "and that", deps={1: [0]})
    reviewer = ScriptedReviewer([Modify(plan=edited)])
    model = ScriptedModel(script={"planner": PLANNED})
    agent = make_agent(model, reviewer=reviewer, max_depth=1, review="all")
    result = await agent.arun(GOAL, write_files=False)

    assert result.status == "completed"
    assert len(reviewer.requests) == 1  # an edited plan is the human's own: not reviewed again
    assert model.calls_for(role="plan_modifier") == []
    assert child_goals(result) == ["only this", "and that"]
    assert result.graph.get("root.1").depends_on == ["root.0"]
    executed = sorted(c.request.goal for c in model.calls_for(role="executor"))
    assert executed == ["and that", "only this"]


async def test_an_edited_plan_with_bad_indices_is_refused_and_the_reviewer_asked_again(make_agent, recorder) -> None:
    bad = plan("first", "second", deps={0: [0], 1: [5]})
    reviewer = ScriptedReviewer([Modify(plan=bad), Approve()])
    model = ScriptedModel(script={"planner": PLANNED})
    agent = make_agent(model, reviewer=reviewer, max_depth=1, review="all")
    result = await agent.arun(GOAL, write_files=False, subscribers=[recorder])

    assert result.status == "completed"
    assert [r.round for r in reviewer.requests] == [1, 2]
    assert reviewer.requests[1].plan == PLANNED  # the refused edit is not adopted
    refused, approved = recorder.of(ReviewAnswered)
    assert refused.action == "modify"
    assert "edited plan refused" in refused.detail
    assert "subtask 0 depends on itself" in refused.detail
    assert "subtask 1 depends on 5, which does not exist" in refused.detail
    assert approved.action == "approve"
    assert child_goals(result) == ["what the GIL is", "why it exists"]


async def test_rejecting_the_root_plan_cancels_the_project_with_the_reason(make_agent) -> None:
    reviewer = ScriptedReviewer([Reject("too shallow")])
    model = ScriptedModel(script={"planner": PLANNED})
    result = await make_agent(model, reviewer=reviewer, max_depth=1, review="all").arun(GOAL, write_files=False)

    # The reviewer stopped the project: it is cancelled (and can be resumed), not failed.
    assert result.status == "cancelled"
    assert result.graph.root.status is TaskStatus.CANCELLED
    assert result.error == "plan rejected by reviewer: too shallow"
    assert "plan rejected by reviewer: too shallow" in result.report_markdown
    assert len(result.graph) == 1  # no children were created
    assert model.calls_for(role="executor") == []


class RejectOne(ScriptedReviewer):
    """Approves every plan but one task's."""

    def __init__(self, task_id: str, reason: str) -> None:
        super().__init__()
        self.task_id, self.reason = task_id, reason

    async def review_plan(self, request: ReviewRequest) -> ReviewDecision:
        self.requests.append(request)
        return Reject(self.reason) if request.task_id == self.task_id else Approve()


async def test_rejecting_a_subtask_plan_fails_that_subtask_and_the_policy_decides(make_agent) -> None:
    reviewer = RejectOne("root.1", "off topic")
    model = ScriptedModel(script={"planner": lambda r: plan(f"part one of {r.task_id}", f"part two of {r.task_id}")})
    agent = make_agent(
        model, reviewer=reviewer, max_depth=2, skip_atomization=True, review="all", failure_policy="continue"
    )
    result = await agent.arun(GOAL, write_files=False)

    rejected = result.graph.get("root.1")
    assert (rejected.status, rejected.error) == (TaskStatus.FAILED, "plan rejected by reviewer: off topic")
    assert result.graph.children("root.1") == []
    assert result.graph.get("root.0").status is TaskStatus.DONE
    assert result.status == "completed_with_failures"


async def test_a_rejected_plan_for_a_question_answered_first_keeps_its_direct_answer(make_agent) -> None:
    # The question was answered first and planned because no source confirmed the answer: the
    # reviewer refuses more research, not the answer already given (after a modify round too).
    question = "Why does the GIL exist, and what would replace it?"
    for decisions in ([Reject("not worth it")], [Modify(instructions="shorter"), Reject("still not worth it")]):
        model = ScriptedModel(
            script={
                "atomizer": AtomizerOutput(is_atomic=False),
                "planner": QuestionPlan(question=question, first="What is the GIL?", then="What would replace X?"),
                "plan_modifier": PLANNED,
                "executor": lambda request: executor_answer(request, "It protects reference counts.", sourced=False),
            }
        )
        reviewer = ScriptedReviewer(decisions)
        result = await make_agent(model, reviewer=reviewer, review="all").arun(question, write_files=False)

        root = result.graph.root
        assert len(reviewer.requests) == len(decisions)
        assert result.status == "completed" and len(result.graph) == 1
        assert (root.status, root.node_type) == (TaskStatus.DONE, NodeType.EXECUTE)
        assert root.result == "It protects reference counts."
        reason = decisions[-1].reason
        assert root.warnings[-1] == f"plan rejected by reviewer ({reason}); the unconfirmed direct answer stands"


async def test_review_all_reviews_every_plan(make_agent) -> None:
    reviewer = ScriptedReviewer()
    model = ScriptedModel(
        script={"planner": lambda r: plan(f"what the GIL is ({r.task_id})", f"why it exists ({r.task_id})")}
    )
    agent = make_agent(model, reviewer=reviewer, max_depth=2, skip_atomization=True, review="all")
    result = await agent.arun(GOAL, write_files=False)

    assert result.status == "completed"
    planned = {n.task_id for n in result.graph if n.node_type is NodeType.PLAN}
    assert planned == {"root", "root.0", "root.1"}
    assert sorted(r.task_id for r in reviewer.requests) == sorted(planned)
    assert {r.layer for r in reviewer.requests} == {0, 1}


async def test_review_root_reviews_only_the_root_plan(make_agent) -> None:
    reviewer = ScriptedReviewer()
    model = ScriptedModel(script={"planner": PLANNED})
    agent = make_agent(model, reviewer=reviewer, max_depth=2, skip_atomization=True, review="root")
    result = await agent.arun(GOAL, write_files=False)

    assert result.status == "completed"
    assert len(model.calls_for(role="planner")) == 3  # root, root.0 and root.1 were all planned
    assert [r.task_id for r in reviewer.requests] == ["root"]


async def test_review_none_never_asks(make_agent) -> None:
    reviewer = ScriptedReviewer([Reject("should not be asked")])
    model = ScriptedModel(script={"planner": PLANNED})
    result = await make_agent(model, reviewer=reviewer, max_depth=1, review="none").arun(GOAL, write_files=False)

    assert result.status == "completed"
    assert reviewer.requests == []


async def test_an_edited_plan_for_a_question_is_aggregated_and_the_aggregate_judged_by_the_verifier(make_agent) -> None:
    # The question was planned because no passage stated its direct answer; the reviewer replaced
    # the plan, so no lookup asks the question itself and the aggregator answers it. The verifier,
    # shown that answer and the passages it cites, decides whether it stands: when it finds them
    # not supporting it, or cannot be asked, the unconfirmed direct answer stands instead.
    question = "Why does the GIL exist, and what would replace it?"
    verdicts = (Verdict(supports=True), Verdict(supports=False), RuntimeError("verifier down"))
    for verdict in verdicts:

        def verifier(request: FakeRequest, verdict: object = verdict) -> object:
            if asks_for(request, "supports") and request.task_id == "root":  # the lookups' answers are supported
                if isinstance(verdict, Exception):
                    raise verdict
                return verdict
            return default_response(request)  # no passage picked again; a lookup's passage reads the same

        model = ScriptedModel(
            script={
                "planner": QuestionPlan(question=question, first="What is the GIL?", then="What would replace X?"),
                "plan_modifier": PLANNED,
                "executor": lambda request: (
                    executor_answer(request, "It protects reference counts.", sourced=False)
                    if request.task_id == "root"
                    else executor_answer(request, f"Result of {request.task_id}.")
                ),
                "aggregator": AggregationOutput(answer="It keeps reference counts safe [1]."),
                "verifier": verifier,
            }
        )
        reviewer = ScriptedReviewer([Modify(instructions="look up the history instead")])
        result = await make_agent(model, reviewer=reviewer, review="all").arun(question, write_files=False)

        root = result.graph.root
        assert child_goals(result) == ["what the GIL is", "why it exists"]
        (judging,) = [
            c.request
            for c in model.calls
            if c.request.role == "verifier" and c.request.task_id == "root" and asks_for(c.request, "supports")
        ]
        assert judging.task_id == "root" and "It keeps reference counts safe" in judging.prompt
        if verdict is verdicts[0]:
            assert root.result == "It keeps reference counts safe [1]." and root.sources[0].verified is True
            continue
        assert root.result == "It protects reference counts."  # the direct answer, from the model's own knowledge
        assert any("no source supports the research's answer" in w for w in root.warnings)
        if verdict is verdicts[2]:
            assert any(w.startswith("the verifier could not be asked") for w in root.warnings)


@pytest.mark.parametrize("direct", ["reading", "memory"])
async def test_an_unsupported_aggregate_replaces_a_passages_reading_but_not_the_models_own(make_agent, direct) -> None:
    # As when the question's own lookup answers it: the research's unconfirmed answer stands
    # (uncited) over a direct answer that was a passage's reading of the question, never over the
    # model's own answer, asked without passages.
    question = "Why does the GIL exist, and what would replace it?"

    def verifier(request: FakeRequest) -> object:
        if request.task_id == "root" and asks_for(request, "supports"):  # the aggregate's passages
            return Verdict(supports=False)
        if request.task_id == "root" and asks_for(request, "answer"):  # the direct answer's passage, read alone
            return Reading(answer="It is a lock.")
        return default_response(request)

    model = ScriptedModel(
        script={
            "planner": QuestionPlan(question=question, first="What is the GIL?", then="What would replace X?"),
            "plan_modifier": PLANNED,
            "executor": lambda request: executor_answer(
                request,
                "It protects reference counts." if request.task_id == "root" else f"Result of {request.task_id}.",
                sourced=request.task_id != "root" or direct == "reading",
            ),
            "aggregator": AggregationOutput(answer="It keeps reference counts safe [1]."),
            "verifier": verifier,
        }
    )
    reviewer = ScriptedReviewer([Modify(instructions="look up the history instead")])
    result = await make_agent(model, reviewer=reviewer, review="all").arun(question, write_files=False)

    root = result.graph.root
    assert root.answered_from_memory is (direct == "memory")
    assert not any(s.verified for s in root.sources)
    if direct == "reading":
        assert root.result == "It keeps reference counts safe."
        assert "no source supports the research's answer; it stands over the direct answer's reading" in root.warnings
    else:
        assert root.result == "It protects reference counts."
        assert "no source supports the research's answer; the unconfirmed direct answer stands" in root.warnings
