"""The report eval on the scripted model: key-point recall, distractors, where each missed point
was lost, judged citation precision, the rag baseline, and the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sentient.agents.models.fake import FakeRequest, ScriptedModel, executor_answer, listed_sources
from sentient.agents.schemas import AggregationOutput
from sentient.eval.reports import (
    ReportEvalOptions,
    ReportGoal,
    _citing,
    grade_report,
    load_report_goals,
    run_report_eval,
)
from sentient.eval.systems import Outcome
from sentient.exceptions import EvalError
from sentient.settings import Settings

GOAL = {
    "id": "ferries",
    "goal": "Write an overview of the ferries: when each sails and who captains it",
    "points": [
        {"id": "alpha-time", "any": ["07:15", "7.15 am"], "item": "Alpha"},
        {"id": "alpha-captain", "any": ["Ines Moreau"], "item": "Alpha"},
        {"id": "beta-time", "any": ["09:40"], "item": "Beta"},
        {"id": "gamma", "any": ["Zeta pier"]},  # in no document: never retrieved
    ],
    "distractors": ["08:30"],  # Beta's old time
    "docs": ["alpha.md", "beta.md"],
}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(model="scripted", cache_dir=tmp_path / "cache", results_dir=tmp_path / "results")


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """``ferries_reports.jsonl`` beside its documents in ``ferries/``."""
    docs = tmp_path / "ferries"
    docs.mkdir()
    (docs / "alpha.md").write_text(
        "# Ferry Alpha\n\nFerry Alpha sails at 07:15 from the north pier; Ines Moreau captains it.\n"
    )
    (docs / "beta.md").write_text("# Ferry Beta\n\nFerry Beta sails at 09:40 since May; it sailed at 08:30 before.\n")
    path = tmp_path / "ferries_reports.jsonl"
    path.write_text(json.dumps(GOAL) + "\n")
    return path


def rag_writer(request: FakeRequest) -> str:
    """States Alpha's time and Beta's old time; leaves out what else the passages say."""
    return (
        "# Ferries\n\nFerry Alpha sails at 07:15 [1]. Ferry Beta sails at 08:30 [2].\n\n## Alpha\n\nIt sails early [1]."
    )


def team() -> ScriptedModel:
    """An answer-mode team: the steps find every fact, the root's aggregator drops the captain."""

    def executor(request: FakeRequest) -> Any:
        return executor_answer(request, "Ferry Alpha sails at 07:15 and Ines Moreau captains it.")

    return ScriptedModel(
        script={
            "rag-report": rag_writer,
            "executor": executor,
            "aggregator": AggregationOutput(answer="Ferry Alpha sails at 07:15 [1]."),
        }
    )


def records(run_dir: Path, system: str) -> dict[str, dict[str, Any]]:
    lines = (run_dir / system / "results.jsonl").read_text().splitlines()
    return {row["id"]: row for row in map(json.loads, lines)}


async def test_each_report_is_graded_by_its_points_and_every_missed_point_located(
    dataset: Path, settings: Settings, tmp_path: Path
) -> None:
    options = ReportEvalOptions(dataset, systems=("rag", "profile:general_agent"), out=tmp_path / "eval")
    result = await run_report_eval(options, settings, model=team())

    rag = records(result.run_dir, "rag")["ferries"]
    assert rag["stated"] == ["alpha-time"] and rag["points"] == 4
    assert rag["under_another_item"] == []  # "Ferry Alpha sails at 07:15"
    assert rag["items"] == ["Alpha", "Beta"] and rag["items_headed"] == ["Alpha"]  # "## Alpha", no Beta heading
    assert rag["distractors"] == ["08:30"]
    # The captain and Beta's new time were in the passages the one call was shown, not in its report.
    assert rag["not_written"] == ["alpha-captain", "beta-time"] and rag["not_retrieved"] == ["gamma"]
    assert (rag["words"], rag["sections"], rag["citations"]) == (20, 1, 2)
    assert (rag["agent_calls"], rag["model_calls"]) == (1, 1)

    team_record = records(result.run_dir, "profile-general_agent")["ferries"]
    assert team_record["stated"] == ["alpha-time"]
    assert team_record["dropped"] == ["alpha-captain"]  # written by a step, lost by the aggregator
    assert team_record["not_retrieved"] == ["gamma"] and team_record["distractors"] == []

    by_system = {row.system: row for row in result.summary.systems}
    assert by_system["rag"].recall == 25.0 and by_system["rag"].retrieved == 75.0
    assert by_system["profile:general_agent"].dropped == 1
    (comparison,) = result.summary.comparisons
    assert (comparison.system, comparison.baseline) == ("profile:general_agent", "rag")
    assert "key-point recall %" in result.table and "missed: dropped in assembly" in result.table
    assert (by_system["rag"].items_headed, by_system["rag"].items) == (1, 2)
    assert "items with a heading" in result.table
    assert "| 1 / 2 |" in next(line for line in result.table.splitlines() if line.startswith("| rag |"))
    assert (result.run_dir / "summary.md").read_text() == result.table


