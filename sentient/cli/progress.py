"""Live progress of a run in the terminal: the growing task tree, coloured by status."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text
from rich.tree import Tree

from sentient.events import (
    AgentCallFinished,
    Event,
    NodeCreated,
    NodeSnapshot,
    NodesRemoved,
    NodeStatusChanged,
    RunStarted,
)
from sentient.graph.status import TaskStatus

_STYLE = {
    TaskStatus.PENDING: ("·", "dim"),
    TaskStatus.READY: ("○", "white"),
    TaskStatus.PLANNING: ("◐", "cyan"),
    TaskStatus.PLAN_MODIFICATION: ("◐", "magenta"),
    TaskStatus.ATOMIZATION: ("◐", "cyan"),
    TaskStatus.PLAN_DONE: ("◇", "blue"),
    TaskStatus.EXECUTING: ("◐", "yellow"),
    TaskStatus.AGGREGATING: ("◐", "green"),
    TaskStatus.DONE: ("✔", "green"),
    TaskStatus.FAILED: ("✘", "red"),
    TaskStatus.CANCELLED: ("⊘", "dim"),
    TaskStatus.NEEDS_REPLAN: ("↻", "magenta"),
}
_MAX_LINES = 40


@dataclass
class _Row:
    parent_id: str | None
    goal: str
    kind: str
    status: TaskStatus


class ProgressDisplay:
    """An event subscriber that renders the task tree live (rich). Use as a context manager."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._rows: dict[str, _Row] = {}
        self._children: dict[str | None, list[str]] = {}
        self._lock = threading.Lock()
        self._calls = 0
        self._tokens = 0
        self._started = time.monotonic()
        self._live = Live(self, console=console, refresh_per_second=4, transient=False)

    def __enter__(self) -> ProgressDisplay:
        self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.stop()

    def pause(self) -> None:
        """Stop redrawing (e.g. while the terminal reviewer asks a question)."""
        self._live.stop()

    def resume(self) -> None:
        self._live.start()

    def _add(self, node: NodeSnapshot) -> None:
        kind = f"{node.task_type.value}/{node.node_type.value}"
        if node.task_id not in self._rows:  # a new run's root is in RunStarted, then announced
            self._children.setdefault(node.parent_id, []).append(node.task_id)
        self._rows[node.task_id] = _Row(node.parent_id, node.goal, kind, node.status)

    def __call__(self, event: Event) -> None:
        with self._lock:
            if isinstance(event, NodeCreated):
                self._add(event.node)
            elif isinstance(event, RunStarted):  # a resumed run starts from its stored tree
                for node in event.nodes:
                    self._add(node)
            elif isinstance(event, NodeStatusChanged) and event.task_id in self._rows:
                self._rows[event.task_id].status = event.new
            elif isinstance(event, NodesRemoved):
                for task_id in event.task_ids:
                    row = self._rows.pop(task_id, None)
                    if row is not None:
                        self._children.get(row.parent_id, []).remove(task_id)
            elif isinstance(event, AgentCallFinished):
                self._calls += 1
                self._tokens += event.input_tokens + event.output_tokens

    def __rich__(self) -> RenderableType:
        with self._lock:
            return Group(self._tree(), self._footer())

    def _tree(self) -> RenderableType:
        roots = self._children.get(None, [])
        if not roots:
            return Text("Starting…", style="dim")
        crowded = len(self._rows) > _MAX_LINES
        tree = Tree(self._label(roots[0]), guide_style="dim")
        self._add_children(tree, roots[0], crowded)
        return tree

    def _add_children(self, tree: Tree, task_id: str, crowded: bool) -> None:
        for child_id in self._children.get(task_id, []):
            row = self._rows[child_id]
            branch = tree.add(self._label(child_id))
            # In a big tree, finished subtrees fold to one line so the active work stays visible.
            if crowded and row.status in (TaskStatus.DONE, TaskStatus.CANCELLED):
                hidden = self._count_below(child_id)
                if hidden:
                    branch.add(Text(f"… {hidden} finished subtasks", style="dim"))
                continue
            self._add_children(branch, child_id, crowded)

    def _count_below(self, task_id: str) -> int:
        children = self._children.get(task_id, [])
        return len(children) + sum(self._count_below(c) for c in children)

    def _label(self, task_id: str) -> Text:
        row = self._rows[task_id]
        icon, style = _STYLE[row.status]
        width = max(20, self._console.width - 40 - 2 * task_id.count("."))
        goal = row.goal if len(row.goal) <= width else row.goal[: width - 1] + "…"
        label = Text(f"{icon} ", style=style)
        label.append(f"{task_id} ", style="bold")
        label.append(goal)
        label.append(f"  {row.status.value.lower()}", style=style)
        return label

    def _footer(self) -> Text:
        done = sum(1 for r in self._rows.values() if r.status is TaskStatus.DONE)
        elapsed = time.monotonic() - self._started
        return Text(
            f"{done}/{len(self._rows)} tasks done · {self._calls} agent calls · {self._tokens} tokens · {elapsed:.0f}s",
            style="dim",
        )


class ProgressLog:
    """Progress as plain lines, for a stderr that is not a terminal (CI logs, pipes)."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._started = time.monotonic()

    def __enter__(self) -> ProgressLog:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def pause(self) -> None:
        return None

    def resume(self) -> None:
        return None

    def __call__(self, event: Event) -> None:
        line = None
        if isinstance(event, AgentCallFinished):
            outcome = f"failed: {event.error}" if event.error else "done"
            line = (
                f"{event.task_id} {event.role} {outcome} "
                f"({event.latency_s:.1f}s, {event.input_tokens}+{event.output_tokens} tokens)"
            )
        elif isinstance(event, NodeStatusChanged) and event.new in (TaskStatus.FAILED, TaskStatus.CANCELLED):
            line = f"{event.task_id} {event.new.value.lower()}: {event.error}"
        if line:
            elapsed = time.monotonic() - self._started
            self._console.print(f"[{elapsed:6.1f}s] {line}", markup=False, highlight=False, soft_wrap=True)
