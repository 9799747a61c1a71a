"""``sentient``: run research goals from the command line.

Exit codes: 0 success, 1 the run failed, was cancelled or was stopped by a budget (the partial
report is written), 2 bad input or configuration (checked before any model call; also a
project another process is running), 3 completed with failures (the report lists the
subtasks it does not cover; ``sentient resume ID`` runs them again), 130 interrupted (Ctrl-C)
and 143 terminated (SIGTERM): the state is saved, resume it with ``sentient resume ID``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from collections.abc import Coroutine
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from loguru import logger
from rich.console import Console
from rich.markup import escape

from sentient.agents.registry import AgentRegistry
from sentient.cli.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_TERMINATED,
    EXIT_USAGE,
    report_error,
)
from sentient.cli.out_folder import out_folder_problem
from sentient.cli.progress import ProgressDisplay, ProgressLog
from sentient.cli.projects import add_projects_parser, run_projects
from sentient.cli.review import TerminalReviewer
from sentient.cli.serve import add_serve_parser, run_serve
from sentient.cli.worker import add_worker_parser, run_worker
from sentient.engine.memory import freeze_startup_objects
from sentient.eval.cli import add_eval_parser, run_eval_command
from sentient.events import Subscriber
from sentient.exceptions import SentientError
from sentient.projects import ProjectService, RunOptions, RunResult, check_goal, new_project_id
from sentient.settings import Settings, settings_from_env
from sentient.store import ProjectStore
from sentient.structured import load_output_schema
from sentient.tools.sandbox import hide_process_memory

T = TypeVar("T")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sentient", description="Hierarchical research agents.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log engine activity to stderr")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="research a goal and write a cited report")
    run.add_argument("goal", help="what to research, in quotes")
    run.add_argument("--profile", default="general_agent", help="agent profile (default: general_agent)")
    run.add_argument("--docs", type=Path, help="folder of documents to research (.md .txt .rst .html .py)")
    run.add_argument("--max-depth", type=int, help="deepest layer that is planned further")
    run.add_argument(
        "--report-length",
        metavar="SIZE",
        help="write a report of this size: short, standard, long or about N words"
        " (default: a report only when the goal asks for one)",
    )
    run.add_argument(
        "--output-schema",
        type=Path,
        metavar="FILE",
        help="a JSON Schema file: the answer is also given as JSON of that schema, with each string's"
        " citations, and printed instead of the report (see docs/structured-output.md)",
    )
    run.add_argument("--review", action="store_true", help="approve, edit or reject each plan in the terminal")
    run.add_argument("--out", type=Path, help="output folder, new or empty (default: project_results/<project-id>)")
    run.add_argument(
        "--force",
        action="store_true",
        help="let --out write into a folder that is not empty (its report files are replaced)",
    )
    _add_run_options(run)

    resume = commands.add_parser("resume", help="continue a run that was interrupted, cancelled or stopped")
    resume.add_argument("project_id", help="the project to resume (see: sentient projects list)")
    resume.add_argument("--docs", type=Path, help="folder of documents to research (default: the project's)")
    resume.add_argument("--review", action="store_true", help="approve, edit or reject each plan in the terminal")
    _add_run_options(resume)

    rerun = commands.add_parser(
        "rerun", help="run one task of a project again: its executor, or its planner with --replan"
    )
    rerun.add_argument("project_id", help="the project (see: sentient projects list)")
    rerun.add_argument("node_id", help="the task to run again, e.g. root.1 (see: sentient projects show ID)")
    rerun.add_argument("--replan", action="store_true", help="plan the task again: its subtasks are rebuilt")
    rerun.add_argument("--instructions", metavar="TEXT", help="what the task's agents should do differently")
    rerun.add_argument("--docs", type=Path, help="folder of documents to research (default: the project's)")
    rerun.add_argument("--review", action="store_true", help="approve, edit or reject each plan in the terminal")
    _add_run_options(rerun)

    ask = commands.add_parser(
        "ask", help="ask a follow-up question of a project that ran, answered from what it found first"
    )
    ask.add_argument("project_id", help="the project (see: sentient projects list)")
    ask.add_argument("question", help="the follow-up question, in quotes")
    ask.add_argument("--docs", type=Path, help="folder of documents to research (default: the project's)")
    ask.add_argument("--review", action="store_true", help="approve, edit or reject each plan in the terminal")
    _add_run_options(ask)

    commands.add_parser("profiles", help="list the available profiles")
    add_projects_parser(commands)
    add_serve_parser(commands)
    add_worker_parser(commands)
    add_eval_parser(commands)
    return parser


def _add_run_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--model",
        help="model for every agent, e.g. local, openai:gpt-4o-mini, ollama:llama3.1 (resume: default the project's)",
    )
    command.add_argument(
        "--call-timeout",
        type=float,
        metavar="SECONDS",
        help="timeout of each attempt of a model call (default 120, the embedded model 300); a hosted"
        " model's call gets 3 times it for all its attempts",
    )
    command.add_argument(
        "--language",
        metavar="TAG",
        help="the language every agent writes in, e.g. de, fr, pt-BR (default: the goal's; resume: the project's)",
    )
    command.add_argument("--max-cost", type=float, metavar="USD", help="stop when model calls have cost this much")
    command.add_argument("--max-llm-calls", type=int, metavar="N", help="stop after N model calls")
    command.add_argument("--max-time", type=float, metavar="SECONDS", help="stop after this many seconds")
    command.add_argument(
        "--offline", action="store_true", help="never use the network (no web search or fetch; resume: kept)"
    )
    command.add_argument("--json", action="store_true", help="print one JSON object instead of the live display")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _configure_logging(args.verbose)
    out = Console(stderr=False)
    err = Console(stderr=True)
    try:
        settings = settings_from_env()
        if args.command == "profiles":
            return _list_profiles(settings, out)
        if args.command == "projects":
            return run_projects(args, settings)
        # Runs and the server hold API keys; a sandboxed snippet must not read them from /proc.
        hide_process_memory()
        freeze_startup_objects()
        if args.command == "serve":
            return run_serve(args, settings)
        if args.command == "worker":
            return run_worker(args, settings)
        if args.command == "eval":
            return run_eval_command(args, settings)
        return _run(args, settings, err)
    except SentientError as exc:
        return report_error(err, exc)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]")
        return EXIT_INTERRUPTED


def _list_profiles(settings: Settings, out: Console) -> int:
    registry = AgentRegistry.load(settings.config_dir)
    for name in registry.profile_names():
        out.print(f"[bold]{name}[/]  {registry.profile(name).description}", highlight=False, soft_wrap=True)
    return EXIT_OK


def _run(args: argparse.Namespace, settings: Settings, err: Console) -> int:
    """``sentient run``, ``resume``, ``rerun`` and ``ask``: one run with the live display, persisted as it goes.

    Everything the user gave is checked before the store or a model is touched.
    """
    # A rerun is a resume with one task reset first; a follow-up question, a resume of the new
    # project that follows the one asked (stored now, with its options).
    resuming = args.command in ("resume", "rerun", "ask")
    if args.offline:
        settings = settings.model_copy(update={"offline": True})
    if not resuming:
        check_goal(args.goal)  # InvalidGoalError: empty, control characters, or bytes that are not UTF-8
    if args.docs is not None and not args.docs.is_dir():
        err.print(f"[red]error:[/] docs folder '{args.docs}' does not exist or is not a folder", soft_wrap=True)
        return EXIT_USAGE
    out_dir_arg: Path | None = getattr(args, "out", None)
    if out_dir_arg is not None:
        problem = out_folder_problem(out_dir_arg, settings.results_dir, force=args.force)
        if problem:
            err.print(f"[red]error:[/] --out {escape(str(out_dir_arg))}: {problem}", highlight=False, soft_wrap=True)
            return EXIT_USAGE
    overrides = {
        "max_depth": getattr(args, "max_depth", None),
        "report_length": getattr(args, "report_length", None),
        "language": args.language,
        "review": "all" if args.review else None,
        "max_cost_usd": args.max_cost,
        "max_llm_calls": args.max_llm_calls,
        "max_time_s": args.max_time,
        "agent_timeout_s": args.call_timeout,
        "local_timeout_s": args.call_timeout,
    }
    output_schema: Path | None = getattr(args, "output_schema", None)
    if output_schema is not None:  # ConfigError naming the file: not JSON, or not a valid JSON Schema
        overrides["output_schema"] = load_output_schema(output_schema)
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
    store = ProjectStore.open(settings.results_dir, settings.database_url, lease_s=settings.lease_s)
    try:
        store.check_integrity()  # a damaged store fails now, not after the model calls are paid for
        service = ProjectService(store, settings)
        if resuming:
            record = (
                service.ask(args.project_id, args.question) if args.command == "ask" else service.get(args.project_id)
            )
            project_id, goal, profile = record.project_id, record.goal, record.profile
            researcher = service.resume_researcher(
                record,
                model=args.model,
                offline=args.offline,
                docs=args.docs,
                reviewer=reviewer,
                agent_timeout_s=args.call_timeout,
            )
            if args.command == "rerun":  # after resume_researcher, which may store the project's options
                service.request_rerun(project_id, args.node_id, replan=args.replan, instructions=args.instructions)
            out_dir = settings.results_dir / project_id
            options = RunOptions(out_dir, tuple(_subs(display)), overrides=overrides)
            run = service.resume(researcher, project_id, options)
        else:
            goal, profile = args.goal.strip(), args.profile
            researcher = service.researcher(
                profile,
                engine_settings=service.settings_for(profile, overrides),
                model=args.model,
                reviewer=reviewer,
                docs=args.docs,
            )
            project_id = new_project_id(goal)
            service.create(goal, profile, overrides, project_id=project_id, options=researcher.options())
            out_dir = out_dir_arg or settings.results_dir / project_id
            run = service.execute(researcher, project_id, output_dir=out_dir, subscribers=_subs(display))
        try:
            if display is None:
                result = _run_until_signal(run)
            else:
                verb = {
                    "resume": "Resuming",
                    "rerun": f"Re-running {getattr(args, 'node_id', '')} of",
                    "ask": f"Following up {getattr(args, 'project_id', '')}",
                }.get(args.command, "Researching")
                err.print(
                    f"[bold]{verb}:[/] {escape(goal)}  [dim](profile {profile}, project {project_id})[/]",
                    highlight=False,
                    soft_wrap=True,
                )
                with display:
                    result = _run_until_signal(run)
        except (KeyboardInterrupt, _Terminated) as stop:
            # The engine cancelled every in-flight call and saved the state before we get here.
            terminated = isinstance(stop, _Terminated)
            what = "terminated (SIGTERM)" if terminated else "interrupted"
            if args.json:
                print(json.dumps({"project_id": project_id, "status": "interrupted", "error": what}))
            err.print(
                f"[yellow]{what}[/]: state saved, partial report in {out_dir}\n"
                f"continue with: sentient resume {project_id}",
                soft_wrap=True,
            )
            return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    finally:
        store.close()
    return _report(result, args.json, err)


class _Terminated(Exception):
    """SIGTERM arrived during a run (``timeout``, systemd and containers stop processes so)."""


def _run_until_signal(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``, with SIGTERM cancelling the run as Ctrl-C does (then _Terminated)."""

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        got: list[int] = []

        def on_term() -> None:
            got.append(signal.SIGTERM)
            task.cancel()

        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGTERM, on_term)
        except (NotImplementedError, RuntimeError):  # not the main thread, or Windows
            return await coro
        try:
            return await coro
        except asyncio.CancelledError:
            if got:
                raise _Terminated() from None
            raise
        finally:
            loop.remove_signal_handler(signal.SIGTERM)

    return asyncio.run(main())


