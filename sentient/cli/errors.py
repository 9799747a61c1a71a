"""The one place where Sentient's errors become the CLI's exit codes and messages."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sentient.exceptions import SentientError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PARTIAL, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 3, 130, 143


def exit_code(exc: SentientError) -> int:
    """The exit code of a command that raised ``exc``.

    Every error raised on purpose is the user's to fix before anything runs (a bad setting, an
    unknown or invalid project id, a project another process runs, one that already completed,
    a report that does not exist yet): 2. A run that fails is a result, not an error (exit 1).
    """
    return EXIT_USAGE


def report_error(err: Console, exc: SentientError) -> int:
    """Print ``exc`` on ``err`` and return its exit code."""
    err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
    return exit_code(exc)
