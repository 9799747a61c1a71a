"""Reviews (plans, and calls of confirmed tools) through ProjectService on a real temp-dir store:
stored once, answered once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.hitl.protocol import Approve, Modify, Reject, ReviewRequest
from sentient.projects import ProjectService, ReviewAnswer, UnusablePlanError
from sentient.projects.errors import UnfitAnswerError
from sentient.settings import Settings
from sentient.store import ProjectNotFoundError, ProjectStore, ReviewAlreadyAnsweredError, ReviewNotFoundError
from sentient.tools.confirm import call_review

PLAN = PlanOutput(
    subtasks=[
        SubTask(goal="Find facts", task_type=TaskType.SEARCH),
        SubTask(goal="Write up", task_type=TaskType.WRITE, depends_on_indices=[0]),
    ]
)
REQUEST = ReviewRequest("root", "What is asyncio?", 0, PLAN, 1, "what the planner saw")


@pytest.fixture
def service(tmp_path: Path, database_url: str | None) -> Iterator[ProjectService]:
    settings = Settings(
        cache_dir=tmp_path / "cache", results_dir=tmp_path / "results", offline=True, database_url=database_url
    )
    with ProjectStore.open(settings.results_dir, settings.database_url) as store:
        service = ProjectService(store, settings)
        service.create("What is asyncio?", "general_agent", project_id="p1")
        yield service


def test_a_review_is_stored_pending_and_found_again_for_the_same_round(service: ProjectService) -> None:
    opened = service.open_review("p1", REQUEST, timeout_s=60)

    assert opened.pending and opened.plan == PLAN.model_dump(mode="json") and opened.context == "what the planner saw"
    assert opened.deadline is not None and opened.deadline == pytest.approx(opened.created_at + 60)
    assert service.pending_reviews("p1") == [opened]
    assert service.open_review("p1", REQUEST, timeout_s=60) == opened  # a restarted run asks again
    next_round = ReviewRequest("root", "What is asyncio?", 0, PLAN, 2)
    assert service.open_review("p1", next_round, timeout_s=None).review_id != opened.review_id


def test_an_answer_is_recorded_once_and_a_second_is_refused(service: ProjectService) -> None:
    review = service.open_review("p1", REQUEST, timeout_s=None)

    answered = service.answer_review(review.review_id, ReviewAnswer(action="reject", reason="too broad"), by="rest")

    assert answered.status == "answered" and answered.decision is not None
    assert (answered.decision.action, answered.decision.reason, answered.decision.by) == ("reject", "too broad", "rest")
    assert answered.engine_decision() == Reject("too broad")
    with pytest.raises(ReviewAlreadyAnsweredError):
        service.answer_review(review.review_id, ReviewAnswer(action="approve"), by="socket")
    assert service.review(review.review_id).engine_decision() == Reject("too broad")  # the first answer stands
    assert service.pending_reviews("p1") == []
    assert service.reviews("p1", "root") == [answered]


def test_an_unusable_edited_plan_is_refused_and_the_review_stays_pending(service: ProjectService) -> None:
    review = service.open_review("p1", REQUEST, timeout_s=None)
    cyclic = PlanOutput(
        subtasks=[
            SubTask(goal="a", task_type=TaskType.SEARCH, depends_on_indices=[0]),
            SubTask(goal="b", task_type=TaskType.WRITE),
        ]
    )

    with pytest.raises(UnusablePlanError, match="depends on itself"):
        service.answer_review(review.review_id, ReviewAnswer(action="modify", plan=cyclic), by="rest")

    assert service.review(review.review_id).pending


def test_an_edited_plan_reaches_the_engine_as_a_modification(service: ProjectService) -> None:
    review = service.open_review("p1", REQUEST, timeout_s=None)
    answered = service.answer_review(review.review_id, ReviewAnswer(action="modify", plan=PLAN), by="socket")
    assert answered.engine_decision() == Modify(plan=PLAN)
    assert answered.decision is not None and set(answered.decision.model_dump()) == {
        "action",
        "plan",
        "by",
        "answered_at",
    }


def test_unknown_reviews_and_projects_are_not_found(service: ProjectService) -> None:
    with pytest.raises(ReviewNotFoundError):
        service.answer_review("../../etc", ReviewAnswer(action="approve"), by="rest")
    with pytest.raises(ProjectNotFoundError):
        service.pending_reviews("nope")
    with pytest.raises(ProjectNotFoundError):
        service.reviews("nope")


@pytest.mark.parametrize(
    "body",
    [
        {"action": "modify"},
        {"action": "modify", "instructions": "shorter", "plan": PLAN.model_dump()},
        {"action": "approve", "instructions": "shorter"},
        {"action": "approve", "reason": "fine"},
        {"action": "approve", "by": "me"},
    ],
)
def test_an_inconsistent_answer_does_not_validate(body: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ReviewAnswer.model_validate(body)


def test_an_approval_is_the_engines_approve(service: ProjectService) -> None:
    review = service.open_review("p1", REQUEST, timeout_s=None)
    assert review.engine_decision() is None
    answered = service.answer_review(review.review_id, ReviewAnswer(action="approve"), by="timeout")
    assert answered.engine_decision() == Approve()


def test_a_review_stored_by_another_version_still_lists(service: ProjectService) -> None:
    old_plan = {"subtasks": [], "notes": "a field this version does not know"}
    service.store.add_review(
        {
            "review_id": "old",
            "project_id": "p1",
            "task_id": "root",
            "round": 1,
            "goal": "g",
            "layer": 0,
            "plan": old_plan,
        }
    )
    (review,) = service.pending_reviews("p1")
    assert review.review_id == "old" and review.plan == old_plan


def test_a_tool_call_review_is_stored_with_its_tool_and_arguments_and_no_plan(service: ProjectService) -> None:
    request = call_review("root.1", "refund", {"order": "A-7", "amount_eur": 12.5})

    opened = service.open_review("p1", request, timeout_s=None)

    assert (opened.kind, opened.plan) == ("tool_call", None)
    assert opened.tool_call is not None
    assert (opened.tool_call.tool, opened.tool_call.arguments) == ("refund", {"order": "A-7", "amount_eur": 12.5})
    assert service.pending_reviews("p1") == [opened]
    assert service.open_review("p1", request, timeout_s=None) == opened  # a resumed run finds the same call
    assert service.open_review("p1", REQUEST, timeout_s=None).kind == "plan"


def test_a_tool_call_is_approved_or_refused_never_modified(service: ProjectService) -> None:
    review = service.open_review("p1", call_review("root", "refund", {"order": "A-7"}), timeout_s=None)

    with pytest.raises(UnfitAnswerError, match="field 'action': a tool call is approved or refused"):
        service.answer_review(review.review_id, ReviewAnswer(action="modify", instructions="smaller"), by="rest")
    assert service.review(review.review_id).pending
    refused = service.answer_review(review.review_id, ReviewAnswer(action="reject", reason="not now"), by="rest")
    assert refused.engine_decision() == Reject("not now")
