"""The status enum, its derived sets and the transition table."""

from __future__ import annotations

import itertools

import pytest

from sentient.exceptions import IllegalTransitionError
from sentient.graph.node import NodeType, TaskNode, TaskType
from sentient.graph.status import ACTIVE, TERMINAL, TRANSITIONS, WAITING, TaskStatus, check_transition

ALL_PAIRS = list(itertools.product(TaskStatus, TaskStatus))
LEGAL = [(a, b) for a, b in ALL_PAIRS if b in TRANSITIONS[a]]
ILLEGAL = [(a, b) for a, b in ALL_PAIRS if b not in TRANSITIONS[a]]


def test_terminal_waiting_and_active_partition_the_enum_exactly() -> None:
    assert set(TaskStatus) == TERMINAL | WAITING | ACTIVE
    assert not TERMINAL & WAITING
    assert not TERMINAL & ACTIVE
    assert not WAITING & ACTIVE
    assert {TaskStatus.DONE, TaskStatus.FAILED, TaskStatus.CANCELLED} == TERMINAL


def test_every_status_has_a_row_in_the_transition_table() -> None:
    assert set(TRANSITIONS) == set(TaskStatus)
    for targets in TRANSITIONS.values():
        assert targets <= set(TaskStatus)


def test_terminal_statuses_have_no_exits() -> None:
    for status in TERMINAL:
        assert TRANSITIONS[status] == frozenset()


def test_every_non_terminal_status_can_end() -> None:
    # Cancelling must always be possible, or a cancelled run could leave a node behind.
    for status in set(TaskStatus) - TERMINAL:
        assert TaskStatus.CANCELLED in TRANSITIONS[status]
        assert TRANSITIONS[status] & {TaskStatus.FAILED, TaskStatus.DONE}


def test_the_table_covers_a_plan_node_and_a_leaf_lifecycle() -> None:
    plan_path = ["PENDING", "READY", "PLANNING", "PLAN_MODIFICATION", "ATOMIZATION", "PLAN_DONE"]
    plan_path += ["NEEDS_REPLAN", "PLAN_MODIFICATION", "ATOMIZATION", "PLAN_DONE", "AGGREGATING", "DONE"]
    leaf_path = ["PENDING", "READY", "EXECUTING", "DONE"]
    for path in (plan_path, leaf_path):
        for current, target in itertools.pairwise(path):
            check_transition("t", TaskStatus(current), TaskStatus(target))


@pytest.mark.parametrize(("current", "target"), LEGAL, ids=[f"{a}->{b}" for a, b in LEGAL])
def test_every_legal_move_succeeds(current: TaskStatus, target: TaskStatus) -> None:
    node = TaskNode(task_id="root.1", goal="g", task_type=TaskType.THINK, node_type=NodeType.EXECUTE, status=current)
    previous = node.move_to(target)
    assert previous is current
    assert node.status is target
    assert node.history[-1].status is target


def test_every_illegal_move_raises_naming_both_states() -> None:
    assert len(ILLEGAL) > len(LEGAL)  # the table is a whitelist, not a formality
    for current, target in ILLEGAL:
        node = TaskNode(task_id="root.2", goal="g", task_type=TaskType.THINK, node_type=NodeType.PLAN, status=current)
        with pytest.raises(IllegalTransitionError) as info:
            node.move_to(target)
        assert info.value.current is current
        assert info.value.target is target
        message = str(info.value)
        assert f"{current} -> {target}" in message
        assert "root.2" in message
        assert node.status is current  # nothing changed
        assert node.history == []
