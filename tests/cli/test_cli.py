"""The real ``sentient`` console script in a subprocess: dry-run model, temp dirs, a tiny docs folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sentient.resources import agent_configs_dir
from sentient.store import ProjectStore

_SCRIPT = Path(sys.executable).with_name("sentient")
COMMAND = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "sentient.cli.main"]
GOAL = "How do Python lists differ from tuples?"
# Asked for a report, not a question: planned at once, so its plan is reviewed. (A question is
# answered first, and a rejected plan then leaves that answer standing.)
REPORT_GOAL = "Compare Python lists and tuples."


@dataclass(frozen=True)
class Sandbox:
    """A working directory with a docs folder, and the environment the CLI runs under."""

    cwd: Path
    docs: Path
    results: Path
    env: dict[str, str]

    def run(self, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        """``sentient ARGS``; ``stdin`` is its input (closed when None), ``env`` adds variables."""
        return subprocess.run(
            [*COMMAND, *args],
            cwd=self.cwd,
            env={**self.env, **env},
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            capture_output=True,
            text=True,
            timeout=60,
        )


def make_sandbox(base: Path) -> Sandbox:
    docs = base / "docs"
    docs.mkdir()
    (docs / "lists.md").write_text("# Lists\n\nA list is a mutable sequence; append adds an item.\n")
    (docs / "tuples.md").write_text("# Tuples\n\nA tuple is an immutable sequence and can be a dict key.\n")
    (docs / "notes.txt").write_text("Both lists and tuples support indexing and slicing.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SENTIENT_")}
    env.update(
        SENTIENT_OFFLINE="1",  # tests never reach the internet: web search refuses at once
        SENTIENT_MODEL="scripted",
        SENTIENT_CACHE_DIR=str(base / "cache"),
        SENTIENT_RESULTS_DIR=str(base / "out"),
    )
    return Sandbox(cwd=base, docs=docs, results=base / "out", env=env)


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return make_sandbox(tmp_path)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a refused command (exit 2, nothing on stdout, no traceback)."""
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected a one-line error, got: {proc.stderr!r}"
    assert lines[0].startswith("error: ")
    return lines[0]


def only_json_object(stdout: str) -> dict[str, Any]:
    lines = stdout.strip().splitlines()
    assert len(lines) == 1, f"expected exactly one JSON line on stdout, got: {stdout!r}"
    payload = json.loads(lines[0])
    assert isinstance(payload, dict)
    return payload


# -- a successful run -------------------------------------------------------------------------


@dataclass(frozen=True)
class JsonRun:
    sandbox: Sandbox
    proc: subprocess.CompletedProcess[str]
    payload: dict[str, Any]


@pytest.fixture(scope="module")
def json_run(tmp_path_factory: pytest.TempPathFactory) -> JsonRun:
    """One ``sentient run GOAL --docs DOCS --json`` shared by the tests that only read its results."""
    box = make_sandbox(tmp_path_factory.mktemp("cli-json"))
    proc = box.run("run", GOAL, "--docs", str(box.docs), "--json")
    assert proc.returncode == 0, proc.stderr
    return JsonRun(box, proc, only_json_object(proc.stdout))


def test_json_run_exits_0_and_prints_one_object_with_id_status_and_stats(json_run: JsonRun) -> None:
    payload = json_run.payload
    assert payload["status"] == "completed"
    assert payload["error"] is None
    assert re.fullmatch(r"\d{8}-\d{6}-how-do-python-lists-differ-from-tuples-[0-9a-f]{6}", payload["project_id"])
    stats = payload["stats"]
    # general_agent answers a question from one search; the verifier, reading the named passage
    # without the answer, finds the same one, and shown it, judges that the passage supports it.
    assert stats["nodes"] == 1
    assert stats["agent_calls"] == 3
    assert stats["input_tokens"] > 0 and stats["output_tokens"] > 0
    assert stats["failed_nodes"] == 0
    assert stats["elapsed_s"] > 0
    assert payload["final_answer"]
    assert "Traceback" not in json_run.proc.stderr


def test_run_writes_report_graph_and_a_trace_per_node(json_run: JsonRun) -> None:
    payload = json_run.payload
    out = json_run.sandbox.results / payload["project_id"]
    assert payload["output_dir"] == str(out)
    assert payload["final_answer"] in (out / "report.md").read_text()
    graph = json.loads((out / "graph.json").read_text())
    ids = [node["task_id"] for node in graph["nodes"]]
    assert graph["root_id"] == "root"
    assert len(ids) == payload["stats"]["nodes"]
    assert sorted(p.name for p in (out / "traces").iterdir()) == sorted(f"{i}.json" for i in ids)
    calls = [c for i in ids for c in json.loads((out / "traces" / f"{i}.json").read_text())["calls"]]
    assert len(calls) == payload["stats"]["agent_calls"]
    assert sum(c["input_tokens"] for c in calls) == payload["stats"]["input_tokens"]


