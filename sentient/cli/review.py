"""Review in the terminal (``sentient run --review``): plans, and calls of tools marked ``confirm: true``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.hitl.protocol import (
    Approve,
    CallToConfirm,
    Modify,
    Reject,
    ReviewDecision,
    ReviewRequest,
    plan_problems,
)

EDIT_HELP = (
    "Enter the new plan, one subtask per line as  TYPE | goal | dependencies  "
    "(TYPE is SEARCH, THINK or WRITE; dependencies are earlier line numbers, e.g. 0,1).\n"
    "Finish with an empty line."
)


class TerminalReviewer:
    """Asks the person at the terminal to approve, edit, modify or reject each plan, and to approve
    or refuse each call of a tool marked ``confirm: true``.

    ``read`` is the input function (``input`` by default); ``pause``/``resume`` stop the live
    progress display while the question is on screen.
    """

    def __init__(
        self,
        console: Console,
        *,
        read: Callable[[str], str] = input,
        pause: Callable[[], None] = lambda: None,
        resume: Callable[[], None] = lambda: None,
    ) -> None:
        self._console = console
        self._read = read
        self._pause = pause
        self._resume = resume
        self._lock = asyncio.Lock()  # one question on screen at a time

    async def review_plan(self, request: ReviewRequest) -> ReviewDecision:
        async with self._lock:
            self._pause()
            try:
                return await asyncio.to_thread(self._ask, request)
            finally:
                self._resume()

    def _ask(self, request: ReviewRequest) -> ReviewDecision:
        if request.tool_call is not None:
            return self._ask_call(request.task_id, request.tool_call)
        self._show(request)
        while True:
            try:
                choice = self._read("[a]pprove, [e]dit, [m]odify with instructions, [r]eject? ").strip().lower()
                if choice in ("a", "approve", ""):
                    return Approve()
                if choice in ("r", "reject"):
                    reason = self._read("Reason: ").strip() or "rejected in the terminal"
                    return Reject(reason)
                if choice in ("m", "modify"):
                    instructions = self._read("Instructions for the plan modifier: ").strip()
                    if instructions:
                        return Modify(instructions=instructions)
                elif choice in ("e", "edit"):
                    plan = self._edit()
                    if plan is not None:
                        return Modify(plan=plan)
                else:
                    self._console.print("[yellow]Please answer a, e, m or r.[/]")
            except EOFError:
                return Reject("no reviewer input (standard input is closed)")

    def _ask_call(self, task_id: str, call: CallToConfirm) -> ReviewDecision:
        arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
        self._console.print(f"[bold]Tool call approval[/] ({task_id})", highlight=False)
        try:
            # input(), not the console: the tool and its arguments are shown as they are, never as markup.
            answer = self._read(f"Approve tool call: {call.tool} with {arguments}? [y/N] ").strip().lower()
        except EOFError:
            return Reject("no reviewer input (standard input is closed)")
        if answer in ("y", "yes"):
            return Approve()
        return Reject("refused in the terminal")

    def _show(self, request: ReviewRequest) -> None:
        assert request.plan is not None, "a plan review has a plan"
        table = Table(title=f"Plan for {request.task_id} (round {request.round}): {request.goal}", show_lines=False)
        table.add_column("#", justify="right")
        table.add_column("type")
        table.add_column("goal")
        table.add_column("after")
        for i, sub in enumerate(request.plan.subtasks):
            table.add_row(str(i), sub.task_type.value, sub.goal, ",".join(map(str, sub.depends_on_indices)))
        self._console.print(table)

    def _edit(self) -> PlanOutput | None:
        self._console.print(EDIT_HELP)
        lines = []
        while line := self._read("> ").strip():
            lines.append(line)
        try:
            plan = parse_plan_lines(lines)
        except ValueError as exc:
            self._console.print(f"[red]Not a valid plan:[/] {exc}")
            return None
        problems = plan_problems(plan)
        if problems:
            self._console.print("[red]Not a valid plan:[/] " + "; ".join(problems))
            return None
        return plan


def parse_plan_lines(lines: list[str]) -> PlanOutput:
    """Parse ``TYPE | goal | deps`` lines into a plan; raises ValueError with the line at fault."""
    subtasks = []
    for number, line in enumerate(lines):
        parts = [p.strip() for p in line.split("|")]
        if len(parts) < 2:
            raise ValueError(f"line {number}: expected 'TYPE | goal | dependencies'")
        try:
            task_type = TaskType(parts[0].upper())
        except ValueError:
            raise ValueError(f"line {number}: unknown type '{parts[0]}' (use SEARCH, THINK or WRITE)") from None
        if not parts[1]:
            raise ValueError(f"line {number}: the goal is empty")
        deps_text = parts[2] if len(parts) > 2 else ""
        try:
            deps = [int(d) for d in deps_text.replace(" ", "").split(",") if d]
        except ValueError:
            raise ValueError(f"line {number}: dependencies must be numbers like 0,1") from None
        subtasks.append(SubTask(goal=parts[1], task_type=task_type, depends_on_indices=deps))
    try:
        return PlanOutput(subtasks=subtasks)
    except ValidationError as exc:
        raise ValueError(exc.errors()[0]["msg"]) from None
