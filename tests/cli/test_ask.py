"""``sentient ask ID "QUESTION"``: a follow-up question researched as a project that follows the one
asked, from what that project found first; the project asked is left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import GOAL, Sandbox, make_sandbox, one_line_error

from sentient.store import ProjectStore


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return make_sandbox(tmp_path)


def test_ask_answers_a_followup_from_the_projects_sources_and_leaves_the_project_as_it_was(sandbox: Sandbox) -> None:
    ran = sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--json")
    assert ran.returncode == 0, ran.stderr
    parent = json.loads(ran.stdout)["project_id"]
    with ProjectStore.open(sandbox.results) as store:
        before = (store.load_graph(parent).to_dict(), store.get_report(parent))

    proc = sandbox.run("ask", parent, "Do tuples differ from lists as dict keys?", "--json")

    assert proc.returncode == 0, proc.stderr
    answered = json.loads(proc.stdout)
    assert answered["status"] == "completed" and answered["project_id"] != parent
    with ProjectStore.open(sandbox.results) as store:
        followup = store.get_project(answered["project_id"])
        calls = store.calls(followup.project_id)
        assert (store.load_graph(parent).to_dict(), store.get_report(parent)) == before
    assert followup.goal == "Do tuples differ from lists as dict keys?"
    assert followup.options["follows"] == parent
    executor = [c for c in calls if c["role"] == "executor"]
    assert executor and "Finding of the project this question follows up" in executor[0]["prompt"]


def test_ask_refuses_an_unknown_project_and_an_empty_question_in_one_line(sandbox: Sandbox) -> None:
    assert "no-such-project" in one_line_error(sandbox.run("ask", "no-such-project", "Why?"))
    ran = sandbox.run("run", GOAL, "--docs", str(sandbox.docs), "--json")
    parent = json.loads(ran.stdout)["project_id"]
    assert "the question is empty" in one_line_error(sandbox.run("ask", parent, "   "))
