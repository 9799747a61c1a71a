"""The eval harness end to end on the scripted model: every system, grading, loss location, resume, cache replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import Reply, fake_openai_server, text

from sentient.agents.models.fake import FakeRequest, ScriptedModel, asks_for, default_response, executor_answer
from sentient.context.grounding import Reading, Verdict
from sentient.eval.dataset import EvalQuestion
from sentient.eval.harness import EvalOptions, default_docs, run_eval
from sentient.eval.judge import Grade
from sentient.eval.records import QuestionRecord, grade
from sentient.eval.summary import EvalSummary, markdown_table, mcnemar_exact, summarise
from sentient.eval.systems import Outcome
from sentient.exceptions import EvalError
from sentient.graph.node import Source
from sentient.settings import Settings

SYSTEMS = ("closed-book", "rag", "profile:general_agent")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(model="scripted", cache_dir=tmp_path / "cache", results_dir=tmp_path / "results")


def rag_answer(request: FakeRequest) -> str:
    """Answers from the passages it is shown, citing the first one, as a good model would."""
    if "teal" in request.prompt and "colour" in request.goal:
        return "The beacon is teal [1]."
    return "The sources do not say."


def team_executor(request: FakeRequest) -> Any:
    """The subtasks find the answer in their first source; the root's direct answer names no
    passage (from memory), so the question is planned."""
    if request.task_id == "root":
        return executor_answer(request, "The beacon is a lighthouse.", sourced=False)
    return executor_answer(request, "The Zorblax beacon is teal.")


def no_passage_states_the_direct_answer(request: FakeRequest) -> Any:
    """A verifier that finds no passage for the root's answer; read without its answer, the first
    lookup's passage gives the same one (and, shown it, supports it), and the planned question's
    second lookup's (the question itself) gives none."""
    if asks_for(request, "source"):
        return {"source": 0}
    if asks_for(request, "answer"):
        return default_response(request) if request.task_id == "root.0" else Reading(answer="")
    return Verdict(supports=request.task_id == "root.0")


def losing_team() -> ScriptedModel:
    """The first lookup finds the answer; no passage supports the second (the question itself), so
    the model's own answer stands and the colour is lost; closed-book declines."""
    return ScriptedModel(
        script={
            "closed-book": "I do not know.",
            "rag": rag_answer,
            "executor": team_executor,
            "verifier": no_passage_states_the_direct_answer,
        }
    )


def records_of(report_dir: Path, system_slug: str) -> dict[str, dict[str, Any]]:
    lines = (report_dir / system_slug / "results.jsonl").read_text().splitlines()
    return {row["id"]: row for row in map(json.loads, lines)}


async def test_each_system_records_grade_cost_and_where_the_answer_was_lost(
    dataset: Path, settings: Settings, tmp_path: Path
) -> None:
    report = await run_eval(EvalOptions(dataset, limit=1, out=tmp_path / "eval"), settings, model=losing_team())

    assert report.run_dir == tmp_path / "eval" / "fake-scripted" / "dev"
    closed = records_of(report.run_dir, "closed-book")["colour"]
    assert closed["answer"] == "I do not know."
    assert (closed["correct"], closed["not_attempted"], closed["in_sources"]) == (False, True, None)
    assert (closed["agent_calls"], closed["model_calls"], closed["split"], closed["hops"]) == (1, 1, "dev", 1)

    rag = records_of(report.run_dir, "rag")["colour"]
    assert (rag["correct"], rag["not_attempted"], rag["in_sources"], rag["in_final"]) == (True, False, True, True)
    # One citation, unverified: the baseline checks no quote.
    assert (rag["citations"], rag["verified_citations"], rag["cites_any"]) == (1, 0, True)
    assert rag["input_tokens"] > closed["input_tokens"]  # the passages were in the prompt

    profile = records_of(report.run_dir, "profile-general_agent")["colour"]
    assert profile["answer"] == "The beacon is a lighthouse."
    assert (profile["in_sources"], profile["in_leaf"], profile["in_final"]) == (True, True, False)
    assert profile["lost_in_aggregation"] is True and profile["correct"] is False
    # The root's direct answer, the executor asked again which passage states it, its answer from
    # memory, its plan, and two lookups, each with its named passage read by the verifier without
    # the answer (the first's then judged with it).
    assert profile["agent_calls"] == profile["model_calls"] == 9
    assert (profile["citations"], profile["verified_citations"]) == (0, 0)
    assert profile["error"] is None and profile["system"] == "profile:general_agent"
    # The profile's run files go under the eval folder, not project_results/<id>.
    assert (report.run_dir / "profile-general_agent" / "runs" / "eval-colour" / "report.md").is_file()
    assert not (settings.results_dir).exists()

    expected = set(QuestionRecord.model_fields)
    assert set(closed) == set(rag) == set(profile) == expected


