"""Reports name their sources by title and by a path relative to the docs folder, never by a path
of the machine that ran them: not in the report, its HTML, its JSON, the CLI's output or an export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sentient import ProfiledSentientAgent
from sentient.settings import Settings

_SCRIPT = Path(sys.executable).with_name("sentient")
COMMAND = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "sentient.cli.main"]
GOAL = "How do Python lists differ from tuples?"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "guide").mkdir(parents=True)
    (folder / "guide" / "lists.md").write_text("# Lists\n\nA list is a mutable sequence: Python lists grow.\n")
    (folder / "tuples.md").write_text("# Tuples\n\nA tuple is an immutable sequence; tuples can be dict keys.\n")
    return folder


async def test_a_run_names_its_sources_relative_to_the_docs_folder(tmp_path: Path, docs: Path) -> None:
    settings = Settings(model="scripted", cache_dir=tmp_path / "cache", results_dir=tmp_path / "results")
    agent = ProfiledSentientAgent.create_with_profile("general_agent", settings=settings, docs=docs)

    result = await agent.arun(GOAL)

    refs = {r.ref for r in result.report.references} | {c.ref for c in result.report.consulted}
    assert refs and refs <= {"guide/lists.md", "tuples.md"}
    assert {s.ref for node in result.graph for s in node.sources} <= {"guide/lists.md", "tuples.md"}
    assert result.output_dir is not None
    for rendered in (
        result.report_markdown,
        result.report.model_dump_json(),
        (result.output_dir / "report.md").read_text(),
        (result.output_dir / "report.html").read_text(),
    ):
        assert str(tmp_path) not in rendered
        assert "guide/lists.md" in rendered or "tuples.md" in rendered


def test_the_cli_prints_and_exports_reports_without_paths_of_the_machine(tmp_path: Path, docs: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SENTIENT_")}
    env.update(
        SENTIENT_OFFLINE="1",
        SENTIENT_MODEL="scripted",
        SENTIENT_CACHE_DIR=str(tmp_path / "cache"),
        SENTIENT_RESULTS_DIR="out",
    )

    def sentient(*args: str) -> str:
        done = subprocess.run(
            [*COMMAND, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True
        )
        return done.stdout + done.stderr

    ran = sentient("run", GOAL, "--docs", str(docs))
    (project_id,) = [p.name for p in (tmp_path / "out").iterdir() if p.is_dir()]
    exported = json.loads(sentient("projects", "export", project_id, "--format", "json"))
    del exported["project"]  # the project's own settings name the folder the user gave

    printed = [
        ran,
        sentient("projects", "export", project_id),
        sentient("projects", "export", project_id, "--format", "html"),
        sentient("projects", "knowledge", project_id),
        json.dumps(exported),
    ]
    for text in printed:
        assert str(docs) not in text, text
    assert "tuples.md" in ran or "guide/lists.md" in ran
