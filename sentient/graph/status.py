"""Task statuses and the one table of legal transitions between them."""

from __future__ import annotations

from enum import StrEnum

from sentient.exceptions import IllegalTransitionError


class TaskStatus(StrEnum):
    PENDING = "PENDING"  # created, waiting for its sibling dependencies
    READY = "READY"  # dependencies satisfied, waiting to be started
    PLANNING = "PLANNING"  # planner agent is decomposing the goal (and the plan may be under review)
    PLAN_MODIFICATION = "PLAN_MODIFICATION"  # plan-modifier agent is revising the plan
    ATOMIZATION = "ATOMIZATION"  # atomizer decides, per planned subtask, EXECUTE or PLAN
    PLAN_DONE = "PLAN_DONE"  # children created; waiting for all of them to end
    EXECUTING = "EXECUTING"  # executor agent is working on a leaf
    AGGREGATING = "AGGREGATING"  # aggregator agent combines the children's results
    DONE = "DONE"  # finished with a result
    FAILED = "FAILED"  # finished with an error
    CANCELLED = "CANCELLED"  # stopped before finishing (run cancelled, sibling failure, replan)
    NEEDS_REPLAN = "NEEDS_REPLAN"  # a child failed; the unfinished subtree will be rebuilt


TERMINAL: frozenset[TaskStatus] = frozenset({TaskStatus.DONE, TaskStatus.FAILED, TaskStatus.CANCELLED})
WAITING: frozenset[TaskStatus] = frozenset({TaskStatus.PENDING, TaskStatus.READY, TaskStatus.PLAN_DONE})
ACTIVE: frozenset[TaskStatus] = frozenset(TaskStatus) - TERMINAL - WAITING

_S = TaskStatus
TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    _S.PENDING: frozenset({_S.READY, _S.CANCELLED, _S.FAILED}),
    _S.READY: frozenset({_S.PLANNING, _S.EXECUTING, _S.CANCELLED, _S.FAILED}),
    # PLANNING or PLAN_MODIFICATION -> EXECUTING: a plan that only restates its task is dropped, and
    # the task executed; a question answered first whose plan is rejected keeps its direct answer.
    _S.PLANNING: frozenset({_S.PLAN_MODIFICATION, _S.ATOMIZATION, _S.EXECUTING, _S.FAILED, _S.CANCELLED}),
    _S.PLAN_MODIFICATION: frozenset({_S.ATOMIZATION, _S.EXECUTING, _S.FAILED, _S.CANCELLED}),
    _S.ATOMIZATION: frozenset({_S.PLAN_DONE, _S.FAILED, _S.CANCELLED}),
    _S.PLAN_DONE: frozenset({_S.AGGREGATING, _S.NEEDS_REPLAN, _S.FAILED, _S.CANCELLED}),
    # EXECUTING -> PLANNING: a question answered first (``answer_first``) that no source confirms is planned.
    _S.EXECUTING: frozenset({_S.DONE, _S.PLANNING, _S.FAILED, _S.CANCELLED}),
    _S.AGGREGATING: frozenset({_S.DONE, _S.FAILED, _S.CANCELLED}),
    _S.NEEDS_REPLAN: frozenset({_S.PLAN_MODIFICATION, _S.FAILED, _S.CANCELLED}),
    _S.DONE: frozenset(),
    _S.FAILED: frozenset(),
    _S.CANCELLED: frozenset(),
}


def check_transition(task_id: str, current: TaskStatus, target: TaskStatus) -> None:
    """Raise IllegalTransitionError unless the table allows current -> target."""
    if target not in TRANSITIONS[current]:
        raise IllegalTransitionError(task_id, current, target)