@pytest.mark.parametrize(
    ("report", "elsewhere"),
    [
        ("## Alpha\n\nIt sails at 07:15; Ines Moreau captains it.\n\n## Beta\n\nIt sails at 09:40.", []),
        ("Ferry Beta sails at 09:40. Ferry Alpha sails at 07:15.", []),
        # Beta's time under Alpha's heading, and a sentence about Beta giving Alpha's captain.
        (
            "## Alpha\n\nIt sails at 09:40.\n\n## Beta\n\nFerry Beta is captained by Ines Moreau.",
            ["alpha-captain", "beta-time"],
        ),
        # Beta's time is stated under both headings: once in place is enough.
        ("## Alpha\n\n09:40 and 07:15.\n\n## Beta\n\nAt 09:40.", []),
    ],
)
def test_a_point_stated_away_from_its_item_is_counted_as_under_another_item(report: str, elsewhere: list[str]) -> None:
    record = grade_report(ReportGoal.model_validate(GOAL), "rag", "scripted", Outcome(answer=report))

    assert record.under_another_item == elsewhere


async def test_report_mode_with_the_judge_reads_each_cited_passage(
    dataset: Path, sections_only: Settings, tmp_path: Path
) -> None:
    def section_writer(request: FakeRequest) -> Any:
        facts = {"07:15": "Ferry Alpha sails at 07:15", "09:40": "Ferry Beta sails at 09:40", "Moreau": "Ines Moreau"}
        numbers = listed_sources(request.prompt)
        blocks = request.prompt.split("## Sources you may cite as [n]")[-1].split("\n[")
        said = [
            {"answer": f"{fact}.", "keys": [key], "sources": [n]}
            for n, block in zip(numbers, blocks[1:] or blocks, strict=False)
            for key, fact in facts.items()
            if key in block
        ]
        return {"answers": said or [{"answer": "Nothing.", "keys": [], "sources": []}]}

    def judge(request: FakeRequest) -> str:
        # Each citing sentence is read under its section's heading (the fake outline's parts), and
        # a marker after a sentence's full stop cites that sentence, not the next one.
        answer = request.prompt.split("Answer: ")[1].split("\nPassage")[0]
        assert answer.startswith("Part 1 of Write an overview of the ferries: ")
        alpha = "Ferry Alpha" in request.prompt.split("Passage")[-1]
        assert ("07:15" in answer) is alpha and ("09:40" in answer) is not alpha
        return "A" if alpha else "B"

    model = ScriptedModel(script={"executor": section_writer, "rag-report": rag_writer})
    options = ReportEvalOptions(
        dataset, systems=("profile:general_agent",), out=tmp_path / "eval", judge="scripted", report_length="short"
    )
    result = await run_report_eval(
        options, sections_only, model=model, judge_model=ScriptedModel(script={"citation-judge": judge})
    )

    record = records(result.run_dir, "profile-general_agent")["ferries"]
    assert set(record["stated"]) == {"alpha-time", "alpha-captain", "beta-time"}
    assert record["sections"] == 2 and record["report"].startswith("# ")  # the fake outline's two sections
    assert record["judged_citations"] == record["citations"] == 2
    assert record["supported_citations"] == 1  # only Alpha's passage was judged to support what cites it
    (row,) = result.summary.systems
    assert row.citation_precision == 0.5 and row.recall == 75.0


async def test_a_report_with_a_failed_section_is_judged_too(
    dataset: Path, sections_only: Settings, tmp_path: Path
) -> None:
    def section_writer(request: FakeRequest) -> Any:
        if "Section of the report: Part 2" in request.prompt:
            return RuntimeError("the model crashed")
        return {"answers": [{"answer": "Ferry Alpha sails at 07:15.", "keys": ["07:15"], "sources": [1]}]}

    model = ScriptedModel(script={"executor": section_writer, "rag-report": rag_writer})
    options = ReportEvalOptions(
        dataset, systems=("profile:general_agent",), out=tmp_path / "eval", judge="scripted", report_length="short"
    )
    result = await run_report_eval(
        options, sections_only, model=model, judge_model=ScriptedModel(script={"citation-judge": "A"})
    )

    record = records(result.run_dir, "profile-general_agent")["ferries"]
    assert record["error"] and record["sections"] == 1  # Part 2 failed; Part 1 was written
    assert record["judged_citations"] == record["supported_citations"] == 1