async def test_summary_shows_the_profile_beside_both_baselines(
    dataset: Path, settings: Settings, tmp_path: Path
) -> None:
    report = await run_eval(EvalOptions(dataset, out=tmp_path / "eval"), settings, model=losing_team())
    rows = {row.system: row for row in report.summary.systems}
    assert list(rows) == list(SYSTEMS)
    assert rows["rag"].accuracy == pytest.approx(100 / 3, abs=0.1)
    assert rows["rag"].accuracy_1hop == 50.0 and rows["rag"].accuracy_2hop == 0.0
    assert rows["closed-book"].not_attempted == 3
    assert rows["profile:general_agent"].lost_in_aggregation == 1  # the executors only ever know the colour
    # Without --judge no citation is judged; the model's own answers stand, badged nothing.
    assert rows["profile:general_agent"].citation_precision is None
    assert rows["profile:general_agent"].wrong_verified == 0

    table = (report.run_dir / "summary.md").read_text()
    assert table == report.table
    body = [line for line in table.split("Paired")[0].splitlines() if line.startswith("| ")]
    assert [line.split(" | ")[0] for line in body] == ["| system", "| closed-book", "| rag", "| profile:general_agent"]
    assert "lost in aggregation" in body[0] and "judge %" not in body[0]
    stored = EvalSummary.model_validate_json((report.run_dir / "summary.json").read_text())
    assert stored == report.summary and stored.questions == 3

    versus = {c.baseline: c for c in report.summary.comparisons}
    assert [c.system for c in report.summary.comparisons] == ["profile:general_agent"] * 2
    profile_right = {r.id for r in report.new_records if r.system == "profile:general_agent" and r.correct}
    rag_right = {r.id for r in report.new_records if r.system == "rag" and r.correct}
    assert (versus["rag"].n, versus["rag"].both_right) == (3, len(profile_right & rag_right))
    assert (versus["rag"].only_system, versus["rag"].only_baseline) == (
        len(profile_right - rag_right),
        len(rag_right - profile_right),
    )
    assert "| profile:general_agent | closed-book | 3 |" in table
    assert (
        f"- profile:general_agent vs rag: only the system none; only the baseline {versus['rag'].only_baseline_ids[0]}"
        in table
    )


async def test_an_interrupted_eval_continues_and_a_finished_one_runs_nothing(
    dataset: Path, settings: Settings, tmp_path: Path
) -> None:
    options = EvalOptions(dataset, out=tmp_path / "eval", concurrency=2)
    first = await run_eval(EvalOptions(dataset, out=tmp_path / "eval", limit=1), settings, model=losing_team())
    assert {(r.system, r.id) for r in first.new_records} == {(s, "colour") for s in SYSTEMS}

    model = losing_team()
    second = await run_eval(options, settings, model=model)
    assert {r.id for r in second.new_records} == {"installer", "pilot"}  # 'colour' was already done
    assert len(second.new_records) == 6

    third_model = losing_team()
    third = await run_eval(options, settings, model=third_model)
    assert third.new_records == [] and third_model.calls == []
    assert [row.n for row in third.summary.systems] == [3, 3, 3]
    for slug in ("closed-book", "rag", "profile-general_agent"):
        assert len((third.run_dir / slug / "results.jsonl").read_text().splitlines()) == 3