def _subs(display: ProgressDisplay | ProgressLog | None) -> list[Subscriber]:
    return [display] if display is not None else []


def _report(result: RunResult, as_json: bool, err: Console) -> int:
    stats = result.stats
    structured = result.report.structured
    if as_json:
        payload = {
            "project_id": result.project_id,
            "status": result.status,
            "error": result.error,
            "output_dir": str(result.output_dir) if result.output_dir else None,
            "stats": asdict(stats),
            "final_answer": result.final_answer,
        }
        if structured is not None:
            payload["structured"] = structured.model_dump(mode="json")
        print(json.dumps(payload))
    else:
        if structured is not None:  # the answer as JSON of the output schema, with its citations and references
            sys.stdout.write(structured.model_dump_json(indent=2) + "\n")
        else:  # the report, exactly as written to report.md (no wrapping, no markup)
            sys.stdout.write("\n" + result.report_markdown)
        sys.stdout.flush()
        cached = stats.agent_calls - stats.model_calls
        summary = (
            f"{stats.nodes} task{'s' * (stats.nodes != 1)}, {stats.agent_calls} agent call{'s' * (stats.agent_calls != 1)}"
            + (f" ({cached} from cache)" if cached else "")
            + f", {stats.input_tokens + stats.output_tokens} tokens, ${stats.cost_usd:.4f}, {stats.elapsed_s:.1f}s"
        )
        colour = {"completed": "green", "completed_with_failures": "yellow"}.get(result.status, "red")
        label = result.status.replace("_", " ")
        err.print(f"[{colour}]{label}[/] · {summary}", highlight=False)
        if result.output_dir:
            err.print(f"report, graph and traces in {result.output_dir}", highlight=False, soft_wrap=True)
    if result.status == "completed_with_failures":
        err.print(
            f"[yellow]completed with failures:[/] {escape(result.error or '')}\n"
            f"run the failed subtasks again with: sentient resume {result.project_id}",
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_PARTIAL
    if result.status != "completed":
        err.print(f"[red]run {result.status}:[/] {escape(result.error or '')}", highlight=False, soft_wrap=True)
        if result.status in ("stopped", "cancelled"):
            err.print(f"continue with: sentient resume {result.project_id}", highlight=False, soft_wrap=True)
        return EXIT_FAILED
    return EXIT_OK


def _configure_logging(verbose: bool) -> None:
    logger.enable("sentient")  # the library is silent until an application enables it
    logger.remove()
    logger.add(sys.stderr, level="INFO" if verbose else "WARNING", format="{time:HH:mm:ss} {level} {message}")
    # agno logs parse and provider problems on stdout; Sentient records them on the node and in
    # the trace, and stdout must carry only the report (or the --json object).
    logging.getLogger("agno").setLevel(logging.CRITICAL)


if __name__ == "__main__":
    raise SystemExit(main())
