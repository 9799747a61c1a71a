"""The domain's errors become exit codes in one place (``sentient.cli.errors``), and the CLI exits with them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sentient.cli.errors import EXIT_USAGE, exit_code
from sentient.exceptions import ConfigError, SentientError
from sentient.projects import (
    NoReportError,
    ProjectCompletedError,
    ProjectNotRunningError,
    ProjectRunningError,
)
from sentient.store import InvalidProjectIdError, ProjectBusyError, ProjectNotFoundError, ProjectStore

_SCRIPT = Path(sys.executable).with_name("sentient")
COMMAND = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "sentient.cli.main"]


@pytest.mark.parametrize(
    "error",
    [
        ConfigError("bad"),
        ProjectNotFoundError("p"),
        InvalidProjectIdError("../p"),
        ProjectBusyError("p", 1),
        ProjectRunningError("p"),
        ProjectNotRunningError("p"),
        ProjectCompletedError("p"),
        NoReportError("p"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_every_domain_error_is_a_usage_exit(error: SentientError) -> None:
    assert exit_code(error) == EXIT_USAGE


def _sentient(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SENTIENT_")}
    env.update(
        SENTIENT_OFFLINE="1",
        SENTIENT_MODEL="scripted",
        SENTIENT_CACHE_DIR=str(tmp_path / "cache"),
        SENTIENT_RESULTS_DIR=str(tmp_path / "out"),
    )
    return subprocess.run(
        [*COMMAND, *args], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )


def test_resuming_an_unknown_or_completed_project_exits_2_with_the_reason(tmp_path: Path) -> None:
    with ProjectStore.open(tmp_path / "out") as store:
        store.create_project("done", "What is asyncio?", "general_agent", {})
        store.set_status("done", "completed")

    unknown = _sentient(tmp_path, "resume", "nope")
    completed = _sentient(tmp_path, "resume", "done")

    assert unknown.returncode == 2 and "no project 'nope'" in unknown.stderr
    assert completed.returncode == 2 and "already completed" in completed.stderr
