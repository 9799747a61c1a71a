"""The ``sentient`` CLI under bad input, provider faults and signals: one line and exit 2 before
any model call for bad input, exit 3 for a run with failed subtasks, SIGTERM handled like
Ctrl-C (exit 143), and resume running the project as it was started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.chaos_server import ChaosServer, Fault, chaos_server
from loguru import logger
from test_cli import COMMAND, GOAL, Sandbox, make_sandbox, one_line_error

from sentient import ProfiledSentientAgent
from sentient.api import new_project_id
from sentient.exceptions import DocsFolderError, InvalidGoalError
from sentient.settings import Settings
from sentient.store import Owner, ProjectStatus, ProjectStore
from sentient.tools.docs_search import DocsIndex


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return make_sandbox(tmp_path)


@pytest.fixture
def server() -> Iterator[ChaosServer]:
    with chaos_server(seed=3) as server:
        yield server


def stored(sandbox: Sandbox) -> list[Any]:
    if not (sandbox.results / "sentient.db").exists():
        return []
    with ProjectStore.open(sandbox.results) as store:
        return store.list_projects()


def schema(body: dict[str, Any]) -> str:
    return body["response_format"]["json_schema"]["name"]


# -- bad input: one line, exit 2, nothing stored ------------------------------------------------


def test_out_to_an_existing_file_is_refused_before_anything_runs(sandbox: Sandbox) -> None:
    taken = sandbox.cwd / "report.md"
    taken.write_text("keep me")
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--out", str(taken)))
    assert "exists and is not a folder" in line
    assert taken.read_text() == "keep me"
    assert stored(sandbox) == []

    under_a_file = taken / "sub"
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--out", str(under_a_file)))
    assert "is not a folder" in line
    assert stored(sandbox) == []


def test_out_to_a_folder_that_is_not_empty_is_refused_unless_forced(sandbox: Sandbox) -> None:
    taken = sandbox.cwd / "earlier"
    taken.mkdir()
    (taken / "report.md").write_text("keep me")
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--out", str(taken)))
    assert "is not empty" in line and "--force" in line
    assert (taken / "report.md").read_text() == "keep me"
    assert stored(sandbox) == []

    proc = sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--out", str(taken), "--force", "--json")
    assert proc.returncode == 0, proc.stderr
    assert (taken / "report.md").read_text() != "keep me"


def test_out_to_a_projects_folder_is_refused_even_when_empty(sandbox: Sandbox) -> None:
    assert sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--json").returncode == 0
    [project] = stored(sandbox)
    folder = sandbox.results / project.project_id
    report = (folder / "report.md").read_text()
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--out", str(folder)))
    assert f"is a project's folder in {sandbox.results}" in line and "--force" in line
    assert (folder / "report.md").read_text() == report

    emptied = sandbox.results / "emptied"
    emptied.mkdir()
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--out", str(emptied)))
    assert "is a project's folder in" in line
    assert len(stored(sandbox)) == 1


@pytest.mark.parametrize("target", ["/proc/sentient-out", "/proc/self", "/sys/sentient-out"])
def test_out_on_a_virtual_filesystem_is_refused_before_the_run(sandbox: Sandbox, target: str) -> None:
    if not Path(target).parent.is_dir():
        pytest.skip(f"no {Path(target).parent} here")
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--out", target))
    assert "filesystem, which holds the kernel's files" in line
    assert stored(sandbox) == []


def test_a_bad_sentient_variable_is_one_line_naming_it_without_its_value(sandbox: Sandbox) -> None:
    line = one_line_error(sandbox.run("run", GOAL, SENTIENT_MODEL_THREADS="0"))
    assert "SENTIENT_MODEL_THREADS" in line and "greater than or equal to 1" in line
    line = one_line_error(sandbox.run("profiles", SENTIENT_LEASE_S="hunter2"))
    assert "SENTIENT_LEASE_S" in line and "hunter2" not in line
    assert stored(sandbox) == []


def test_a_goal_that_is_not_utf8_is_one_line(sandbox: Sandbox) -> None:
    proc = subprocess.run(
        [*map(os.fsencode, COMMAND), b"run", b"caf\xe9 \xff lists", b"--docs", os.fsencode(sandbox.docs)],
        cwd=sandbox.cwd,
        env=sandbox.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    text = subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    line = one_line_error(text)
    assert "not valid text" in line and "UTF-8" in line
    assert stored(sandbox) == []


def test_a_goal_of_invisible_characters_is_one_line(sandbox: Sandbox) -> None:
    line = one_line_error(sandbox.run("run", "\u200b\u200d\u202e\u202c", "--docs", str(sandbox.docs)))
    assert line.endswith("the goal has no visible text: describe what to research in words.")
    assert stored(sandbox) == []


def test_the_api_refuses_a_lone_surrogate_with_a_value_error(settings: Settings) -> None:
    agent = ProfiledSentientAgent.create_with_profile("general_agent", settings=settings, model="scripted")
    with pytest.raises(InvalidGoalError, match="lone surrogate") as caught:
        agent.run("lists \udcff tuples", write_files=False)
    assert isinstance(caught.value, ValueError)


def test_an_empty_docs_folder_is_refused_before_a_project_exists(sandbox: Sandbox) -> None:
    empty = sandbox.cwd / "empty"
    empty.mkdir()
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(empty)))
    assert "has no .md, .txt, .rst, .html or .py files" in line
    assert stored(sandbox) == [], "no junk project is left behind"


def test_a_document_whose_name_is_not_utf8_is_skipped_with_a_warning_and_the_run_completes(sandbox: Sandbox) -> None:
    with open(os.fsencode(sandbox.docs) + b"/caf\xe9.md", "wb") as f:
        f.write(b"# C\n\nGenerators yield.\n")
    proc = sandbox.run("run", "What is a generator?", "--docs", str(sandbox.docs), "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"skipping {sandbox.docs}/caf\\xe9.md: its name is not valid UTF-8" in proc.stderr
    assert json.loads(proc.stdout)["status"] == "completed"


def test_files_over_2_mb_are_named_and_a_folder_of_only_those_says_so(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.mkdir()
    (big / "huge.txt").write_text("x" * (2 * 1024 * 1024 + 1))
    with pytest.raises(DocsFolderError, match=r"all over the 2 MB limit \(huge.txt\)"):
        DocsIndex.check_folder(big)

    (big / "small.md").write_text("# Small\n\nA small file.\n")
    warnings: list[str] = []
    sink = logger.add(lambda m: warnings.append(str(m)), level="WARNING", format="{message}")
    try:
        _, files = DocsIndex.check_folder(big)
    finally:
        logger.remove(sink)
    assert [f.name for f in files] == ["small.md"]
    assert any("over 2 MB: huge.txt" in w for w in warnings), warnings


def test_export_to_a_bad_path_is_one_line(sandbox: Sandbox) -> None:
    assert sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--json").returncode == 0
    [project] = stored(sandbox)
    under_a_file = sandbox.docs / "lists.md" / "report.md"
    line = one_line_error(sandbox.run("projects", "export", project.project_id, "--out", str(under_a_file)))
    assert "lists.md' is not a folder" in line
    line = one_line_error(sandbox.run("projects", "export", project.project_id, "--out", str(sandbox.docs)))
    assert "is a folder" in line


def test_a_damaged_store_is_one_line_for_show_export_and_run(sandbox: Sandbox) -> None:
    assert sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--json").returncode == 0
    [project] = stored(sandbox)
    db = sandbox.results / "sentient.db"
    with open(db, "r+b") as f:  # page 5 is the first page of the nodes table
        f.seek(4 * 4096)
        f.write(b"\x0d\x00\x00\xff\xff\xff\xff" + b"\xaa" * 200)
    for args in (
        ("projects", "show", project.project_id),
        ("projects", "export", project.project_id),
        ("run", GOAL, "--docs", str(sandbox.docs)),
    ):
        line = one_line_error(sandbox.run(*args))
        assert "is damaged" in line and "restore it from a backup" in line, args


# -- provider faults -------------------------------------------------------------------------------


def test_a_run_with_a_failed_subtask_exits_3_lists_it_and_resume_completes_it(
    sandbox: Sandbox, server: ChaosServer
) -> None:
    def first_executor(body: dict[str, Any]) -> bool:
        task = body["messages"][-1]["content"].split("## Your task", 1)[-1]
        return schema(body) == "SourcedAnswer" and "Synthetic first " in task  # the question's first lookup

    server.fail_when(first_executor, Fault.SCHEMA)  # all three of its answers break the schema
    proc = sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--model", server.model())
    assert proc.returncode == 3, proc.stderr
    assert "completed with failures" in proc.stderr and "Traceback" not in proc.stderr
    not_covered = proc.stdout.split("## Not covered", 1)[1]
    assert "- root.0: Synthetic first " in not_covered
    [project] = stored(sandbox)
    assert project.status is ProjectStatus.COMPLETED and project.failed_nodes == 1
    listed = sandbox.run("projects", "list", COLUMNS="200")
    assert "completed with failures" in listed.stdout

    server.rules.clear()
    before = len(server.requests)
    resumed = sandbox.run("resume", project.project_id, "--json")  # no --model: the project's own
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "completed"
    # The failed step and the verifier's reading of its passages, nothing else: the model's own
    # answer, asked before the plan, is not asked again, and the second lookup, done, is the answer.
    assert [schema(b) for b in server.requests[before:]] == ["SourcedAnswer", "Choice"]


def test_resume_uses_the_stored_model_unless_overridden_and_records_the_override(
    sandbox: Sandbox, server: ChaosServer
) -> None:
    proc = sandbox.run(
        "run", GOAL, "--docs", str(sandbox.docs), "--model", server.model(), "--max-llm-calls", "1", "--json"
    )
    assert proc.returncode == 1 and json.loads(proc.stdout)["status"] == "stopped"
    [project] = stored(sandbox)
    assert project.options["model"] == server.model()
    assert project.options["docs"] == str(sandbox.docs.resolve())
    assert project.settings["agent_timeout_s"] == 120, "the per-attempt timeout default"

    again = sandbox.run("resume", project.project_id, "--max-llm-calls", "2", "--json")
    assert again.returncode == 1, again.stderr
    assert len(server.requests) == 2, "the stored model answered, within the project's cumulative budget"

    done = sandbox.run("resume", project.project_id, "--model", "scripted", "--max-llm-calls", "50", "--json")
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 2, "the explicit --model was used"
    [project] = stored(sandbox)
    [override] = project.options["overrides"]
    assert override["model"] == "scripted"


def test_call_timeout_is_an_engine_setting_and_is_checked(sandbox: Sandbox) -> None:
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--call-timeout", "0"))
    assert "agent_timeout_s" in line
    proc = sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--call-timeout", "7", "--json")
    assert proc.returncode == 0, proc.stderr
    [project] = stored(sandbox)
    assert project.settings["agent_timeout_s"] == 7


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("inf", "finite number"),
        ("nan", "finite number"),
        ("-1", "greater than 0"),
        ("1e9", "less than or equal to 3600"),
    ],
)
def test_call_timeout_must_be_a_finite_bound(sandbox: Sandbox, value: str, reason: str) -> None:
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--call-timeout", value))
    assert "agent_timeout_s" in line and reason in line
    assert stored(sandbox) == []


def test_an_empty_store_file_is_refused_naming_it(sandbox: Sandbox) -> None:
    sandbox.results.mkdir()
    db = sandbox.results / "sentient.db"
    db.touch()
    line = one_line_error(sandbox.run("run", GOAL, "--docs", str(sandbox.docs)))
    assert f"the project store {db} is an empty file (0 bytes)" in line
    assert db.stat().st_size == 0, "left as it was"


# -- signals and owners -------------------------------------------------------------------------


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["TERM", "INT"])
def test_a_signal_saves_the_state_prints_the_json_object_and_exits_with_its_code(
    sandbox: Sandbox, server: ChaosServer, signum: int, code: int
) -> None:
    server.fail_when(lambda body: schema(body) == "ExecutionOutput", Fault.HANG)
    process = subprocess.Popen(
        [*COMMAND, "run", GOAL, "--docs", str(sandbox.docs), "--model", server.model(), "--json"],
        cwd=sandbox.cwd,
        env=sandbox.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C in a terminal: SIGINT at its default, even when these tests run as a background job
        # (a shell starts those with SIGINT ignored, and the ignored disposition is inherited).
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(schema(b) == "ExecutionOutput" for b in list(server.requests)):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no executor request within 60 s"
            time.sleep(0.05)
        process.send_signal(signum)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == code, err
    assert "Traceback" not in err
    assert "state saved" in err and "sentient resume" in err
    payload = json.loads(out)
    assert payload["status"] == "interrupted"
    [project] = stored(sandbox)
    assert project.status is not ProjectStatus.RUNNING, "the run recorded how it ended"
    graph = ProjectStore.open(sandbox.results).load_graph(project.project_id)
    assert not [n for n in graph if n.status.value == "EXECUTING"], "no node is left EXECUTING"


def test_a_dead_owner_shows_interrupted_ids_stay_whole_and_control_characters_are_escaped(
    sandbox: Sandbox,
) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    project_id = new_project_id("How do Python lists differ from tuples and sets, in practice?")
    assert len(project_id) == 63, "the longest id Sentient makes"
    with ProjectStore.open(sandbox.results) as store:
        store.create_project(project_id, "\x1b[31mred\x1b[0m goal\x07", "general_agent", {})
        store.claim(project_id, Owner.local(dead.pid))  # as if the process had been killed while running it
    listed = sandbox.run("projects", "list", COLUMNS="80")
    assert listed.returncode == 0, listed.stderr
    assert project_id in listed.stdout, listed.stdout
    assert "interrupted" in listed.stdout
    shown = sandbox.run("projects", "show", project_id, COLUMNS="80")
    assert "interrupted" in shown.stdout
    for out in (shown.stdout, sandbox.run("projects", "list", COLUMNS="200").stdout):
        assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[31mred\\x1b[0m goal\\x07" in shown.stdout


# -- re-running one task ---------------------------------------------------------------------------


def test_rerun_runs_one_task_again_with_instructions_and_refuses_the_root_in_one_line(sandbox: Sandbox) -> None:
    from test_cli import REPORT_GOAL

    assert sandbox.run("run", REPORT_GOAL, "--docs", str(sandbox.docs), "--json").returncode == 0
    [project] = stored(sandbox)
    with ProjectStore.open(sandbox.results) as store:
        leaf = next(n for n in store.load_graph(project.project_id) if n.parent_id and not n.children)
        before = len(store.calls(project.project_id))

    proc = sandbox.run("rerun", project.project_id, leaf.task_id, "--instructions", "Quote the tuples page.", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "completed"
    with ProjectStore.open(sandbox.results) as store:
        new = store.calls(project.project_id)[before:]
        graph = store.load_graph(project.project_id)
    asked = {c["task_id"] for c in new}
    assert leaf.task_id in asked and asked <= {leaf.task_id, *(a.task_id for a in graph.ancestors(leaf.task_id))}
    executor = [c for c in new if c["task_id"] == leaf.task_id and c["role"] == "executor"]
    assert executor and all("Quote the tuples page." in c["prompt"] for c in executor)

    line = one_line_error(sandbox.run("rerun", project.project_id, "root", "--replan"))
    assert "the root is the whole project" in line
    line = one_line_error(sandbox.run("rerun", project.project_id, "root.77"))
    assert "root.77" in line
