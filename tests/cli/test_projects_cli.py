"""``sentient projects``: list, show, export and delete, run against a temp store."""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import docx
import pypdf
import pytest
from rich.console import Console

from sentient.cli.projects import add_projects_parser, run_projects
from sentient.context.knowledge import KnowledgeStore
from sentient.events import AgentCallFinished, EventBus, NodeCreated, NodeStatusChanged, snapshot
from sentient.graph.node import NodeType, Source, TaskNode, TaskType
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.settings import Settings
from sentient.store import Owner, ProjectStore, StoreWriter

S = TaskStatus
GOAL = "How do Python lists differ from tuples, and when should each be used in practice?"
REPORT = "# Lists and tuples\n\nLists are mutable [1].\n\n## References\n\n1. `lists.md`\n"


class Cli:
    """Runs ``sentient projects ...`` in-process and keeps what it printed."""

    def __init__(self, results: Path) -> None:
        self.settings = Settings(results_dir=results, cache_dir=results / "cache")
        self.terminal = True  # False: stdout is a pipe
        parser = argparse.ArgumentParser(prog="sentient")
        add_projects_parser(parser.add_subparsers(dest="command", required=True))
        self.parser = parser
        self.out = ""
        self.err = ""

    def __call__(self, *argv: str) -> int:
        args = self.parser.parse_args(["projects", *argv])
        out, err = io.StringIO(), io.StringIO()
        code = run_projects(
            args,
            self.settings,
            out=Console(file=out, width=200, color_system=None, force_terminal=self.terminal),
            err=Console(file=err, width=200, color_system=None),
        )
        self.out, self.err = out.getvalue(), err.getvalue()
        return code

    def store(self) -> ProjectStore:
        return ProjectStore.open(self.settings.results_dir)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path / "results")


def _move(bus: EventBus, node: TaskNode, *targets: TaskStatus, error: str | None = None) -> None:
    for target in targets:
        old = node.move_to(target)
        if error and target is S.FAILED:
            node.error = error
        bus.publish(NodeStatusChanged(snapshot(node), old, node.history[-1].at, node.error))


def _announce(bus: EventBus, node: TaskNode) -> None:
    bus.publish(NodeCreated(snapshot(node)))


def _stored_run(cli: Cli, project_id: str = "lists-tuples", *, report: bool = True) -> None:
    """A finished project: root planned two subtasks, one done with a source, one failed."""
    from sentient.graph.plan import SubTask

    with cli.store() as store:
        store.create_project(project_id, GOAL, "general_agent", {"max_depth": 1})
        graph = TaskGraph()
        root = graph.add_root(GOAL, TaskType.WRITE, NodeType.PLAN)
        bus = EventBus()
        with StoreWriter(store, project_id) as writer:
            bus.subscribe(writer)
            bus.subscribe(KnowledgeStore(store, project_id))
            _announce(bus, root)
            _move(bus, root, S.PLANNING, S.ATOMIZATION)
            subs = [SubTask(goal="Lists", task_type=TaskType.SEARCH), SubTask(goal="Tuples", task_type=TaskType.SEARCH)]
            done, failed = graph.add_children("root", subs, [NodeType.EXECUTE, NodeType.EXECUTE])
            for child in (done, failed):
                _announce(bus, child)
            _move(bus, root, S.PLAN_DONE)
            done.agent_calls, done.input_tokens, done.output_tokens, done.cost_usd = 1, 100, 10, 0.25
            bus.publish(
                AgentCallFinished(
                    "root.0",
                    "executor",
                    "search",
                    "m",
                    "p",
                    {},
                    "r",
                    None,
                    1,
                    100,
                    10,
                    time.time(),
                    0.1,
                    0.25,
                    node=snapshot(done),
                )
            )
            done.result, done.sources = "Lists are mutable [1].", [Source(ref="lists.md")]
            _move(bus, done, S.EXECUTING, S.DONE)
            _move(bus, failed, S.EXECUTING, S.FAILED, error="model error: boom")
            root.result, root.sources = "Lists are mutable [1].", [Source(ref="lists.md")]
            _move(bus, root, S.AGGREGATING, S.DONE)
        if report:
            store.set_report(project_id, REPORT)
        store.set_status(project_id, "completed")
        store.add_review(
            {
                "review_id": f"rev-{project_id}",
                "project_id": project_id,
                "task_id": "root",
                "round": 1,
                "goal": GOAL,
                "layer": 0,
                "plan": {"subtasks": []},
            }
        )
    folder = cli.settings.results_dir / project_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.md").write_text(REPORT)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# -- list ----------------------------------------------------------------------------------


