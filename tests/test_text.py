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


@pytest.mark.parametrize(
    "goal",
    [
        "\u200b\u200c\u200d\u2060",  # zero-width space, non-joiner, joiner, word joiner
        "\u202e\u202c",  # right-to-left override, pop directional formatting
        "\u0301\u0308\u20dd",  # combining marks with no letter under them
        "\ufeff\u00a0",  # byte order mark and no-break space
        "\ue000 \U000e0041",  # private use and a tag character
    ],
)
def test_goals_without_a_visible_character_are_refused(goal: str) -> None:
    assert goal_problem(goal) == "the goal has no visible text: describe what to research in words."


@pytest.mark.parametrize(
    "goal",
    ["e\u0301t\u00e9 ?", "\u65e5\u672c\u306e\u6b74\u53f2", "\u0661\u0662", "\u05e9\u05dc\u05d5\u05dd\u200f", "\u2211"],
)
def test_goals_with_visible_characters_in_any_script_pass(goal: str) -> None:
    assert goal_problem(goal) is None


@pytest.mark.parametrize("goal", ["How does asyncio work?", "line one\nline two\twith tab", "Qu'est-ce que l'été ?"])
def test_ordinary_goals_pass(goal: str) -> None:
    assert goal_problem(goal) is None


def test_every_bidi_control_is_removed_and_other_text_kept() -> None:
    text = "".join(f"a{c}" for c in BIDI_CONTROLS) + "\u05e9\u05dc\u05d5\u05dd"
    cleaned = neutralise_bidi(text)
    assert cleaned == "a" * len(BIDI_CONTROLS) + "\u05e9\u05dc\u05d5\u05dd"
    assert not set(BIDI_CONTROLS) & set(cleaned)
