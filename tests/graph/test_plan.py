from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask, answer_last

GOAL = "What is the job title of the on-call lead of Team Cormorant?"


def plan(*subtasks: tuple[str, list[int]]) -> PlanOutput:
    return PlanOutput(subtasks=[SubTask(goal=g, task_type=TaskType.SEARCH, depends_on_indices=d) for g, d in subtasks])


def test_a_restated_goal_moves_last_and_depends_on_every_other_step():
    proposed = plan(
        ("What is the job title of the on-call lead of team Cormorant", []),
        ("Who is the on-call lead of Team Cormorant?", [0]),
        ("What is the job title of that person?", [1]),
    )
    adopted = answer_last(GOAL, proposed)
    assert [(s.goal, s.depends_on_indices) for s in adopted.subtasks] == [
        ("Who is the on-call lead of Team Cormorant?", []),
        ("What is the job title of that person?", [0]),
        ("What is the job title of the on-call lead of team Cormorant", [0, 1]),
    ]


def test_further_restatements_are_dropped_and_indices_follow():
    proposed = plan(
        ("Who is the on-call lead of Team Cormorant?", []),
        (GOAL, [0]),
        ("What is the job title of that person?", [0]),
        (GOAL, [2]),
    )
    adopted = answer_last(GOAL, proposed)
    assert [(s.goal, s.depends_on_indices) for s in adopted.subtasks] == [
        ("Who is the on-call lead of Team Cormorant?", []),
        ("What is the job title of that person?", [0]),
        (GOAL, [0, 1]),
    ]


def test_a_plan_without_a_restatement_or_of_nothing_else_is_kept():
    other = plan(("Who leads Cormorant?", []), ("What is their title?", [0]))
    assert answer_last(GOAL, other) is other
    only = plan((GOAL, []), (GOAL.upper(), []))
    assert answer_last(GOAL, only) is only
