"""Goal checks and bidi neutralising (sentient.text)."""

from __future__ import annotations

import pytest

from sentient.text import BIDI_CONTROLS, goal_problem, neutralise_bidi


@pytest.mark.parametrize("goal", ["\x1c\x1d\x1e\x1f", "  \x1f ", "a\x00b", "x\x7f", "ok\x85", "\x1bcolour"])
def test_goals_with_control_characters_are_refused_naming_the_character(goal: str) -> None:
    problem = goal_problem(goal)
    assert problem is not None and "control character U+" in problem


@pytest.mark.parametrize("goal", ["", "   ", "\n\t"])
def test_blank_goals_are_refused(goal: str) -> None:
    assert goal_problem(goal) == "the goal is empty: describe what to research."


@pytest.mark.parametrize("goal", ["How does asyncio work?", "line one\nline two\twith tab", "Qu'est-ce que l'été ?"])
def test_ordinary_goals_pass(goal: str) -> None:
    assert goal_problem(goal) is None


def test_every_bidi_control_is_removed_and_other_text_kept() -> None:
    text = "".join(f"a{c}" for c in BIDI_CONTROLS) + "\u05e9\u05dc\u05d5\u05dd"
    cleaned = neutralise_bidi(text)
    assert cleaned == "a" * len(BIDI_CONTROLS) + "\u05e9\u05dc\u05d5\u05dd"
    assert not set(BIDI_CONTROLS) & set(cleaned)
