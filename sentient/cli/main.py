"""``sentient``: run research goals from the command line.

Exit codes: 0 success, 1 the run failed or was cancelled, 2 bad input or configuration,
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path

from loguru import logger
from rich.console import Console

from sentient.agents.registry import AgentRegistry
from sentient.api import ProfiledSentientAgent, RunResult, new_project_id
from sentient.cli.progress import ProgressDisplay, ProgressLog
from sentient.cli.review import TerminalReviewer
from sentient.exceptions import SentientError
from sentient.settings import Settings

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sentient", description="Hierarchical research agents.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log engine activity to stderr")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="research a goal and write a cited report")
    run.add_argument("goal", help="what to research, in quotes")
    run.add_argument("--profile", default="general_agent", help="agent profile (default: general_agent)")
    run.add_argument("--docs", type=Path, help="folder of documents to research (.md .txt .rst .html .py)")
    run.add_argument("--max-depth", type=int, help="deepest layer that is planned further")
    run.add_argument("--review", action="store_true", help="approve, edit or reject each plan in the terminal")
    run.add_argument("--out", type=Path, help="output folder (default: project_results/<project-id>)")
    run.add_argument("--json", action="store_true", help="print one JSON object instead of the live display")

    commands.add_parser("profiles", help="list the available profiles")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _configure_logging(args.verbose)
    out = Console(stderr=False)
    err = Console(stderr=True)
    try:
        settings = Settings()
        if args.command == "profiles":
            return _list_profiles(settings, out)
        return _run(args, settings, err)
    except SentientError as exc:
        err.print(f"[red]error:[/] {exc}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]")
        return EXIT_INTERRUPTED


def _list_profiles(settings: Settings, out: Console) -> int:
    registry = AgentRegistry.load(settings.config_dir)
    for name in registry.profile_names():
        out.print(f"[bold]{name}[/]  {registry.profile(name).description}", highlight=False, soft_wrap=True)
    return EXIT_OK


def _run(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    if not args.goal.strip():
        err.print(
            '[red]error:[/] the goal is empty: describe what to research, e.g. sentient run "..."', soft_wrap=True
        )
        return EXIT_USAGE
    if args.docs is not None and not args.docs.is_dir():
        err.print(f"[red]error:[/] docs folder '{args.docs}' does not exist or is not a folder", soft_wrap=True)
        return EXIT_USAGE
    overrides = {"max_depth": args.max_depth, "review": "all" if args.review else None}
    display: ProgressDisplay | ProgressLog | None = None
    if not args.json:
        display = ProgressDisplay(err) if err.is_terminal else ProgressLog(err)
    reviewer = None
    if args.review:
        reviewer = TerminalReviewer(
            err,
            # Prompts go to stderr: stdout holds only the report (or the one JSON object).
            read=lambda prompt: err.input(prompt, markup=False),
            pause=display.pause if display else lambda: None,
            resume=display.resume if display else lambda: None,
        )
    agent = ProfiledSentientAgent.create_with_profile(
        args.profile, settings=settings, reviewer=reviewer, docs=args.docs, **overrides
    )
    project_id = new_project_id(args.goal)
    out_dir = args.out or settings.results_dir / project_id
    run = agent.arun(args.goal, project_id=project_id, output_dir=out_dir, subscribers=[display] if display else [])
    try:
        if display is None:
            result = asyncio.run(run)
        else:
            err.print(
                f"[bold]Researching:[/] {args.goal.strip()}  [dim](profile {args.profile})[/]",
                highlight=False,
                soft_wrap=True,
            )
            with display:
                result = asyncio.run(run)
    except KeyboardInterrupt:
        # The engine cancelled every in-flight call; the partial report is written before we get here.
        err.print(f"[yellow]interrupted[/]: partial report, graph and traces in {out_dir}", soft_wrap=True)
        return EXIT_INTERRUPTED
    return _report(result, args.json, err)


def _report(result: RunResult, as_json: bool, err: Console) -> int:
    stats = result.stats
    if as_json:
        payload = {
            "project_id": result.project_id,
            "status": result.status,
            "error": result.error,
            "output_dir": str(result.output_dir) if result.output_dir else None,
            "stats": stats.__dict__,
            "final_answer": result.final_answer,
        }
        print(json.dumps(payload))
    else:
        # The report goes to stdout exactly as written to report.md (no wrapping, no markup).
        sys.stdout.write("\n" + result.report_markdown)
        sys.stdout.flush()
        summary = (
            f"{stats.nodes} tasks, {stats.agent_calls} agent calls, "
            f"{stats.input_tokens + stats.output_tokens} tokens, {stats.elapsed_s:.1f}s"
        )
        colour = "green" if result.status == "completed" else "red"
        err.print(f"[{colour}]{result.status}[/] · {summary}", highlight=False)
        if result.output_dir:
            err.print(f"report, graph and traces in {result.output_dir}", highlight=False, soft_wrap=True)
    if result.status != "completed":
        err.print(f"[red]run {result.status}:[/] {result.error}", highlight=False, soft_wrap=True)
        return EXIT_FAILED
    return EXIT_OK


def _configure_logging(verbose: bool) -> None:
    logger.remove()
    logger.add(sys.stderr, level="INFO" if verbose else "WARNING", format="{time:HH:mm:ss} {level} {message}")
    # agno logs parse and provider problems on stdout; Sentient records them on the node and in
    # the trace, and stdout must carry only the report (or the --json object).
    logging.getLogger("agno").setLevel(logging.CRITICAL)


if __name__ == "__main__":
    raise SystemExit(main())
