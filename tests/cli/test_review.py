"""Terminal review: parsing edited plans, the question loop, and approving a tool call, driven by a
scripted ``read``."""

from __future__ import annotations

import io
from collections.abc import Iterable

import pytest
from rich.console import Console

from sentient.cli.review import TerminalReviewer, parse_plan_lines
from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.hitl.protocol import Approve, Modify, Reject, ReviewRequest
from sentient.tools.confirm import call_review

PLAN = PlanOutput(
    subtasks=[
        SubTask(goal="Find facts about lists", task_type=TaskType.SEARCH),
        SubTask(goal="Write the comparison", task_type=TaskType.WRITE, depends_on_indices=[0]),
    ]
)
REQUEST = ReviewRequest(task_id="root", goal="Compare lists and tuples", layer=0, plan=PLAN, round=1)


# -- parse_plan_lines ---------------------------------------------------------------------------


def test_plan_lines_become_subtasks_with_types_and_dependencies() -> None:
    plan = parse_plan_lines(["SEARCH | Find list facts", "search | Find tuple facts |", "write | Compare them | 0, 1"])
    assert plan.subtasks == [
        SubTask(goal="Find list facts", task_type=TaskType.SEARCH),
        SubTask(goal="Find tuple facts", task_type=TaskType.SEARCH),
        SubTask(goal="Compare them", task_type=TaskType.WRITE, depends_on_indices=[0, 1]),
    ]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["SEARCH | ok", "just a goal"], "line 1: expected 'TYPE | goal | dependencies'"),
        (["LOOKUP | find it"], "line 0: unknown type 'LOOKUP'"),
        (["SEARCH | a", "THINK | b | first"], "line 1: dependencies must be numbers"),
        (["SEARCH |  | 0"], "line 0: the goal is empty"),
        ([], "at least 2 items"),
    ],
)
def test_bad_plan_lines_raise_value_error_naming_the_line(lines: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_plan_lines(lines)


# -- TerminalReviewer ---------------------------------------------------------------------------


class Answers:
    """A scripted ``read``: returns the answers in order and records each prompt; EOF when out."""

    def __init__(self, answers: Iterable[str]) -> None:
        self._answers = list(answers)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if not self._answers:
            raise EOFError
        return self._answers.pop(0)


def reviewer(answers: Answers, events: list[str] | None = None) -> tuple[TerminalReviewer, io.StringIO]:
    screen = io.StringIO()
    log = events if events is not None else []
    terminal = TerminalReviewer(
        Console(file=screen, width=120),
        read=answers,
        pause=lambda: log.append("pause"),
        resume=lambda: log.append("resume"),
    )
    return terminal, screen


async def test_approve_shows_the_plan_and_pauses_the_display_while_asking() -> None:
    events: list[str] = []
    answers = Answers(["a"])
    terminal, screen = reviewer(answers, events)
    assert await terminal.review_plan(REQUEST) == Approve()
    assert events == ["pause", "resume"]
    shown = screen.getvalue()
    assert "Plan for root (round 1): Compare lists and" in shown  # the title wraps to the table's width
    assert "Find facts about lists" in shown and "Write the comparison" in shown


async def test_reject_carries_the_reason_or_a_default() -> None:
    terminal, _ = reviewer(Answers(["r", "too broad"]))
    assert await terminal.review_plan(REQUEST) == Reject("too broad")
    terminal, _ = reviewer(Answers(["reject", ""]))
    assert await terminal.review_plan(REQUEST) == Reject("rejected in the terminal")


async def test_modify_sends_instructions_to_the_plan_modifier() -> None:
    answers = Answers(["m", "", "m", "add a THINK step"])
    terminal, _ = reviewer(answers)
    assert await terminal.review_plan(REQUEST) == Modify(instructions="add a THINK step")
    assert len(answers.prompts) == 4, "empty instructions ask again"


async def test_an_unknown_answer_asks_again() -> None:
    terminal, screen = reviewer(Answers(["maybe", "a"]))
    assert await terminal.review_plan(REQUEST) == Approve()
    assert "Please answer a, e, m or r." in screen.getvalue()


async def test_edit_refuses_an_invalid_plan_then_accepts_a_valid_one() -> None:
    answers = Answers(
        [
            "e",
            "SEARCH | Find list facts | 1",  # depends on a later subtask
            "WRITE | Compare | 0",
            "",
            "e",
            "BOGUS | not a type",
            "",
            "e",
            "SEARCH | Find list facts",
            "SEARCH | Find tuple facts",
            "WRITE | Compare them | 0,1",
            "",
        ]
    )
    terminal, screen = reviewer(answers)
    decision = await terminal.review_plan(REQUEST)
    assert isinstance(decision, Modify)
    assert decision.instructions is None
    assert decision.plan == parse_plan_lines(
        ["SEARCH | Find list facts", "SEARCH | Find tuple facts", "WRITE | Compare them | 0,1"]
    )
    shown = screen.getvalue()
    assert "subtask 0 depends on later subtask 1" in shown
    assert "unknown type 'BOGUS'" in shown
    assert shown.count("Not a valid plan") == 2


async def test_closed_input_rejects_instead_of_hanging() -> None:
    terminal, _ = reviewer(Answers([]))
    decision = await terminal.review_plan(REQUEST)
    assert isinstance(decision, Reject)
    assert "no reviewer input" in decision.reason


# -- tool calls (confirm: true) -------------------------------------------------------------------


async def test_a_tool_call_is_asked_as_a_yes_or_no_question_naming_the_tool_and_its_arguments() -> None:
    events: list[str] = []
    answers = Answers(["y"])
    terminal, screen = reviewer(answers, events)

    decision = await terminal.review_plan(call_review("root.1", "refund", {"order": "A-7", "amount_eur": 12.5}))

    assert decision == Approve()
    assert answers.prompts == ['Approve tool call: refund with {"amount_eur": 12.5, "order": "A-7"}? [y/N] ']
    assert events == ["pause", "resume"]
    shown = screen.getvalue()
    assert "Tool call approval" in shown and "Plan for" not in shown


@pytest.mark.parametrize("answer", ["", "n", "maybe"])
async def test_any_answer_but_yes_refuses_the_tool_call(answer: str) -> None:
    terminal, _ = reviewer(Answers([answer]))
    assert await terminal.review_plan(call_review("root", "refund", {"order": "A-7"})) == Reject(
        "refused in the terminal"
    )