def test_list_shows_each_project_newest_first(cli: Cli) -> None:
    _stored_run(cli, "older")
    _stored_run(cli, "newer")

    assert cli("list") == 0

    lines = cli.out.splitlines()
    assert lines[0].split() == ["ID", "Status", "Goal", "Nodes", "Calls", "Cost", "Age"]
    assert lines[1].split()[:2] == ["newer", "completed"] and lines[2].split()[:2] == ["older", "completed"]
    assert "How do Python lists differ" in lines[1] and GOAL not in lines[1]  # shortened
    assert lines[1].split()[-4:-1] == ["3", "1", "$0.2500"]


def test_list_into_a_pipe_is_tab_separated_with_every_column_and_the_whole_goal(cli: Cli) -> None:
    _stored_run(cli, "older")
    _stored_run(cli, "newer")
    cli.terminal = False

    assert cli("list") == 0

    rows = [line.split("\t") for line in cli.out.splitlines()]
    assert rows[0] == ["ID", "Status", "Goal", "Nodes", "Calls", "Cost", "Age"]
    assert [row[:5] for row in rows[1:]] == [
        ["newer", "completed with failures", GOAL, "3", "1"],
        ["older", "completed with failures", GOAL, "3", "1"],
    ]


def test_list_json_is_one_array_of_the_projects(cli: Cli) -> None:
    assert cli("list", "--json") == 0
    assert json.loads(cli.out) == []

    _stored_run(cli)
    assert cli("list", "--json") == 0

    (project,) = json.loads(cli.out)
    assert {k: project[k] for k in ("project_id", "status", "goal", "profile", "nodes", "failed_nodes")} == {
        "project_id": "lists-tuples",
        "status": "completed",
        "goal": GOAL,
        "profile": "general_agent",
        "nodes": 3,
        "failed_nodes": 1,
    }
    assert project["cost_usd"] == 0.25 and project["pending_reviews"] == 1
    assert project["created_at"].endswith("+00:00")


def test_list_of_an_empty_store(cli: Cli) -> None:
    assert cli("list") == 0
    assert "no projects yet" in cli.err and cli.out == ""


# -- show ----------------------------------------------------------------------------------


def test_show_prints_status_stats_reviews_and_the_tree(cli: Cli) -> None:
    _stored_run(cli)

    assert cli("show", "lists-tuples") == 0

    assert cli.out.startswith("lists-tuples  completed")
    assert "3 nodes, 1 agent calls, 100 + 10 tokens, $0.2500, 1 failed" in cli.out
    assert str(cli.settings.results_dir / "lists-tuples" / "report.md") in cli.out
    assert "1 pending" in cli.out and "rev-lists-tuples" in cli.out
    assert "DONE root " in cli.out and "DONE root.0 Lists" in cli.out
    assert "FAILED root.1 Tuples — model error: boom" in cli.out


def test_unknown_project_is_one_clear_line_and_exit_2(cli: Cli) -> None:
    assert cli("show", "nope") == 2
    assert cli.err.strip() == "error: no project 'nope': see `sentient projects list` for the existing ones"
    assert "Traceback" not in cli.err


def test_invalid_project_id_is_refused(cli: Cli) -> None:
    assert cli("export", "../../etc/passwd") == 2
    assert "invalid project id" in cli.err and len(cli.err.strip().splitlines()) == 1


# -- knowledge -----------------------------------------------------------------------------


def test_knowledge_prints_what_each_finished_task_learned_in_order(cli: Cli) -> None:
    _stored_run(cli)

    assert cli("knowledge", "lists-tuples") == 0

    assert cli.out.split("\n\n")[:2] == [
        "root.0  Lists\nLists are mutable [1].\nsource: lists.md",
        f"root  {GOAL}\nLists are mutable [1].\nsource: lists.md",
    ]