@pytest.mark.parametrize(
    ("beta", "current"),
    [
        ("Ferry Beta sails at 08:30 [2].", ["08:30"]),
        ("Ferry Beta sails at 09:40 since May; it sailed at 08:30 before [2].", []),
    ],
)
async def test_the_judge_tells_a_superseded_value_given_as_current_from_one_given_as_history(
    dataset: Path, settings: Settings, tmp_path: Path, beta: str, current: list[str]
) -> None:
    def writer(request: FakeRequest) -> str:
        return f"# Ferries\n\nFerry Alpha sails at 07:15 [1]. {beta}"

    def judge(request: FakeRequest) -> str:
        mentions = request.prompt.split("that mention")[-1]
        assert "Ferry Alpha" not in mentions  # it reads only the sentences that hold the value
        return "B" if "before" in mentions else "A"

    options = ReportEvalOptions(dataset, systems=("rag",), out=tmp_path / "eval", judge="scripted")
    result = await run_report_eval(
        options,
        settings,
        model=ScriptedModel(script={"rag-report": writer}),
        judge_model=ScriptedModel(script={"current-judge": judge, "citation-judge": lambda request: "A"}),
    )

    record = records(result.run_dir, "rag")["ferries"]
    assert record["distractors"] == ["08:30"] and record["current_distractors"] == current
    (row,) = result.summary.systems
    assert (row.distractors, row.current_distractors) == (1, len(current))
    assert "of those as current (judged)" in result.table


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 1: not valid JSON"),
        ('{"id": "a", "goal": "g", "points": []}', "line 1: points: List should have at least 1 item"),
        ('{"id": "a", "goal": "g", "points": [{"id": "p", "any": [" "]}]}', "points.0.any: Value error"),
        ('{"id": "a", "goal": "g", "points": [{"id": "p", "any": ["x"]}], "colour": 1}', "colour: Extra inputs"),
    ],
)
def test_a_bad_report_dataset_is_refused_naming_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad_reports.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(EvalError, match=message):
        load_report_goals(path)


def test_a_heldout_file_is_all_held_out_and_ids_are_unique(tmp_path: Path) -> None:
    path = tmp_path / "x_reports_heldout.jsonl"
    path.write_text(json.dumps(GOAL) + "\n")
    assert [g.split for g in load_report_goals(path)] == ["heldout"]
    path.write_text(json.dumps(GOAL) + "\n" + json.dumps(GOAL) + "\n")
    with pytest.raises(EvalError, match="line 2: duplicate id 'ferries'"):
        load_report_goals(path)


def test_sentient_eval_on_report_goals_prints_the_report_table(dataset: Path, tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("sentient")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "sentient.cli.main"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SENTIENT_")}
    env.update(
        SENTIENT_OFFLINE="1", SENTIENT_CACHE_DIR=str(tmp_path / "cache"), SENTIENT_RESULTS_DIR=str(tmp_path / "r")
    )
    args = ["eval", dataset.name, "--model", "scripted", "--report-length", "short"]
    proc = subprocess.run([*command, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    assert proc.returncode == 0, proc.stderr
    rows = [line.split(" | ")[0] for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert rows[:3] == ["| system", "| rag", "| profile:general_agent"]
    assert "[1/1] profile:general_agent ferries: " in proc.stderr and "2 new reports" in proc.stderr
    bad = subprocess.run(
        [*command, "eval", dataset.name, "--model", "scripted", "--report-length", "huge"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "--report-length" in bad.stderr and "Traceback" not in bad.stderr
    unknown = subprocess.run(
        [*command, "eval", dataset.name, "--model", "scripted", "--id", "ferries", "--id", "trams"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unknown.returncode == 2 and "no 'trams' in the dev split" in unknown.stderr, unknown.stderr


@pytest.mark.parametrize("markers", ["[1][2]", "[1, 2]"])
def test_markers_after_a_full_stop_cite_the_sentence_before_them(markers: str) -> None:
    report = f"## Ferries\nAlpha sails at 07:15. {markers} Beta sails at 09:40. [3]"
    alpha, beta = "Ferries: Alpha sails at 07:15.", "Ferries: Beta sails at 09:40."
    assert _citing(report, 3) == {1: alpha, 2: alpha, 3: beta}
