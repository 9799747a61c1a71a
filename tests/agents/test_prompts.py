"""Prompts and lengths are configuration: agents.yaml's tasks and lengths, filled with parameters."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from sentient.agents.prompts import TEMPLATE_PARAMETERS, TaskTemplates
from sentient.agents.registry import AgentRegistry
from sentient.exceptions import ConfigError
from sentient.graph.node import NodeType, TaskNode, TaskType
from sentient.resources import agent_configs_dir
from sentient.settings import EngineSettings, ReportLength

SHIPPED = agent_configs_dir()
AGENTS_PACKAGE = Path(__file__).resolve().parents[2] / "sentient" / "agents"


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SHIPPED, tmp_path / "agent_configs"))


def edit(path: Path, old: str, new: str) -> int:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} should occur once in {path.name}"
    path.write_text(text.replace(old, new))
    return text[: text.index(old)].count("\n") + 1


def node(goal: str) -> TaskNode:
    return TaskNode(task_id="root", goal=goal, task_type=TaskType.SEARCH, node_type=NodeType.PLAN)


def test_a_length_set_in_agents_yaml_reaches_the_instructions_and_the_tasks(config_dir: Path) -> None:
    agents = config_dir / "agents.yaml"
    edit(agents, "  search_words: 100\n", "  search_words: 40\n")
    edit(agents, "  answer_sentences: one to three sentences", "  answer_sentences: one sentence")
    profile = AgentRegistry.load(config_dir).profile("general_agent")

    assert "at most about\n40 words." in profile.executor_for(TaskType.SEARCH).instructions
    assert "$" not in profile.executor_for(TaskType.SEARCH).instructions
    task = profile.prompts.for_run(None).execute_task(node("Which port does it use?"), sourced=True)
    assert "in one sentence, from the numbered sources" in task
    assert "Which port does it use?" in task


def test_the_report_length_setting_names_the_size_the_tasks_are_given(config_dir: Path) -> None:
    # A template may use any parameter of a report size: the run's report_length picks the size.
    edit(
        config_dir / "agents.yaml", "    Revise the plan for this goal:\n", "    Revise ($sections x $section_words):\n"
    )
    prompts = AgentRegistry.load(config_dir).profile("general_agent").prompts
    sizes = {length: prompts.report_size(length) for length in ReportLength}

    def revised(length: ReportLength | int | None) -> str:
        return prompts.for_run(length).modify_task(node("g"), None, "x").splitlines()[0]

    long = sizes[ReportLength.LONG]
    assert revised(ReportLength.LONG) == f"Revise ({long.sections} x {long.section_words}):"
    standard = sizes[ReportLength.STANDARD]
    assert revised(None) == f"Revise ({standard.sections} x {standard.section_words}):"
    assert sizes[ReportLength.SHORT].words < standard.words < long.words
    # A number of words: the nearest size, its sections as long as that many words need.
    target = long.words * 2
    size = prompts.report_size(target)
    assert size.sections == long.sections
    assert abs(size.words - target) <= size.sections
    assert revised(target) == f"Revise ({long.sections} x {size.section_words}):"


def test_report_length_is_an_engine_setting_a_name_or_a_number_of_words() -> None:
    assert EngineSettings().report_length is None
    assert EngineSettings(report_length="long").report_length is ReportLength.LONG
    assert EngineSettings.model_validate({"report_length": 1500}).report_length == 1500
    for bad in ("huge", 5, 0):
        with pytest.raises(ValueError, match="report_length"):
            EngineSettings.model_validate({"report_length": bad})


def test_an_unknown_parameter_of_a_task_fails_at_load_naming_file_line_and_task(config_dir: Path) -> None:
    agents = config_dir / "agents.yaml"
    line = edit(agents, "  memory: |-\n", "  memory: |-\n    ($memory_words)\n")
    with pytest.raises(ConfigError) as info:
        AgentRegistry.load(config_dir)
    error = info.value
    assert error.file == str(agents)
    assert error.field == "tasks.memory"
    assert "$memory_words" in str(error)
    assert f"line {line}" in str(error)


def test_an_unknown_parameter_in_instructions_fails_at_load(config_dir: Path) -> None:
    agents = config_dir / "agents.yaml"
    edit(agents, "about $think_words words", "about $thinking_words words")
    with pytest.raises(ConfigError) as info:
        AgentRegistry.load(config_dir)
    assert "$thinking_words" in str(info.value)
    assert str(info.value.field).endswith("(name 'think_executor').instructions")


def test_a_report_length_without_a_size_fails_at_load(config_dir: Path) -> None:
    edit(config_dir / "agents.yaml", "  long: {sections:", "  longer: {sections:")
    with pytest.raises(ConfigError) as info:
        AgentRegistry.load(config_dir)
    assert "report_lengths" in str(info.value.field)


def test_a_negative_overview_size_fails_at_load_naming_its_field(config_dir: Path) -> None:
    edit(config_dir / "agents.yaml", "overview_quotes: 8,", "overview_quotes: -1,")
    with pytest.raises(ConfigError) as info:
        AgentRegistry.load(config_dir)
    assert info.value.field == "report_lengths.short.overview_quotes"
    assert info.value.file == str(config_dir / "agents.yaml")


def test_no_task_prose_or_length_is_written_in_the_agents_python_code() -> None:
    # Prompts live in agents.yaml: no string literal of the agents package asks for JSON or caps a length.
    for path in AGENTS_PACKAGE.rglob("*.py"):
        for literal in ast.walk(ast.parse(path.read_text())):
            if isinstance(literal, ast.Constant) and isinstance(literal.value, str):
                text = literal.value
                assert "Answer with JSON" not in text, path
                assert "at most about" not in text and "sentences, from" not in text, path


def test_every_task_template_declares_what_its_calls_give_it() -> None:
    # A template with no declared parameters could only use lengths: a call's own values would be unknown.
    assert set(TaskTemplates.model_fields) <= set(TEMPLATE_PARAMETERS)
