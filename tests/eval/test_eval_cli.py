"""``sentient eval`` as a user runs it: the console script in a subprocess, the scripted model, temp dirs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(sys.executable).with_name("sentient")
COMMAND = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "sentient.cli.main"]


def sentient(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SENTIENT_")}
    env.update(SENTIENT_OFFLINE="1", SENTIENT_CACHE_DIR=str(cwd / "cache"), SENTIENT_RESULTS_DIR=str(cwd / "results"))
    return subprocess.run(
        [*COMMAND, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
    )


def test_eval_runs_all_three_systems_prints_the_table_and_a_rerun_does_nothing(dataset: Path, tmp_path: Path) -> None:
    first = sentient(tmp_path, "eval", dataset.name, "--model", "scripted")
    assert first.returncode == 0, first.stderr
    table, paired = (
        [line for line in part.splitlines() if line.startswith("| ")] for part in first.stdout.split("Paired")
    )
    assert [row.split(" | ")[0] for row in table] == ["| system", "| closed-book", "| rag", "| profile:general_agent"]
    assert all(" | 3 | " in row for row in table[1:])  # three dev questions each
    assert [row.split(" | ")[:2] for row in paired[1:]] == [
        ["| profile:general_agent", b] for b in ("closed-book", "rag")
    ]
    assert "[3/3] profile:general_agent" in first.stderr  # one plain progress line per question off a terminal
    assert "9 new answers" in first.stderr

    run_dir = tmp_path / "results" / "eval" / "harbour_qa" / "scripted" / "dev"
    assert (run_dir / "summary.md").read_text() in first.stdout
    for slug in ("closed-book", "rag", "profile-general_agent"):
        records = [json.loads(line) for line in (run_dir / slug / "results.jsonl").read_text().splitlines()]
        assert sorted(r["id"] for r in records) == ["colour", "installer", "pilot"]
        assert all(r["model"] == "scripted" and r["error"] is None and r["model_calls"] >= 1 for r in records)
    assert (run_dir / "profile-general_agent" / "runs" / "eval-pilot" / "graph.json").is_file()

    again = sentient(tmp_path, "eval", dataset.name, "--model", "scripted")
    assert again.returncode == 0, again.stderr
    assert "0 new answers (0 model calls)" in again.stderr
    assert "closed-book: 0 to run, 3 done before" in again.stderr
    assert again.stdout == first.stdout


def test_eval_runs_only_the_questions_named_by_id(dataset: Path, tmp_path: Path) -> None:
    proc = sentient(tmp_path, "eval", dataset.name, "--model", "scripted", "--system", "closed-book", "--id", "pilot")
    assert proc.returncode == 0, proc.stderr
    assert "closed-book: 1 to run, 0 done before" in proc.stderr
    results = tmp_path / "results" / "eval" / "harbour_qa" / "scripted" / "dev" / "closed-book" / "results.jsonl"
    assert [json.loads(line)["id"] for line in results.read_text().splitlines()] == ["pilot"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("missing_qa.jsonl",), "missing_qa.jsonl: dataset file does not exist"),
        (("bad_qa.jsonl",), "bad_qa.jsonl, line 2: not valid JSON"),
        (("harbour_qa.jsonl", "--system", "oracle"), "unknown system 'oracle'"),
        (("harbour_qa.jsonl", "--id", "pilot", "--id", "nowhere"), "no 'nowhere' in the dev split"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(dataset: Path, tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    (tmp_path / "bad_qa.jsonl").write_text('{"id": "a", "question": "Q?", "answers": ["x"]}\n{"id": \n')
    proc = sentient(tmp_path, "eval", *args, "--model", "scripted")
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr
