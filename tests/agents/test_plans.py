"""The slot of a question plan's second question (sentient.agents.plans), in any script."""

import pytest

from sentient.agents.plans import asks_with_slot, filled

GOAL = "Who leads the team that owns the router?"


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("Who leads X?", "Who leads Dispatch?"),
        ("Wer leitet X?", "Wer leitet Dispatch?"),
        ("谁领导X？", "谁领导Dispatch？"),  # no space around the slot in a script without spaces
        ("When did X join, and where is X based?", "When did Dispatch join, and where is Dispatch based?"),
    ],
)
def test_the_slot_is_filled_with_what_the_first_lookup_found(question: str, asked: str) -> None:
    assert asks_with_slot(question, GOAL)
    assert filled(question, "Dispatch") == asked


@pytest.mark.parametrize("question", ["Who is Xavier?", "Does it run on X11?", "Who leads the team?"])
def test_an_x_inside_a_word_is_not_a_slot(question: str) -> None:
    assert not asks_with_slot(question, GOAL)
    assert filled(question, "Dispatch") == question


def test_an_x_the_goal_itself_has_is_a_word_not_a_slot() -> None:
    goal = "Who leads the team that built the X-ray scanner?"
    assert not asks_with_slot(goal, goal)
    assert not asks_with_slot("Who leads the X-ray team?", goal)