async def test_a_rerun_elsewhere_replays_every_system_from_the_response_cache(
    dataset: Path, settings: Settings, tmp_path: Path
) -> None:
    cached = settings.model_copy(update={"cache_responses": True})
    first = await run_eval(EvalOptions(dataset, out=tmp_path / "one"), cached, model=losing_team())
    assert first.model_calls > 0

    model = losing_team()
    second = await run_eval(EvalOptions(dataset, out=tmp_path / "two"), cached, model=model)
    assert len(second.new_records) == 9
    assert second.model_calls == 0 and model.calls == []
    assert {(r.system, r.id, r.answer) for r in second.new_records} == {
        (r.system, r.id, r.answer) for r in first.new_records
    }


async def test_a_changed_split_writes_to_another_folder(dataset: Path, settings: Settings, tmp_path: Path) -> None:
    options = EvalOptions(dataset, systems=("closed-book",), split="heldout", out=tmp_path / "eval")
    report = await run_eval(options, settings, model=losing_team())
    assert report.run_dir.name == "heldout"
    assert [r.id for r in report.new_records] == ["late"]
    assert [row.system for row in report.summary.systems] == ["closed-book"]  # only what was asked


def judge_reply(body: dict[str, Any]) -> Reply:
    prompt = body["messages"][-1]["content"]
    if "Predicted answer:" not in prompt:  # a citation: supported when the passage says what the answer does
        answer, passage = prompt.split("Answer: ", 1)[1].split("\nPassage", 1)
        return text("A" if "teal" in answer and "teal" in passage else "B")
    answer = prompt.split("Predicted answer:", 1)[1]
    return text("C" if "do not" in answer else "A" if "teal" in answer else "B")


async def test_the_judge_grades_every_answer_three_ways(dataset: Path, settings: Settings, tmp_path: Path) -> None:
    with fake_openai_server(default=judge_reply) as server:
        judge = f"openai-compatible:{server.base_url}:judge"
        options = EvalOptions(dataset, limit=1, out=tmp_path / "eval", judge=judge)
        report = await run_eval(options, settings, model=losing_team())
    labels = {r.system: (r.judge, r.not_attempted) for r in report.new_records}
    assert labels == {
        "closed-book": (Grade.NOT_ATTEMPTED, True),
        "rag": (Grade.CORRECT, False),
        "profile:general_agent": (Grade.INCORRECT, False),
    }
    graded = [b for b in server.requests if "Predicted answer:" in b["messages"][-1]["content"]]
    assert len(graded) == 3
    assert "judge %" in report.table
    assert [row.judge_accuracy for row in report.summary.systems] == [0.0, 100.0, 0.0]
    # Each cited passage is read by the judge too, with its own prompt, not the pipeline's verifier.
    cited = {r.system: (r.judged_citations, r.supported_citations) for r in report.new_records}
    assert cited == {"closed-book": (0, 0), "rag": (1, 1), "profile:general_agent": (0, 0)}
    assert [row.citation_precision for row in report.summary.systems] == [None, 1.0, None]


class VerifiableSource(Source):
    """A Source that carries the ``verified`` flag the citation checker sets."""

    verified: bool | None = None


def test_citation_precision_is_the_judges_share_of_supported_citations() -> None:
    question = EvalQuestion(id="q", question="Colour?", answers=["teal"], hops=1)
    cited = [VerifiableSource(ref="a.md", verified=True), VerifiableSource(ref="b.md", verified=False)]
    outcome = Outcome(
        answer="It is teal [1], says the log [2]; see [1, 3].\n\n## References\n\n1. a [2]",
        cited=cited,
        leaves=["teal"],
        agent_calls=3,
    )
    record = grade(question, "profile:x", "m", outcome, support=(2, 1))
    assert (record.citations, record.verified_citations, record.cites_any) == (4, 2, True)
    assert (record.correct, record.in_leaf, record.lost_in_aggregation) == (True, True, False)
    row = summarise("profile:x", [record, grade(question, "profile:x", "m", Outcome(answer="teal"))])
    # The pipeline's own badges (2 of 4) are not the precision: the judge found 1 of 2 passages supportive.
    assert row.citation_precision == 0.5 and row.cited == 50.0 and row.accuracy == 100.0
    assert summarise("profile:x", [grade(question, "profile:x", "m", outcome)]).citation_precision is None
    assert "| profile:x | 2 | 100 |" in markdown_table(
        EvalSummary(dataset="d", split="dev", model="m", questions=2, systems=[row])
    )


def test_a_question_asking_several_things_is_right_only_when_every_part_is_stated() -> None:
    question = EvalQuestion(
        id="q", question="How long then, and how long now?", answers=["31 months"], also=[["22 months"]]
    )
    both = Outcome(answer="It was 31 months [1]; now 22 months [2].", leaves=["31 months", "22 months"])
    one = Outcome(answer="It is 22 months now [2].", leaves=["It was 31 months [1].", "It is 22 months [1]."])
    half_found = Outcome(answer="It was 31 months [1].", leaves=["It was 31 months [1]."])

    assert grade(question, "profile:x", "m", both).correct
    lost = grade(question, "profile:x", "m", one)
    assert (lost.correct, lost.in_leaf, lost.lost_in_aggregation) == (False, True, True)
    assert (grade(question, "profile:x", "m", half_found).in_leaf, lost.not_attempted) == (False, False)


@pytest.mark.parametrize(
    ("only_system", "only_baseline", "p"),
    [(0, 0, 1.0), (1, 1, 1.0), (0, 3, 0.25), (6, 0, 0.03125), (2, 10, 0.0386)],
)
def test_mcnemar_exact_is_the_two_sided_binomial_tail(only_system: int, only_baseline: int, p: float) -> None:
    assert mcnemar_exact(only_system, only_baseline) == pytest.approx(p, abs=1e-4)


def test_docs_default_to_the_folder_named_like_the_dataset(dataset: Path, tmp_path: Path) -> None:
    assert default_docs(dataset) == tmp_path / "harbour"
    assert default_docs(tmp_path / "other_qa.jsonl") is None


def test_a_held_out_file_defaults_to_the_folder_of_its_dev_file(dataset: Path, tmp_path: Path) -> None:
    assert default_docs(tmp_path / "harbour_heldout_qa.jsonl") == tmp_path / "harbour"
    assert default_docs(tmp_path / "other_heldout_qa.jsonl") is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"systems": ("open-book",)}, "unknown system 'open-book'"),
        ({"systems": ("profile:nope",)}, "unknown profile 'nope'"),
        ({"split": "test"}, "unknown split"),
        ({"concurrency": 0}, "--concurrency"),
    ],
)
async def test_bad_options_are_eval_errors(
    dataset: Path, settings: Settings, tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(EvalError, match=message):
        await run_eval(EvalOptions(dataset, out=tmp_path / "eval", **options), settings, model=losing_team())


async def test_a_failed_answer_is_recorded_as_wrong_with_its_error_and_not_rerun(
    dataset: Path, settings: Settings, tmp_path: Path
) -> None:
    broken = ScriptedModel(script={"closed-book": RuntimeError("model down"), "executor": RuntimeError("no answer")})
    options = EvalOptions(dataset, systems=("closed-book", "profile:general_agent"), limit=1, out=tmp_path / "eval")
    report = await run_eval(options, settings, model=broken)
    errors = {r.system: r.error for r in report.new_records}
    assert "model down" in (errors["closed-book"] or "")
    assert errors["profile:general_agent"]  # every executor failed, so the run did
    assert all(not r.correct and r.answer == "" for r in report.new_records)
    assert [row.errors for row in report.summary.systems] == [1, 1]

    again = await run_eval(options, settings, model=losing_team())
    assert again.new_records == []
