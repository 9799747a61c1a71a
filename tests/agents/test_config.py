"""Agent and profile YAML: the shipped configs load, and every broken copy fails with file, line, field and fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sentient.agents.config import Role
from sentient.agents.registry import AgentRegistry
from sentient.exceptions import ConfigError, ProfileNotFoundError
from sentient.graph.node import TaskType
from sentient.resources import agent_configs_dir

SHIPPED = agent_configs_dir()
AGENT_NAMES = (
    "aggregator",
    "atomizer",
    "outliner",
    "plan_modifier",
    "planner",
    "report_aggregator",
    "root_aggregator",
    "root_planner",
    "search_executor",
    "section_writer",
    "think_executor",
    "verifier",
    "write_executor",
)


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    """A private copy of ``agent_configs/`` that a test may break."""
    return Path(shutil.copytree(SHIPPED, tmp_path / "agent_configs"))


def edit(path: Path, old: str, new: str) -> int:
    """Replace the one occurrence of ``old`` in ``path``; returns the 1-based line where ``new`` starts."""
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} should occur once in {path.name}"
    start = text.index(old)
    path.write_text(text.replace(old, new))
    return text[:start].count("\n") + 1


def load_error(config_dir: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        AgentRegistry.load(config_dir)
    return info.value


# -- the shipped configuration -----------------------------------------------------------------


def test_shipped_configs_load_with_both_profiles() -> None:
    registry = AgentRegistry.load(SHIPPED)
    assert registry.profile_names() == ["deep_research_agent", "general_agent"]
    deep = registry.profile("deep_research_agent")
    assert deep.settings.max_depth == 2
    assert deep.root_planner.name == "root_planner"
    assert deep.root_aggregator.name == "root_aggregator"
    assert {t: a.name for t, a in deep.executors.items()} == {
        TaskType.SEARCH: "search_executor",
        TaskType.THINK: "think_executor",
        TaskType.WRITE: "write_executor",
    }
    assert "docs_search" in deep.executor_for(TaskType.SEARCH).tools
    general = registry.profile("general_agent")
    assert general.settings.max_depth == 1
    assert general.settings.force_root_planning is False  # the root goes through the atomizer
    assert deep.settings.force_root_planning is False
    # The same root plan as general_agent's (then refined one level further): bench/README.md.
    assert deep.settings.max_subtasks == general.settings.max_subtasks == 3
    assert sorted(a.name for a in general.agents()) == sorted(AGENT_NAMES)


def test_the_atomizers_criteria_are_its_system_prompt_not_each_calls_task() -> None:
    # The embedded model reads a system prompt once per run (prompt states), a task every call.
    profile = AgentRegistry.load(SHIPPED).profile("general_agent")
    atomizer = profile.atomizer
    task = profile.prompts.for_run(None).atomize_task("What is the timeout of service A?", TaskType.SEARCH.value)

    assert "Most questions are one step" in atomizer.instructions
    assert "Most questions" not in task and "for example" not in task
    assert task.endswith('otherwise {"is_atomic": false}.')


def test_every_profile_slot_holds_an_agent_of_its_role() -> None:
    for name in AgentRegistry.load(SHIPPED).profile_names():
        profile = AgentRegistry.load(SHIPPED).profile(name)
        assert profile.planner_for(True).role is Role.PLANNER
        assert profile.planner_for(False).role is Role.PLANNER
        assert profile.atomizer.role is Role.ATOMIZER
        assert profile.aggregator_for(True).role is Role.AGGREGATOR
        assert profile.plan_modifier.role is Role.PLAN_MODIFIER
        for task_type in TaskType:
            executor = profile.executor_for(task_type)
            assert executor.role is Role.EXECUTOR
            assert task_type in executor.task_types


def test_unknown_profile_name_lists_the_valid_ones() -> None:
    with pytest.raises(ProfileNotFoundError) as info:
        AgentRegistry.load(SHIPPED).profile("deep_reserch_agent")
    error = info.value
    assert isinstance(error, ConfigError)
    assert error.available == ["deep_research_agent", "general_agent"]
    assert "deep_reserch_agent" in str(error)
    assert "deep_research_agent, general_agent" in str(error)


# -- agents.yaml -------------------------------------------------------------------------------


def test_malformed_yaml_names_the_file_and_the_line(config_dir: Path) -> None:
    agents = config_dir / "agents.yaml"
    line = edit(agents, "    role: atomizer\n", "    role: atomizer: oops\n")
    error = load_error(config_dir)
    assert error.file == str(agents)
    assert f"malformed YAML at line {line}" in str(error)
    assert str(agents) in str(error)
    assert error.fix


def test_unknown_agent_field_names_file_field_path_line_and_fix(config_dir: Path) -> None:
    agents = config_dir / "agents.yaml"
    line = edit(agents, "    role: atomizer\n", "    role: atomizer\n    bogus: 1\n") + 1
    error = load_error(config_dir)
    assert error.file == str(agents)
    assert error.field == "agents[2] (name 'atomizer').bogus"
    assert f"(line {line})" in error.message
    assert error.fix == "remove the field or correct its spelling."
    rendered = str(error)
    assert str(agents) in rendered and "agents[2] (name 'atomizer').bogus" in rendered and "Fix:" in rendered


def test_agent_without_role_asks_for_the_field(config_dir: Path) -> None:
    agents = config_dir / "agents.yaml"
    agent_line = edit(agents, "  - name: atomizer\n    role: atomizer\n", "  - name: atomizer\n")
    error = load_error(config_dir)
    assert error.field == "agents[2] (name 'atomizer').role"
    assert f"(line {agent_line})" in error.message
    assert error.fix == "add the field."


def test_bad_role_value_lists_the_valid_roles(config_dir: Path) -> None:
    line = edit(config_dir / "agents.yaml", "    role: atomizer\n", "    role: atomiser\n")
    error = load_error(config_dir)
    assert error.field == "agents[2] (name 'atomizer').role"
    assert f"(line {line})" in error.message
    assert error.fix is not None
    for role in Role:
        assert f"'{role.value}'" in error.fix


def test_unknown_tool_names_the_agent_and_the_known_tools(config_dir: Path) -> None:
    line = edit(
        config_dir / "agents.yaml",
        "    tools: [docs_search, web_search, fetch_page]\n",
        "    tools: [docs_search, web_crawl]\n",
    )
    error = load_error(config_dir)
    assert error.field == "agents[3] (name 'search_executor').tools"
    assert "web_crawl" in error.message
    assert f"(line {line})" in error.message
    assert error.fix == (
        "use only: calculator, docs_search, fetch_page, run_python, web_search, "
        "or {callable: 'module:function'} for your own."
    )


def test_a_callable_tool_that_cannot_be_imported_names_its_line(config_dir: Path) -> None:
    line = edit(
        config_dir / "agents.yaml",
        "    tools: [docs_search, web_search, fetch_page]\n",
        "    tools: [docs_search, {callable: 'fakes.user_tools:nothing_here'}]\n",
    )
    error = load_error(config_dir)
    assert error.field == "agents[3] (name 'search_executor').tools[1]"
    assert "fakes.user_tools has no nothing_here" in error.message
    assert f"(line {line})" in error.message


def test_an_unknown_model_provider_in_a_profile_names_its_line(config_dir: Path) -> None:
    profile = config_dir / "profiles" / "general_agent.yaml"
    line = edit(profile, "settings:\n", "models:\n  planner: nonsense:x\nsettings:\n") + 1
    error = load_error(config_dir)
    assert error.file == str(profile)
    assert error.field == "models.planner"
    assert error.message == f"cannot use model 'nonsense:x': unknown provider (line {line})."
    assert error.fix is not None and error.fix.startswith("use one of: local")


def test_an_mcp_server_needs_one_of_command_and_url(config_dir: Path) -> None:
    edit(
        config_dir / "agents.yaml",
        "    tools: [docs_search, web_search, fetch_page]\n",
        "    tools: [docs_search]\n    mcp: [{name: wiki, command: [wiki-server], url: 'http://127.0.0.1:1/mcp'}]\n",
    )
    error = load_error(config_dir)
    assert "give exactly one of 'command' (stdio) or 'url'" in error.message
    assert error.field is not None and error.field.startswith("agents[3] (name 'search_executor').mcp")


def test_duplicate_agent_names_are_refused(config_dir: Path) -> None:
    line = edit(config_dir / "agents.yaml", "  - name: planner\n", "  - name: root_planner\n")
    error = load_error(config_dir)
    assert error.field == "agents[1] (name 'root_planner').name"
    assert "duplicate agent name" in error.message
    assert f"(line {line})" in error.message


def test_executor_without_task_types_is_refused(config_dir: Path) -> None:
    edit(config_dir / "agents.yaml", "    task_types: [THINK]\n", "")
    error = load_error(config_dir)
    assert error.field == "agents[4] (name 'think_executor').task_types"
    assert "task types" in error.message
    assert "(line " in error.message


def test_agents_file_that_is_not_a_mapping_is_refused(config_dir: Path) -> None:
    (config_dir / "agents.yaml").write_text("- name: planner\n- name: atomizer\n")
    error = load_error(config_dir)
    assert error.file == str(config_dir / "agents.yaml")
    assert "mapping" in error.message


def test_missing_agents_file_points_at_the_config_dir_setting(config_dir: Path) -> None:
    (config_dir / "agents.yaml").unlink()
    error = load_error(config_dir)
    assert error.file == str(config_dir / "agents.yaml")
    assert "not found" in error.message
    assert "SENTIENT_CONFIG_DIR" in (error.fix or "")


def test_config_dir_without_profiles_is_refused(config_dir: Path) -> None:
    shutil.rmtree(config_dir / "profiles")
    error = load_error(config_dir)
    assert "no profiles" in error.message


# -- profiles/*.yaml ---------------------------------------------------------------------------


def test_profile_naming_an_unknown_agent_lists_the_available_agents(config_dir: Path) -> None:
    profile = config_dir / "profiles" / "general_agent.yaml"
    line = edit(profile, "  planner: planner\n", "  planner: planer\n")
    error = load_error(config_dir)
    assert error.file == str(profile)
    assert error.field == "agents.planner"
    assert "unknown agent 'planer'" in error.message
    assert f"(line {line})" in error.message
    assert error.fix == f"use an agent defined in agents.yaml: {', '.join(AGENT_NAMES)}."


def test_agent_with_the_wrong_role_in_a_slot_is_refused(config_dir: Path) -> None:
    profile = config_dir / "profiles" / "general_agent.yaml"
    line = edit(profile, "  aggregator: aggregator\n", "  aggregator: planner\n")
    error = load_error(config_dir)
    assert error.field == "agents.aggregator"
    assert "has role 'planner', but this slot needs role 'aggregator'" in error.message
    assert f"(line {line})" in error.message


def test_profile_without_an_executor_for_a_task_type_is_refused(config_dir: Path) -> None:
    profile = config_dir / "profiles" / "deep_research_agent.yaml"
    edit(profile, "    THINK: think_executor\n", "")
    error = load_error(config_dir)
    assert error.file == str(profile)
    assert error.field == "agents.executors"
    assert "['THINK']" in error.message


def test_executor_slot_for_a_task_type_the_agent_does_not_handle_is_refused(config_dir: Path) -> None:
    profile = config_dir / "profiles" / "general_agent.yaml"
    line = edit(profile, "    WRITE: write_executor\n", "    WRITE: think_executor\n")
    error = load_error(config_dir)
    assert error.field == "agents.executors.WRITE"
    assert "does not handle task type WRITE" in error.message
    assert f"(line {line})" in error.message


def test_unknown_task_type_key_in_executors_is_refused(config_dir: Path) -> None:
    profile = config_dir / "profiles" / "general_agent.yaml"
    line = edit(profile, "    WRITE: write_executor\n", "    WRITE: write_executor\n    SERCH: search_executor\n") + 1
    error = load_error(config_dir)
    assert error.file == str(profile)
    assert error.field is not None and "SERCH" in error.field
    assert f"(line {line})" in error.message


def test_profile_name_must_match_its_file_name(config_dir: Path) -> None:
    profile = config_dir / "profiles" / "general_agent.yaml"
    line = edit(profile, "name: general_agent\n", "name: general\n")
    error = load_error(config_dir)
    assert error.file == str(profile)
    assert error.field == "name"
    assert f"(line {line})" in error.message
    assert error.fix == "set name: general_agent"


def test_misspelled_engine_setting_in_a_profile_is_refused(config_dir: Path) -> None:
    profile = config_dir / "profiles" / "general_agent.yaml"
    line = edit(profile, "  max_depth: 1\n", "  max_dept: 1\n")
    error = load_error(config_dir)
    assert error.file == str(profile)
    assert error.field == "settings.max_dept"
    assert f"(line {line})" in error.message
    assert error.fix == "remove the field or correct its spelling."


def test_invalid_failure_policy_lists_the_policies(config_dir: Path) -> None:
    profile = config_dir / "profiles" / "general_agent.yaml"
    line = edit(profile, "  failure_policy: continue\n", "  failure_policy: sometimes\n")
    error = load_error(config_dir)
    assert error.field == "settings.failure_policy"
    assert f"(line {line})" in error.message
    assert error.fix is not None and "'replan'" in error.fix and "'fail_parent'" in error.fix