def test_trace_holds_prompt_context_response_tokens_and_latency(json_run: JsonRun) -> None:
    out = json_run.sandbox.results / json_run.payload["project_id"]
    trace = json.loads((out / "traces" / "root.json").read_text())
    call, reading, judging = trace["calls"]
    assert reading["role"] == judging["role"] == "verifier"
    assert call["role"] == "executor"
    assert call["agent"] == "search_executor"
    assert GOAL in call["prompt"]
    assert call["context"]["sections"][0] == "Overall goal"
    # The search really ran over the --docs folder: its files are the sources offered.
    assert call["context"]["sources"]
    # Named relative to it, never by a path of this machine.
    sources = call["context"]["sources"]
    assert all((json_run.sandbox.docs / ref).is_file() and not Path(ref).is_absolute() for ref in sources)
    assert trace["node"]["result"].startswith(json.loads(call["response"])["answer"])  # then its citation
    assert call["input_tokens"] > 0 and call["output_tokens"] > 0
    assert call["latency_s"] >= 0


def test_out_puts_the_files_in_the_named_folder(sandbox: Sandbox) -> None:
    out = sandbox.cwd / "my-report"
    proc = sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--json", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert only_json_object(proc.stdout)["output_dir"] == str(out)
    assert {p.name for p in out.iterdir()} == {"report.md", "report.html", "graph.json", "traces"}
    assert not [p for p in sandbox.results.iterdir() if p.is_dir()], "only the project store is in results"


def test_plain_run_prints_the_report_on_stdout_and_the_summary_on_stderr(sandbox: Sandbox) -> None:
    proc = sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--max-depth", "1")
    assert proc.returncode == 0, proc.stderr
    [project] = [p for p in sandbox.results.iterdir() if p.is_dir()]
    assert proc.stdout.strip() == (project / "report.md").read_text().strip()
    assert "completed · 1 task, 3 agent calls" in proc.stderr  # as in the JSON run above
    assert str(project) in proc.stderr


# -- refused input: exit 2 with one line ----------------------------------------------------------


def test_empty_goal_is_refused_with_one_line(sandbox: Sandbox) -> None:
    line = one_line_error(sandbox.run("run", "   "))
    assert "the goal is empty" in line
    assert not sandbox.results.exists()


def test_a_goal_of_separator_characters_is_refused_with_one_line(sandbox: Sandbox) -> None:
    line = one_line_error(sandbox.run("run", "\x1c\x1d\x1e\x1f"))
    assert "control character U+001C" in line
    assert not sandbox.results.exists()


def test_unknown_profile_is_refused_listing_the_valid_profiles(sandbox: Sandbox) -> None:
    line = one_line_error(sandbox.run("run", GOAL, "--profile", "nope", "--docs", str(sandbox.docs)))
    assert "unknown profile 'nope'" in line
    assert "deep_research_agent, general_agent" in line


def test_missing_docs_folder_is_refused(sandbox: Sandbox) -> None:
    missing = sandbox.cwd / "no-such-docs"
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(missing)))
    assert str(missing) in line


def test_out_of_range_max_depth_is_refused_naming_the_setting(sandbox: Sandbox) -> None:
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--max-depth", "99"))
    assert "max_depth" in line
    assert "99" in line


def test_report_length_writes_a_report_of_sections_whatever_the_goal(sandbox: Sandbox) -> None:
    proc = sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--report-length", "short", "--json")
    assert proc.returncode == 0, proc.stderr
    payload = only_json_object(proc.stdout)
    answer = payload["final_answer"]
    assert answer.startswith("# ") and answer.count("\n## ") >= 2  # a title, then the outline's sections
    report = Path(payload["output_dir"]) / "report.md"
    assert report.read_text().startswith(answer.split("\n")[0])


@pytest.mark.parametrize("size", ["huge", "50"])
def test_a_bad_report_length_is_refused_naming_the_setting(sandbox: Sandbox, size: str) -> None:
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--report-length", size))
    assert "report_length" in line and "short, standard, long or a number of words" in line


def test_language_is_stored_with_the_project_and_every_prompt_asks_for_it(sandbox: Sandbox) -> None:
    proc = sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--language", "de", "--json")
    assert proc.returncode == 0, proc.stderr
    out = Path(only_json_object(proc.stdout)["output_dir"])
    calls = json.loads((out / "traces" / "root.json").read_text())["calls"]
    assert calls and all("Write all of your text in German (Deutsch)" in call["prompt"] for call in calls)
    assert ProjectStore.open(sandbox.results).get_project(out.name).settings["language"] == "de"


def test_a_bad_language_is_refused_naming_the_setting(sandbox: Sandbox) -> None:
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--language", "klingon"))
    assert "language" in line and "'klingon' is not a language tag" in line


def test_unknown_model_is_refused_naming_the_variable(sandbox: Sandbox) -> None:
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), SENTIENT_MODEL="gpt-99"))
    assert "cannot use model 'gpt-99': unknown provider" in line
    assert "SENTIENT_MODEL" in line


