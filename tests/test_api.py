"""The Python API: the README example runs as written, and RunResult agrees with the graph and the files."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from fakes.lists import citing_model, lists_docs

from sentient import ProfiledSentientAgent, RunResult
from sentient.agents.models.fake import ScriptedModel
from sentient.exceptions import ConfigError, ProfileNotFoundError
from sentient.settings import FailurePolicy, Settings

README = Path(__file__).resolve().parents[1] / "README.md"
GOAL = "How do Python lists differ from tuples?"


def readme_example() -> str:
    readme = README.read_text()
    match = re.search(r"<!-- ci:example -->\s*```python\n(.*?)```\s*<!-- /ci:example -->", readme, re.DOTALL)
    assert match, "README.md has no <!-- ci:example --> python block"
    return match.group(1)


@pytest.fixture
def api_settings(tmp_path: Path) -> Settings:
    return Settings(model="scripted", cache_dir=tmp_path / "cache", results_dir=tmp_path / "results")


@pytest.fixture
def api_docs(tmp_path: Path) -> Path:
    return lists_docs(tmp_path / "docs")


# -- the README example --------------------------------------------------------------------------


def test_readme_python_example_runs_and_prints_completed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SENTIENT_MODEL", "scripted")
    monkeypatch.setenv("SENTIENT_CACHE_DIR", str(tmp_path / "cache"))  # the Python docs index is built here
    monkeypatch.setenv("SENTIENT_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.delenv("SENTIENT_CONFIG_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    exec(compile(readme_example(), "README.md", "exec"), {"__name__": "readme_example"})
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "completed"
    project_id, nodes, calls, elapsed = lines[-1].split()
    # A question: answered from one search, its passage read by the verifier (which reads the same
    # answer in it without being shown it, then, shown it, judges that the passage supports it).
    assert int(nodes) == 1 and int(calls) == 3 and float(elapsed) > 0
    report = (tmp_path / "results" / project_id / "report.md").read_text()
    assert report.strip() in "\n".join(lines)


# -- arun / run ------------------------------------------------------------------------------------


async def test_arun_returns_a_result_consistent_with_the_graph_and_the_files(
    api_settings: Settings, api_docs: Path
) -> None:
    model = citing_model()
    # Planned at once (its cited direct answer would otherwise be the whole run): a tree to check.
    agent = ProfiledSentientAgent.create_with_profile(
        "general_agent", settings=api_settings, model=model, docs=api_docs, answer_first=False
    )
    result = await agent.arun(goal=GOAL)
    assert isinstance(result, RunResult)
    assert result.status == "completed" and result.error is None
    graph = result.graph
    assert result.final_answer == graph.root.result == "# Lists and tuples\n\nLists change [1]; tuples do not [2]."

    stats = result.stats
    assert stats.nodes == len(graph) == 3
    # The root's atomizer, the planner, two executors, the verifier's reading of each one's
    # passage and its judgement of the answer, the aggregator.
    assert stats.agent_calls == sum(n.agent_calls for n in graph) == len(model.calls) == 9
    assert stats.input_tokens == sum(n.input_tokens for n in graph) > 0
    assert stats.output_tokens == sum(n.output_tokens for n in graph) > 0
    assert stats.failed_nodes == 0
    assert stats.elapsed_s > 0

    body, _, refs = result.report_markdown.partition("\n## References\n\n")
    assert body.strip() == result.final_answer
    cited = [Path(line.split("`")[1]) for line in refs.strip().splitlines() if line[:1].isdigit()]
    assert len(cited) == 2
    assert {p.name for p in cited} == {"lists.md", "tuples.md"}
    assert [s.ref for s in graph.root.sources[:2]] == [str(p) for p in cited]

    out = api_settings.results_dir / result.project_id
    assert result.output_dir == out
    assert (out / "report.md").read_text() == result.report_markdown
    assert len(json.loads((out / "graph.json").read_text())["nodes"]) == stats.nodes
    assert {p.stem for p in (out / "traces").glob("*.json")} == {n.task_id for n in graph}


def test_run_is_the_synchronous_form(api_settings: Settings, api_docs: Path) -> None:
    agent = ProfiledSentientAgent.create_with_profile("general_agent", settings=api_settings, docs=str(api_docs))
    first = agent.run(GOAL, write_files=False)
    second = agent.run(GOAL, write_files=False)
    assert first.status == second.status == "completed"
    assert first.project_id != second.project_id
    assert first.output_dir is None
    assert not api_settings.results_dir.exists()


async def test_output_dir_overrides_the_results_folder(api_settings: Settings, api_docs: Path, tmp_path: Path) -> None:
    agent = ProfiledSentientAgent.create_with_profile("general_agent", settings=api_settings, docs=api_docs)
    result = await agent.arun(GOAL, output_dir=tmp_path / "here")
    assert result.output_dir == tmp_path / "here"
    assert (tmp_path / "here" / "report.md").read_text() == result.report_markdown
    assert not api_settings.results_dir.exists()


async def test_a_failed_run_still_returns_a_partial_report_and_writes_files(
    api_settings: Settings, api_docs: Path
) -> None:
    model = ScriptedModel(script={"executor": RuntimeError("disk on fire")})
    agent = ProfiledSentientAgent.create_with_profile(
        "general_agent", settings=api_settings, model=model, docs=api_docs
    )
    result = await agent.arun(GOAL)
    assert result.status == "failed"
    assert result.final_answer is None
    assert result.error is not None and "subtasks failed" in result.error
    assert "disk on fire" in result.error
    assert result.stats.failed_nodes == 3
    assert "Incomplete run" in result.report_markdown
    assert (api_settings.results_dir / result.project_id / "report.md").read_text() == result.report_markdown


# -- configuration errors --------------------------------------------------------------------------


async def test_empty_goal_raises_config_error(api_settings: Settings, api_docs: Path) -> None:
    agent = ProfiledSentientAgent.create_with_profile("general_agent", settings=api_settings, docs=api_docs)
    with pytest.raises(ConfigError) as info:
        await agent.arun("   ")
    assert info.value.field == "goal"
    assert not api_settings.results_dir.exists()


def test_unknown_engine_override_names_the_valid_settings(api_settings: Settings) -> None:
    with pytest.raises(ConfigError) as info:
        ProfiledSentientAgent.create_with_profile("general_agent", settings=api_settings, max_dept=3)
    assert "max_dept" in info.value.message
    assert info.value.fix is not None
    for name in ("max_depth", "failure_policy", "review", "context_token_budget"):
        assert name in info.value.fix


async def test_unknown_override_per_run_is_refused_before_the_run(api_settings: Settings, api_docs: Path) -> None:
    model = ScriptedModel()
    agent = ProfiledSentientAgent.create_with_profile(
        "general_agent", settings=api_settings, model=model, docs=api_docs
    )
    with pytest.raises(ConfigError, match="bogus"):
        await agent.arun(GOAL, bogus=1)
    assert model.calls == []


def test_invalid_override_value_names_the_setting_in_one_line(api_settings: Settings) -> None:
    with pytest.raises(ConfigError) as info:
        ProfiledSentientAgent.create_with_profile("general_agent", settings=api_settings, max_depth=99)
    assert info.value.field == "max_depth"
    assert "99" in str(info.value)
    assert "\n" not in str(info.value)


def test_overrides_change_only_the_named_settings(api_settings: Settings) -> None:
    agent = ProfiledSentientAgent.create_with_profile(
        "deep_research_agent", settings=api_settings, max_depth=3, review="root"
    )
    assert agent.engine_settings.max_depth == 3
    assert agent.engine_settings.review == "root"
    assert agent.engine_settings.failure_policy is FailurePolicy.REPLAN  # from the profile
    assert agent.profile.settings.max_depth == 2, "the loaded profile itself is unchanged"


def test_unknown_profile_raises_profile_not_found(api_settings: Settings) -> None:
    with pytest.raises(ProfileNotFoundError) as info:
        ProfiledSentientAgent.create_with_profile("nope", settings=api_settings)
    assert info.value.available == ["deep_research_agent", "general_agent"]


def test_unknown_model_is_refused_when_the_agent_is_created(tmp_path: Path) -> None:
    settings = Settings(model="gpt-99", cache_dir=tmp_path / "cache", results_dir=tmp_path / "results")
    with pytest.raises(ConfigError, match="cannot use model 'gpt-99': unknown provider"):
        ProfiledSentientAgent.create_with_profile("general_agent", settings=settings)


async def test_a_cancelled_run_still_writes_its_partial_report(api_settings: Settings, api_docs: Path) -> None:
    model = ScriptedModel(latency=lambda request: 0.0 if request.role == "planner" else 30.0)
    agent = ProfiledSentientAgent.create_with_profile(
        "general_agent", settings=api_settings, docs=api_docs, model=model
    )
    out = api_settings.results_dir / "cancelled"
    run = asyncio.create_task(agent.arun(GOAL, project_id="cancelled", output_dir=out))
    while not model.calls_for(role="executor"):
        await asyncio.sleep(0.01)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    report = (out / "report.md").read_text()
    assert "Incomplete run" in report and "CANCELLED" in report
    statuses = {n["status"] for n in json.loads((out / "graph.json").read_text())["nodes"]}
    assert statuses == {"CANCELLED"}, "every node that had not finished is cancelled"


async def test_the_profile_caps_how_many_subtasks_the_planner_is_asked_for(
    api_settings: Settings, api_docs: Path
) -> None:
    model = ScriptedModel()
    agent = ProfiledSentientAgent.create_with_profile(
        "general_agent", settings=api_settings, docs=api_docs, model=model, answer_first=False
    )
    await agent.arun(GOAL, write_files=False)
    assert "into 2 to 3 subtasks" in model.calls_for(role="planner")[0].request.prompt
    await agent.arun(GOAL, write_files=False, max_subtasks=5)
    assert "into 2 to 5 subtasks" in model.calls_for(role="planner")[1].request.prompt
