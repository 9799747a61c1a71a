"""What a planner's subtasks say, checked before a plan is adopted.

The small planner repeats itself: it lists a subtask twice (:func:`distinct_subtasks` keeps
one), lists the goal itself among its subtasks, or splits it into one subtask in other words.
Such a plan splits nothing (:func:`splits_nothing`), and the task is executed instead; the
embedded model stops writing one as soon as it lists the goal (:func:`lists_goal`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from sentient.agents.json_repair import parsed_so_far
from sentient.agents.schemas import SLOT, PlanReply
from sentient.context.wording import normalize
from sentient.graph.plan import SubTask


def distinct_subtasks(subtasks: Sequence[SubTask]) -> list[SubTask]:
    """``subtasks`` without those that ask what an earlier one asks (case, punctuation and
    spacing aside); a dependency on a dropped repeat points at the subtask it repeats. An index
    out of range stays as it is: :meth:`TaskGraph.add_children` drops it with a warning.

    The small planner sometimes lists its plan twice; run twice, each repeat costs a search and
    an answer that the aggregator then reads twice.
    """
    first: dict[str, int] = {}
    kept_at: list[int] = []  # old index -> new index
    kept: list[SubTask] = []
    for subtask in subtasks:
        key = normalize(subtask.goal)
        if key not in first:
            first[key] = len(kept)
            kept.append(subtask)
        kept_at.append(first[key])
    if len(kept) == len(subtasks):
        return list(subtasks)

    def moved(d: int) -> int:
        return kept_at[d] if 0 <= d < len(kept_at) else d

    return [s.model_copy(update={"depends_on_indices": [moved(d) for d in s.depends_on_indices]}) for s in kept]


def splits_nothing(goal: str, subtasks: Sequence[SubTask]) -> str | None:
    """Why a plan of ``subtasks`` splits nothing, or None when it does split ``goal``.

    A plan whose subtasks include the goal itself (case, punctuation and spacing aside) leaves
    that subtask all of the work, and what the small planner adds beside it mostly guesses at
    the answer or depends on the wrong index. On the dev splits, 10 of the 16 questions whose
    plan repeated the goal were answered wrong, against 3 of the 22 whose plan did not
    (bench/README.md, "plans that repeat the goal"). A plan of one distinct subtask is the goal
    in other words.
    """
    if any(is_goal(goal, subtask.goal) for subtask in subtasks):
        return "the plan's subtasks include the task itself"
    if len(subtasks) < 2:
        return "the plan's subtasks all ask one thing"
    return None


def lists_goal(goal: str, reply: str) -> bool:
    """Whether a planner's reply so far lists ``goal`` itself as a subtask.

    Such a plan splits nothing (:func:`splits_nothing`), so the embedded model stops writing
    it there: on the dev splits, 19 of 43 plans listed their goal, always first, and the
    subtasks written after it were most of the planner's output (bench/README.md, "a plan that
    lists its goal stops there").
    """
    plan = parsed_so_far(PlanReply, reply)
    return plan is not None and any(is_goal(goal, subtask.goal) for subtask in plan.subtasks)


def is_goal(goal: str, asked: str) -> bool:
    """Whether ``asked`` is ``goal`` itself (case, punctuation and spacing aside)."""
    return normalize(asked) == normalize(goal)


def _slots(question: str) -> list[int]:
    """Where ``question`` has the slot of a question plan (:data:`SLOT`): not part of a word of
    its script ("Xavier", "X11"), but it may touch a word of another ("谁领导X？")."""

    def latin(at: int) -> bool:
        ch = question[at] if 0 <= at < len(question) else " "
        return ch.isdigit() or (ch.isalpha() and unicodedata.name(ch, "").startswith("LATIN"))

    return [
        m.start() for m in re.finditer(re.escape(SLOT), question) if not latin(m.start() - 1) and not latin(m.end())
    ]


def asks_with_slot(question: str, goal: str) -> bool:
    """Whether ``question``, planned for ``goal``, has a slot to fill: an ``X`` of its own, where
    ``goal`` has none (in "Who built the X-ray scanner?" it is a word, not a slot)."""
    return bool(_slots(question)) and not _slots(goal)


def filled(question: str, found: str) -> str:
    """``question`` with what a lookup ``found`` in each of its slots (:func:`asks_with_slot`)."""
    for at in reversed(_slots(question)):
        question = question[:at] + found + question[at + len(SLOT) :]
    return question