def test_knowledge_with_a_query_prints_the_matching_findings_only(cli: Cli) -> None:
    _stored_run(cli)

    assert cli("knowledge", "lists-tuples", "when to use tuples") == 0
    assert cli.out.startswith(f"root  {GOAL}\n") and "root.0" not in cli.out

    assert cli("knowledge", "lists-tuples", "zebra") == 0
    assert cli.out == "" and cli.err.strip() == "no finding shares a word with 'zebra'"


def test_knowledge_of_an_unknown_project_is_exit_2(cli: Cli) -> None:
    assert cli("knowledge", "nope", "lists") == 2
    assert cli.err.strip() == "error: no project 'nope': see `sentient projects list` for the existing ones"


# -- export --------------------------------------------------------------------------------


def test_export_md_writes_the_stored_report_to_stdout(cli: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    _stored_run(cli)

    assert cli("export", "lists-tuples") == 0

    assert capsys.readouterr().out == REPORT


def test_export_html_writes_a_sanitised_page(cli: Cli, tmp_path: Path) -> None:
    _stored_run(cli)
    target = tmp_path / "out" / "report.html"

    assert cli("export", "lists-tuples", "--format", "html", "--out", str(target)) == 0

    page = target.read_text()
    assert page.startswith("<!DOCTYPE html>") and f"<h1>{GOAL}</h1>" in page
    assert f"<title>{GOAL}</title>" in page
    # Rendered from the report as data: its citations link to its references.
    assert 'Lists are mutable [<a href="#ref-1" rel="noopener noreferrer">1</a>]' in page
    assert '<li id="ref-1"><code>lists.md</code></li>' in page
    assert f"wrote {target}" in cli.err


def test_export_json_holds_project_graph_report_and_calls(cli: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    _stored_run(cli)

    assert cli("export", "lists-tuples", "--format", "json") == 0

    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"project", "graph", "report_markdown", "report", "calls"}
    assert data["project"]["status"] == "completed" and data["project"]["pending_reviews"] == 1
    assert [n["task_id"] for n in data["graph"]["nodes"]] == ["root", "root.0", "root.1"]
    assert data["report_markdown"] == REPORT
    # The report as data, built from the stored graph (this store holds only the Markdown).
    assert (data["report"]["answer"], data["report"]["partial"]) == ("Lists are mutable [1].", False)
    assert [(r["n"], r["ref"]) for r in data["report"]["references"]] == [(1, "lists.md")]
    assert [(m["task_id"], m["error"]) for m in data["report"]["missing"]] == [("root.1", "model error: boom")]
    assert [c["task_id"] for c in data["calls"]] == ["root.0"]


def test_export_without_a_stored_report_builds_one_from_the_graph(cli: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    _stored_run(cli, report=False)

    assert cli("export", "lists-tuples") == 0

    assert "Lists are mutable [1]." in capsys.readouterr().out


def test_export_of_a_project_that_never_ran_is_refused(cli: Cli) -> None:
    with cli.store() as store:
        store.create_project("fresh", GOAL, "general_agent", {})

    assert cli("export", "fresh", "--format", "html") == 2
    assert "has no report yet" in cli.err


def test_export_pdf_writes_a_pdf_with_the_title_the_citation_and_the_references(cli: Cli, tmp_path: Path) -> None:
    _stored_run(cli)
    target = tmp_path / "out" / "report.pdf"

    assert cli("export", "lists-tuples", "--format", "pdf", "--out", str(target)) == 0

    reader = pypdf.PdfReader(target)
    text = " ".join(" ".join(page.extract_text() for page in reader.pages).split())
    assert reader.metadata is not None and reader.metadata.title == GOAL
    assert text.startswith(GOAL) and "Lists are mutable [1]." in text and "References lists.md" in text
    links = [a.get_object() for page in reader.pages for a in page.get("/Annots") or []]
    assert [str(link["/Dest"]) for link in links] == ["ref-1"]
    assert f"wrote {target}" in cli.err


def test_export_docx_writes_a_word_document_with_the_title_the_citation_and_the_references(
    cli: Cli, tmp_path: Path
) -> None:
    _stored_run(cli)
    target = tmp_path / "report.docx"

    assert cli("export", "lists-tuples", "--format", "docx", "--out", str(target)) == 0

    document = docx.Document(str(target))
    texts = [p.text for p in document.paragraphs]
    assert document.core_properties.title == GOAL and texts[0] == GOAL
    assert "Lists are mutable [1]." in texts and "References" in texts and "1. lists.md" in texts
    assert [link.text for p in document.paragraphs for link in p.hyperlinks if link.fragment] == ["1"]


def test_export_pdf_to_a_pipe_writes_the_document_to_stdout(
    cli: Cli, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    _stored_run(cli)
    cli.terminal = False

    assert cli("export", "lists-tuples", "--format", "pdf") == 0

    assert capsysbinary.readouterr().out.startswith(b"%PDF-")


@pytest.mark.parametrize("fmt", ["pdf", "docx"])
def test_export_of_a_document_to_a_terminal_is_refused_in_one_line(cli: Cli, fmt: str) -> None:
    _stored_run(cli)

    assert cli("export", "lists-tuples", "--format", fmt) == 2

    assert cli.err == f"error: --format {fmt} writes a binary file: give --out FILE or redirect stdout to a file\n"


def test_export_of_an_unknown_format_names_the_formats(cli: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli("export", "lists-tuples", "--format", "rtf")

    assert exited.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert "invalid choice: 'rtf'" in error and "'pdf', 'docx'" in error


def test_export_pdf_without_pango_says_what_to_install(cli: Cli, tmp_path: Path) -> None:
    """A machine without the Pango library: WeasyPrint's import fails as it does there (OSError)."""
    _stored_run(cli)
    missing = tmp_path / "no-pango" / "weasyprint"
    missing.mkdir(parents=True)
    (missing / "__init__.py").write_text(
        "raise OSError(\"cannot load library 'libpango-1.0-0': libpango-1.0-0: cannot open shared object file\")\n"
    )
    env = {**os.environ, "PYTHONPATH": str(missing.parent), "SENTIENT_RESULTS_DIR": str(cli.settings.results_dir)}
    target = tmp_path / "report.pdf"

    export = ["projects", "export", "lists-tuples", "--format", "pdf", "--out", str(target)]
    done = subprocess.run(
        [sys.executable, "-m", "sentient.cli.main", *export],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot write pdf: WeasyPrint cannot load the Pango library")
    assert "apt-get install libpango-1.0-0 libpangoft2-1.0-0" in lines[0]
    assert not target.exists()


# -- delete --------------------------------------------------------------------------------


def test_delete_removes_the_project_and_its_files(cli: Cli) -> None:
    _stored_run(cli)

    assert cli("delete", "lists-tuples", "--yes") == 0

    assert not (cli.settings.results_dir / "lists-tuples").exists()
    assert cli("show", "lists-tuples") == 2
    with cli.store() as store:
        assert store.list_projects() == []


def test_delete_refuses_a_project_running_in_a_live_process(cli: Cli) -> None:
    _stored_run(cli)
    with cli.store() as store:
        store.claim("lists-tuples", Owner.local(os.getpid()))

    assert cli("show", "lists-tuples") == 0
    assert f"owner:    {socket.gethostname()}:{os.getpid()}" in cli.out
    assert cli("delete", "lists-tuples", "--yes") == 2

    assert f"is running in process {os.getpid()}" in cli.err
    assert (cli.settings.results_dir / "lists-tuples" / "report.md").exists()


def test_delete_allows_a_running_project_whose_process_died(cli: Cli) -> None:
    _stored_run(cli)
    with cli.store() as store:
        store.claim("lists-tuples", Owner.local(_dead_pid()))

    assert cli("delete", "lists-tuples", "--yes") == 0


def test_delete_without_yes_needs_a_terminal(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    _stored_run(cli)
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))

    assert cli("delete", "lists-tuples") == 2

    assert "pass --yes" in cli.err
    assert (cli.settings.results_dir / "lists-tuples").exists()