def test_broken_config_is_refused_naming_file_line_and_field(sandbox: Sandbox) -> None:
    config = sandbox.cwd / "configs"
    (config / "profiles").mkdir(parents=True)
    (config / "agents.yaml").write_text((agent_configs_dir() / "agents.yaml").read_text())
    profile = (agent_configs_dir() / "profiles" / "general_agent.yaml").read_text()
    (config / "profiles" / "general_agent.yaml").write_text(profile.replace("  max_depth: 1\n", "  max_dept: 1\n"))
    proc = sandbox.run("run", GOAL, "--docs", str(sandbox.docs), SENTIENT_CONFIG_DIR=str(config))
    line = one_line_error(proc)
    assert str(config / "profiles" / "general_agent.yaml") in line
    assert "settings.max_dept" in line
    assert "(line " in line


def test_missing_goal_argument_is_a_usage_error(sandbox: Sandbox) -> None:
    proc = sandbox.run("run")
    assert proc.returncode == 2
    assert "usage:" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- review in the terminal -------------------------------------------------------------------------


def test_review_answered_approve_completes_the_run(sandbox: Sandbox) -> None:
    proc = sandbox.run("run", REPORT_GOAL, "--docs", str(sandbox.docs), "--review", stdin="a\n")
    assert proc.returncode == 0, proc.stderr
    assert "Plan for root (round 1)" in proc.stderr
    assert "[a]pprove" in proc.stderr
    assert "[a]pprove" not in proc.stdout, "prompts must not mix with the report on stdout"
    assert "completed" in proc.stderr


def test_review_answered_reject_cancels_the_run_with_the_reason(sandbox: Sandbox) -> None:
    proc = sandbox.run("run", REPORT_GOAL, "--docs", str(sandbox.docs), "--review", stdin="r\ntoo vague\n")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    *_, reason, hint = proc.stderr.strip().splitlines()
    assert reason == "run cancelled: plan rejected by reviewer: too vague"
    assert hint.startswith("continue with: sentient resume ")
    [project] = [p for p in sandbox.results.iterdir() if p.is_dir()]
    report = (project / "report.md").read_text()
    assert "Incomplete run" in report
    assert "too vague" in report
    assert proc.stdout.strip() == report.strip()


def test_review_with_json_keeps_stdout_to_the_one_object(sandbox: Sandbox) -> None:
    proc = sandbox.run("run", REPORT_GOAL, "--docs", str(sandbox.docs), "--review", "--json", stdin="r\nout of scope\n")
    assert proc.returncode == 1
    payload = only_json_object(proc.stdout)
    assert payload["status"] == "cancelled"
    assert payload["error"] == "plan rejected by reviewer: out of scope"
    assert payload["final_answer"] is None
    # Piped answers are not echoed, so the last prompt and the reason share a line.
    assert proc.stderr.strip().splitlines()[-2].endswith("run cancelled: plan rejected by reviewer: out of scope")


def test_review_without_any_input_rejects_instead_of_hanging(sandbox: Sandbox) -> None:
    proc = sandbox.run("run", REPORT_GOAL, "--docs", str(sandbox.docs), "--review", "--json")
    assert proc.returncode == 1
    assert "no reviewer input" in only_json_object(proc.stdout)["error"]


# -- profiles -------------------------------------------------------------------------------------


def test_profiles_lists_both_profiles_with_their_descriptions(sandbox: Sandbox) -> None:
    proc = sandbox.run("profiles")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["deep_research_agent", "general_agent"]
    assert "Multi-level research" in lines[0]


# -- structured output ----------------------------------------------------------------------------

ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def test_output_schema_prints_the_answer_as_json_of_the_schema(sandbox: Sandbox) -> None:
    schema = sandbox.cwd / "schema.json"
    schema.write_text(json.dumps(ANSWER_SCHEMA))

    proc = sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--output-schema", str(schema))

    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)
    assert set(printed) == {"value", "citations", "references"}
    assert isinstance(printed["value"]["answer"], str) and printed["value"]["answer"]
    [project] = [p for p in sandbox.results.iterdir() if p.is_dir()]
    store = ProjectStore.open(sandbox.results)
    assert store.get_report_data(project.name)["structured"] == printed
    assert store.get_project(project.name).settings["output_schema"] == ANSWER_SCHEMA


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"type": "objekt"}', "not a valid JSON Schema: 'objekt' is not valid under any of the given schemas"),
        ('{"type": "object",}', "the output schema is not JSON: "),
        ("[1, 2]", "a JSON Schema must be a JSON object, not an array"),
    ],
)
def test_an_output_schema_that_is_not_valid_is_refused_naming_the_file(
    sandbox: Sandbox, text: str, problem: str
) -> None:
    schema = sandbox.cwd / "bad-schema.json"
    schema.write_text(text)

    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--output-schema", str(schema)))

    assert f"error: {schema}: " in line and problem in line
    assert not sandbox.results.exists()  # refused before the store, let alone a model, was touched
