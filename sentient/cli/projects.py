"""``sentient projects``: list, show, search, export and delete the projects in the store.

``list`` prints a table sized to the terminal; piped, tab-separated values with every column
(the goal whole); with ``--json``, one JSON array.

Exit codes: 0 done, 1 not done (deletion declined), 2 bad input (unknown id, invalid id, a
project that is still running).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from sentient.cli.errors import EXIT_OK, EXIT_USAGE, report_error
from sentient.exceptions import SentientError
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.projects import ProjectService
from sentient.report.docx import to_docx
from sentient.report.html import to_html
from sentient.report.model import Report
from sentient.report.pdf import to_pdf
from sentient.settings import Settings
from sentient.store import ProjectRecord, ProjectStatus, ProjectStore, owner_alive
from sentient.trace import write_bytes

EXIT_DECLINED = 1
_GOAL_WIDTH = 60
_MIN_GOAL_WIDTH = 12
_MAX_TREE_NODES = 300  # a 10,000-node tree is for export, not for the terminal
# Terminal control characters (ANSI escapes, BEL, backspace…) stored in a goal are shown, not obeyed.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

_PROJECT_STYLE = {
    ProjectStatus.CREATED: "dim",
    ProjectStatus.RUNNING: "cyan",
    ProjectStatus.COMPLETED: "green",
    ProjectStatus.FAILED: "red",
    ProjectStatus.CANCELLED: "yellow",
    ProjectStatus.STOPPED: "yellow",
    ProjectStatus.INTERRUPTED: "magenta",
}
_NODE_STYLE = {TaskStatus.DONE: "green", TaskStatus.FAILED: "red", TaskStatus.CANCELLED: "dim"}
_BINARY: dict[str, Callable[[Report], bytes]] = {"pdf": to_pdf, "docx": to_docx}  # written to a file or a pipe


def add_projects_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``projects`` (with ``list``, ``show``, ``knowledge``, ``export``, ``delete``) to the CLI's subcommands."""
    projects: argparse.ArgumentParser = subparsers.add_parser(
        "projects", help="list, show, search, export or delete stored projects"
    )
    commands = projects.add_subparsers(
        dest="projects_command", required=True, metavar="{list,show,knowledge,export,delete}"
    )
    listing = commands.add_parser("list", help="every project, newest first")
    listing.add_argument("--json", action="store_true", help="print one JSON array of the projects")
    show = commands.add_parser("show", help="a project's status, statistics, reviews and task tree")
    show.add_argument("project_id")
    knowledge = commands.add_parser(
        "knowledge", help="what a project's finished tasks learned, or the 10 findings best matching QUERY"
    )
    knowledge.add_argument("project_id")
    knowledge.add_argument("query", nargs="?", help="words to look for (default: every finding, in order)")
    export = commands.add_parser("export", help="write a project's report (md, html, pdf, docx) or all its data (json)")
    export.add_argument("project_id")
    export.add_argument("--format", choices=("md", "html", "json", *_BINARY), default="md", help="default: md")
    export.add_argument("--out", type=Path, help="file to write (default: stdout; pdf and docx: not a terminal)")
    delete = commands.add_parser("delete", help="delete a project and its files")
    delete.add_argument("project_id")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    return projects


def run_projects(
    args: argparse.Namespace, settings: Settings, *, out: Console | None = None, err: Console | None = None
) -> int:
    """Run a ``sentient projects`` command; returns the exit code."""
    out = out or Console()
    err = err or Console(stderr=True)
    handler = {"list": _list, "show": _show, "knowledge": _knowledge, "export": _export, "delete": _delete}[
        args.projects_command
    ]
    try:
        with ProjectStore.open(settings.results_dir, settings.database_url, lease_s=settings.lease_s) as store:
            return handler(args, ProjectService(store, settings), out, err)
    except SentientError as exc:
        return report_error(err, exc)


# -- list ----------------------------------------------------------------------------------


def _list(args: argparse.Namespace, service: ProjectService, out: Console, err: Console) -> int:
    projects = service.list()
    if args.json:
        out.file.write(json.dumps([_listed(project) for project in projects], ensure_ascii=False) + "\n")
        return EXIT_OK
    if not projects:
        err.print(f"no projects yet in {service.store.location}", highlight=False, soft_wrap=True)
        return EXIT_OK
    if not out.is_terminal:
        _list_tsv(projects, out)
        return EXIT_OK
    now = time.time()
    rows = []
    for project in projects:
        stats = project.live_stats()
        rows.append(
            [
                escape(project.project_id),
                _status(project),
                escape(_shorten(project.goal)),
                str(stats.get("nodes", 0)),
                str(stats.get("agent_calls", 0)),
                _cost(stats.get("cost_usd", 0.0)),
                _age(now - project.created_at),
            ]
        )
    # The id (what `resume` needs) is never cut. The goal takes the room left; on a narrow
    # terminal it goes, then the numbers, from the least useful.
    columns = ["ID", "Status", "Goal", "Nodes", "Calls", "Cost", "Age"]
    widths = [max(len(p.project_id) for p in projects), max(len(_status_text(p)[0]) for p in projects), 0, 5, 5, 7, 4]
    for dropped in ("Goal", "Cost", "Calls", "Age", "Nodes"):
        room = out.width - sum(widths) - 2 * (len(columns) - 1)
        if dropped == "Goal" and room >= _MIN_GOAL_WIDTH:
            widths[columns.index("Goal")] = min(room, _GOAL_WIDTH)
            break
        if room >= 0 and dropped != "Goal":
            break
        index = columns.index(dropped)
        for row in rows:
            del row[index]
        del columns[index], widths[index]
    table = Table(box=None, header_style="bold", pad_edge=False)
    for name, width in zip(columns, widths, strict=True):
        if name == "Goal":
            table.add_column(name, overflow="ellipsis", no_wrap=True, max_width=width)
        elif name in ("ID", "Status"):
            table.add_column(name, no_wrap=True, min_width=width if name == "ID" else None)
        else:
            table.add_column(name, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    out.print(table, crop=False)
    return EXIT_OK


def _list_tsv(projects: list[ProjectRecord], out: Console) -> None:
    """The list for a pipe: tab-separated, a header line, every column, goals whole on one line."""
    now = time.time()
    lines = ["\t".join(["ID", "Status", "Goal", "Nodes", "Calls", "Cost", "Age"])]
    for project in projects:
        stats = project.live_stats()
        cells = [
            project.project_id,
            _status_text(project)[0],
            " ".join(_printable(project.goal).split()),  # tabs and newlines become spaces
            str(stats.get("nodes", 0)),
            str(stats.get("agent_calls", 0)),
            _cost(stats.get("cost_usd", 0.0)),
            _age(now - project.created_at),
        ]
        lines.append("\t".join(cells))
    out.file.write("\n".join(lines) + "\n")  # as written: a console would expand the tabs


def _listed(project: ProjectRecord) -> dict[str, Any]:
    """A project as ``list --json`` prints it."""
    stats = project.live_stats()
    return {
        "project_id": project.project_id,
        "status": _effective_status(project).value,
        "goal": project.goal,
        "profile": project.profile,
        "error": project.error,
        "nodes": stats.get("nodes", 0),
        "failed_nodes": stats.get("failed_nodes", 0),
        "agent_calls": stats.get("agent_calls", 0),
        "cost_usd": stats.get("cost_usd", 0.0),
        "pending_reviews": project.pending_reviews,
        "created_at": _iso(project.created_at),
        "updated_at": _iso(project.updated_at),
    }


# -- show ----------------------------------------------------------------------------------


def _show(args: argparse.Namespace, service: ProjectService, out: Console, err: Console) -> int:
    project = service.get(args.project_id)
    graph = service.graph(project.project_id)
    reviews = service.pending_reviews(project.project_id)
    stats = project.live_stats()
    line = f"[bold]{escape(project.project_id)}[/]  {_status(project)}"
    if project.error:
        line += f"  [red]{escape(_printable(project.error))}[/]"
    out.print(line, highlight=False, soft_wrap=True)
    out.print(f"goal:     {escape(_printable(project.goal))}", highlight=False, soft_wrap=True)
    if project.status is ProjectStatus.RUNNING and project.owner:
        # Who holds it (host:pid), alive or not: the status above says interrupted when not.
        out.print(f"owner:    {escape(_printable(project.owner))}", highlight=False, soft_wrap=True)
    out.print(
        f"profile:  {escape(project.profile)} · created {_when(project.created_at)}"
        f" · updated {_when(project.updated_at)}",
        highlight=False,
        soft_wrap=True,
    )
    summary = (
        f"stats:    {stats.get('nodes', 0)} nodes, {stats.get('agent_calls', 0)} agent calls, "
        f"{stats.get('input_tokens', 0)} + {stats.get('output_tokens', 0)} tokens, {_cost(stats.get('cost_usd', 0.0))}"
    )
    if "elapsed_s" in stats:
        summary += f", {float(stats['elapsed_s']):.1f}s"
    if stats.get("failed_nodes"):
        summary += f", [red]{stats['failed_nodes']} failed[/]"
    out.print(summary, highlight=False, soft_wrap=True)
    out.print(f"report:   {escape(_report_location(service, project))}", highlight=False, soft_wrap=True)
    out.print(f"reviews:  {len(reviews)} pending", highlight=False)
    for review in reviews:
        out.print(
            f"  {escape(review.review_id)}  {escape(review.task_id)} (round {review.round})"
            f"  {escape(_shorten(review.goal))}",
            highlight=False,
        )
    if len(graph):
        out.print(_tree(graph))
    else:
        out.print("[dim]no task stored yet[/]")
    return EXIT_OK


def _report_location(service: ProjectService, project: ProjectRecord) -> str:
    path = service.folder(project.project_id) / "report.md"
    if path.is_file():
        return str(path)
    if project.has_report:
        return f"in the store (sentient projects export {project.project_id})"
    return "none yet"


def _tree(graph: TaskGraph) -> Tree:
    root = graph.root
    tree = Tree(_node_label(graph, root.task_id), guide_style="dim")
    shown = 1
    stack = [(tree, child) for child in reversed(root.children)]
    while stack:
        branch, task_id = stack.pop()
        if shown == _MAX_TREE_NODES:
            tree.add(f"[dim]… {len(graph) - shown} more (sentient projects export ID --format json)[/]")
            break
        shown += 1
        sub = branch.add(_node_label(graph, task_id))
        stack.extend((sub, child) for child in reversed(graph.get(task_id).children))
    return tree


def _node_label(graph: TaskGraph, task_id: str) -> str:
    node = graph.get(task_id)
    style = _NODE_STYLE.get(node.status, "cyan")
    label = f"[{style}]{node.status.value}[/] [bold]{escape(node.task_id)}[/] {escape(_shorten(node.goal))}"
    if node.error:
        label += f" [red]— {escape(_shorten(node.error))}[/]"
    return label


# -- knowledge -------------------------------------------------------------------------------


def _knowledge(args: argparse.Namespace, service: ProjectService, out: Console, err: Console) -> int:
    entries = service.knowledge(args.project_id, args.query)
    if not entries:
        what = "no finished task yet" if args.query is None else f"no finding shares a word with {args.query!r}"
        err.print(escape(_printable(what)), highlight=False, soft_wrap=True)
        return EXIT_OK
    for entry in entries:
        out.print(
            f"[bold]{escape(entry.task_id)}[/]  {escape(_printable(entry.goal))}", highlight=False, soft_wrap=True
        )
        out.print(escape(_printable(entry.result)), highlight=False, soft_wrap=True)
        for ref in entry.sources:
            out.print(f"[dim]source: {escape(_printable(ref))}[/]", highlight=False, soft_wrap=True)
        out.print()
    return EXIT_OK


# -- export --------------------------------------------------------------------------------


def _export(args: argparse.Namespace, service: ProjectService, out: Console, err: Console) -> int:
    if args.out is not None:
        problem = _unwritable_file(args.out)
        if problem:
            err.print(f"[red]error:[/] --out {escape(str(args.out))}: {problem}", highlight=False, soft_wrap=True)
            return EXIT_USAGE
    elif args.format in _BINARY and out.is_terminal:
        err.print(
            f"[red]error:[/] --format {args.format} writes a binary file: give --out FILE or redirect stdout to a file",
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_USAGE
    data: str | bytes
    if args.format == "json":
        data = json.dumps(service.export(args.project_id), indent=2, ensure_ascii=False, default=str) + "\n"
    else:
        markdown, report = service.report(args.project_id)  # NoReportError: it has not run
        if args.format in _BINARY:
            data = _BINARY[args.format](report)  # ExportError: the machine lacks what the format needs
        else:
            data = to_html(report) if args.format == "html" else markdown
    if args.out is None:
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        sys.stdout.flush()
        return EXIT_OK
    try:
        write_bytes(args.out, data if isinstance(data, bytes) else data.encode("utf-8"))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        err.print(
            f"[red]error:[/] cannot write {escape(str(args.out))}: {escape(reason)}; give a file in an existing,"
            " writable folder",
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_USAGE
    err.print(f"wrote {escape(str(args.out))}", highlight=False, soft_wrap=True)
    return EXIT_OK


# -- delete --------------------------------------------------------------------------------


def _delete(args: argparse.Namespace, service: ProjectService, out: Console, err: Console) -> int:
    project = service.check_stopped(args.project_id)  # ProjectRunningError: stop it first
    folder = service.folder(project.project_id)
    if not args.yes:
        if not sys.stdin.isatty():
            err.print("[red]error:[/] not a terminal: pass --yes to delete without a prompt", highlight=False)
            return EXIT_USAGE
        answer = err.input(f"Delete project {project.project_id} and {folder}? [y/N] ", markup=False)
        if answer.strip().lower() not in ("y", "yes"):
            err.print("kept", highlight=False)
            return EXIT_DECLINED
    service.delete(project.project_id)  # ProjectRunningError while a live process runs it
    out.print(f"deleted {escape(project.project_id)}", highlight=False)
    return EXIT_OK


# -- formatting ----------------------------------------------------------------------------


def _status(project: ProjectRecord) -> str:
    text, style = _status_text(project)
    return f"[{style}]{text}[/]"


def _effective_status(project: ProjectRecord) -> ProjectStatus:
    if project.status is ProjectStatus.RUNNING and not owner_alive(project):
        return ProjectStatus.INTERRUPTED  # its process died (kill -9, a crash): resume it
    return project.status


def _status_text(project: ProjectRecord) -> tuple[str, str]:
    status = _effective_status(project)
    if status is ProjectStatus.COMPLETED and project.failed_nodes:
        return "completed with failures", "yellow"
    return status.value, _PROJECT_STYLE[status]


def _printable(text: str) -> str:
    """``text`` with terminal control characters shown as escapes (``\\x1b``), never sent raw."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _shorten(text: str, width: int = _GOAL_WIDTH) -> str:
    text = " ".join(_printable(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _unwritable_file(path: Path) -> str | None:
    """Why a file cannot be written at ``path``, or None."""
    if path.is_dir():
        return "is a folder; give a file name"
    parent = path.absolute().parent
    while not parent.exists():  # missing folders are created
        parent = parent.parent
    if not parent.is_dir():
        return f"'{parent}' is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"folder '{parent}' is not writable"
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is not writable"
    return None


def _cost(cost: float) -> str:
    return f"${cost:.4f}" if cost else "$0"


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")
