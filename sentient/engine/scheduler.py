"""ExecutionEngine: event-driven scheduling of one task graph.

There is no polling loop and no sleep. Every phase of a node runs as a task in one
``asyncio.TaskGroup``; when a phase ends, :meth:`ExecutionEngine._settle` looks only at what that
node affects (its dependents and its parent) and starts whatever became ready. When no task is
left, every node is terminal: a failure always reaches a decision through the failure policy,
so no node can wait forever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine

from loguru import logger

from sentient.budget import Budget
from sentient.engine.processor import NodeProcessor
from sentient.exceptions import RunError
from sentient.graph.node import NodeType, TaskNode
from sentient.graph.status import TERMINAL, TaskStatus
from sentient.settings import EngineSettings, FailurePolicy

_S = TaskStatus


class ExecutionEngine:
    """Schedules the phases of every node of one run."""

    def __init__(self, processor: NodeProcessor, settings: EngineSettings, budget: Budget | None = None) -> None:
        self._processor = processor
        self._graph = processor.graph
        self._settings = settings
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._failures: dict[str, list[str]] = {}  # parent id -> failures awaiting a replan
        self._group: asyncio.TaskGroup | None = None
        self._idle = asyncio.Event()
        self._aborting = False
        self._budget = budget
        self.stop_reason: str | None = None  # why a budget stopped the run early
        if budget is not None:
            budget.on_exhausted = self.stop

    async def run(self, *, resume: bool = False) -> TaskNode:
        """Run the graph's root to a terminal status and return it.

        With ``resume``, the graph comes from an interrupted run (see :mod:`sentient.engine.resume`):
        finished nodes are kept and only unfinished work is scheduled.

        If the caller is cancelled (Ctrl-C, a deadline), the run is cancelled in order first:
        every in-flight call is cancelled and every unfinished node ends CANCELLED.
        """
        root = self._graph.root
        deadline = None
        time_left = self._budget.time_left_s() if self._budget is not None else None
        if self._budget is not None and time_left is not None:  # what earlier runs used counts too
            deadline = asyncio.get_running_loop().call_later(time_left, self._budget.check)
        async with asyncio.TaskGroup() as group:
            self._group = group
            if resume:
                self._resume(root)
            else:
                self._processor.announce(root)
                self._spawn(root, self._start_root(root))
            if not self._tasks:
                self._idle.set()
            try:
                await self._idle.wait()
            except asyncio.CancelledError:
                self.cancel()
                raise
            finally:
                if deadline is not None:
                    deadline.cancel()
        self._group = None
        stuck = [n.task_id for n in self._graph if n.status not in TERMINAL]
        if stuck:
            raise RunError(f"engine invariant broken: nodes not terminal at the end: {stuck[:10]}")
        return root

    def cancel(self) -> None:
        """Cancel the whole run: in-flight calls are cancelled, waiting nodes become CANCELLED."""
        self._aborting = True
        self._cancel_subtree(self._graph.root)

    def stop(self, reason: str) -> None:
        """Stop early because a budget ran out: no new work, in-flight calls are cancelled."""
        if self.stop_reason is None:
            self.stop_reason = reason
            logger.warning("stopping the run: {}", reason)
        self.cancel()

    # -- resuming ------------------------------------------------------------------------

    def _resume(self, node: TaskNode) -> None:
        """Schedule what is unfinished under ``node`` (statuses were reset by ``prepare_resume``)."""
        if node.is_terminal:
            return
        if node.status is _S.READY:
            self._spawn(node, self._start_root(node) if node.parent_id is None else self._run_node(node))
        elif node.status is _S.PLAN_DONE:
            self._resume_children(node)

    def _resume_children(self, parent: TaskNode) -> None:
        children = self._graph.children(parent.task_id)
        for child in children:
            if child.status is _S.FAILED:
                self._child_settled(parent, child)  # the failure policy decides again
                if parent.status is not _S.PLAN_DONE or parent.task_id in self._tasks:
                    return
        for child in children:
            self._resume(child)
        for child in children:
            if child.is_terminal:
                self._release_dependents(child)
        if parent.task_id not in self._tasks and self._graph.all_children_terminal(parent.task_id):
            self._children_terminal(parent)

    # -- starting phases -----------------------------------------------------------------

    async def _start_root(self, root: TaskNode) -> None:
        await self._processor.decide_root_type(root)
        await self._run_node(root)

    def _start(self, node: TaskNode) -> None:
        self._spawn(node, self._run_node(node))

    async def _run_node(self, node: TaskNode) -> None:
        if node.node_type is NodeType.PLAN:
            await self._processor.plan(node)
        else:
            await self._processor.execute(node)

    def _spawn(self, node: TaskNode, phase: Coroutine[None, None, None]) -> None:
        if self._aborting:
            phase.close()
            if not node.is_terminal:
                self._processor.move(node, _S.CANCELLED, "cancelled")
            return
        assert self._group is not None
        task = self._group.create_task(self._guard(node, phase), name=node.task_id)
        self._tasks[node.task_id] = task
        task.add_done_callback(lambda t: self._cancelled_before_start(node, phase, t))

    async def _guard(self, node: TaskNode, phase: Coroutine[None, None, None]) -> None:
        """Run one phase; whatever happens, settle the node afterwards."""
        try:
            await phase
        except asyncio.CancelledError:
            if not node.is_terminal:
                self._processor.move(node, _S.CANCELLED, "cancelled")
        finally:
            self._tasks.pop(node.task_id, None)
        self._settle(node)
        if not self._tasks:
            self._idle.set()

    def _cancelled_before_start(
        self, node: TaskNode, phase: Coroutine[None, None, None], task: asyncio.Task[None]
    ) -> None:
        """Settle a node whose task was cancelled before its first step.

        Such a task never enters :meth:`_guard` (the cancellation is thrown into the unstarted
        coroutine), so nothing would mark its node CANCELLED or drop the task from ``_tasks``
        and the run would never become idle. A task that did run has already left ``_tasks``.
        """
        if self._tasks.get(node.task_id) is not task:
            return
        phase.close()
        del self._tasks[node.task_id]
        if not node.is_terminal:
            self._processor.move(node, _S.CANCELLED, "cancelled")
        self._settle(node)
        if not self._tasks:
            self._idle.set()

    # -- reacting to a finished phase ----------------------------------------------------

    def _settle(self, node: TaskNode) -> None:
        if node.task_id not in self._graph:
            return  # a replan removed it while its phase was ending: nothing left to release or report
        if node.status is _S.PLAN_DONE:
            self._start_ready_children(node)
        if node.is_terminal:
            self._release_dependents(node)
            parent = self._graph.parent(node.task_id)
            if parent is not None and parent.status is _S.PLAN_DONE:
                self._child_settled(parent, node)

    def _start_ready_children(self, node: TaskNode) -> None:
        children = self._graph.children(node.task_id)
        for child in children:
            if child.status is _S.READY and child.task_id not in self._tasks:
                self._start(child)
        if all(c.is_terminal for c in children):
            self._children_terminal(node)  # e.g. a replan that kept only finished work

    def _release_dependents(self, node: TaskNode) -> None:
        for dependent in self._graph.dependents(node.task_id):
            if dependent.status is not _S.PENDING:
                continue
            deps = self._graph.dependencies(dependent.task_id)
            if not all(d.is_terminal for d in deps):
                continue
            if any(d.status is not _S.DONE for d in deps) and self._policy_for(dependent) is not FailurePolicy.CONTINUE:
                continue  # the parent's failure policy decides about this one
            self._processor.move(dependent, _S.READY)
            self._start(dependent)

    def _child_settled(self, parent: TaskNode, child: TaskNode) -> None:
        if child.status is _S.FAILED:
            policy = self._policy_for(child)
            if policy is FailurePolicy.FAIL_PARENT:
                self._cancel_children(parent)
                self._processor.fail(parent, f"subtask {child.task_id} failed: {child.error}")
                self._settle(parent)
                return
            if policy is FailurePolicy.REPLAN:
                self._failures.setdefault(parent.task_id, []).append(f"{child.task_id} ({child.goal}): {child.error}")
                self._cancel_children(parent)
        if self._graph.all_children_terminal(parent.task_id):
            self._children_terminal(parent)

    def _children_terminal(self, parent: TaskNode) -> None:
        failures = self._failures.pop(parent.task_id, None)
        if failures:
            self._processor.move(parent, _S.NEEDS_REPLAN)
            feedback = "These subtasks failed:\n" + "\n".join(f"- {f}" for f in failures)
            self._spawn(parent, self._replan(parent, feedback))
        else:
            self._spawn(parent, self._processor.aggregate(parent))

    async def _replan(self, parent: TaskNode, feedback: str) -> None:
        logger.info("replanning {} after failures", parent.task_id)
        await self._processor.replan(parent, feedback)

    def _policy_for(self, node: TaskNode) -> FailurePolicy:
        """The failure policy for a failure among ``node``'s siblings (REPLAN falls back once spent)."""
        policy = self._settings.failure_policy
        parent = self._graph.parent(node.task_id)
        if policy is FailurePolicy.REPLAN and (parent is None or parent.replans >= self._settings.max_replans):
            return FailurePolicy.CONTINUE
        return policy

    # -- cancelling ----------------------------------------------------------------------

    def _cancel_children(self, parent: TaskNode) -> None:
        for child in self._graph.children(parent.task_id):
            self._cancel_subtree(child)

    def _cancel_subtree(self, node: TaskNode) -> None:
        """Cancel ``node`` and everything below it that has not ended yet."""
        for child in self._graph.children(node.task_id):
            self._cancel_subtree(child)
        if node.is_terminal:
            return
        task = self._tasks.get(node.task_id)
        if task is not None:
            task.cancel()  # its guard marks it CANCELLED and settles it
        else:
            self._processor.move(node, _S.CANCELLED, "cancelled")
