"""Sentient is a quiet library: nothing is logged until the application enables it, as the CLI does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_SCRIPT = Path(sys.executable).with_name("sentient")
COMMAND = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "sentient.cli.main"]

API_RUN = """
import sys
from pathlib import Path
from loguru import logger
from sentient import ProfiledSentientAgent, Settings

base = Path(sys.argv[1])
settings = Settings(model="scripted", cache_dir=base / "cache", results_dir=base / "results", offline=True)
agent = ProfiledSentientAgent.create_with_profile("general_agent", settings=settings, docs=base / "docs")
print(agent.run("What is a list?").status)
print("-- enabled --", file=sys.stderr, flush=True)
logger.enable("sentient")  # the application's choice: now the library logs to loguru's default sink
ProfiledSentientAgent.create_with_profile("general_agent", settings=settings, docs=base / "docs").run("Again?")
"""


def _docs(base: Path) -> None:
    (base / "docs").mkdir()
    (base / "docs" / "lists.md").write_text("# Lists\n\nA list is a mutable sequence.\n")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SENTIENT_")}


def test_the_python_api_logs_nothing_until_the_application_enables_it(tmp_path: Path) -> None:
    _docs(tmp_path)

    done = subprocess.run(
        [sys.executable, "-c", API_RUN, str(tmp_path)], env=_env(), capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "completed"
    quiet, _, enabled = done.stderr.partition("-- enabled --")
    assert quiet.strip() == "", "nothing before the application enables it"
    assert "| INFO     | sentient.tools.docs_search" in enabled and "indexed 1 passages" in enabled


def test_the_cli_enables_the_librarys_logging(tmp_path: Path) -> None:
    _docs(tmp_path)
    env = {**_env(), "SENTIENT_OFFLINE": "1", "SENTIENT_MODEL": "scripted", "SENTIENT_RESULTS_DIR": "out"}

    done = subprocess.run(
        [*COMMAND, "-v", "run", "What is a list?", "--docs", "docs", "--json"],
        cwd=tmp_path,
        env={**env, "SENTIENT_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    assert "INFO indexed 1 passages from 1 files" in done.stderr
