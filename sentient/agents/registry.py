"""AgentRegistry: every agent and profile from ``agent_configs/``, cross-checked at load time."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sentient.agents.config import AgentConfig, AgentsFile, ProfileConfig, Role, line_in_file, load_yaml_model
from sentient.agents.models.providers import parse_model_string
from sentient.agents.prompts import Prompts, render_instructions, unknown_instruction_parameters
from sentient.exceptions import ConfigError, ProfileNotFoundError
from sentient.graph.node import TaskType
from sentient.settings import EngineSettings
from sentient.tools.specs import CallableTool
from sentient.tools.toolbox import TOOL_NAMES, function_tool


@dataclass(frozen=True)
class Profile:
    """A validated profile: the agent for every role, and the engine defaults."""

    name: str
    description: str
    settings: EngineSettings
    planner: AgentConfig
    root_planner: AgentConfig
    atomizer: AgentConfig
    executors: dict[TaskType, AgentConfig]
    aggregator: AgentConfig
    root_aggregator: AgentConfig
    plan_modifier: AgentConfig
    verifier: AgentConfig
    outliner: AgentConfig  # reports: the outline, the items of a fan-out
    section_writer: AgentConfig  # reports: a section from its searches
    report_aggregator: AgentConfig  # reports: the title and summary
    prompts: Prompts  # the task templates and lengths of agents.yaml
    models: dict[Role, str] = field(default_factory=dict)  # per-role model strings
    agents_file: Path | None = None  # the agents.yaml it was loaded from (names it in errors of MCP servers)

    def planner_for(self, is_root: bool) -> AgentConfig:
        return self.root_planner if is_root else self.planner

    def aggregator_for(self, is_root: bool) -> AgentConfig:
        return self.root_aggregator if is_root else self.aggregator

    def executor_for(self, task_type: TaskType) -> AgentConfig:
        return self.executors[task_type]

    def agents(self) -> list[AgentConfig]:
        seen = {
            a.name: a for a in (self.planner, self.root_planner, self.atomizer, self.aggregator, self.root_aggregator)
        }
        seen.update({a.name: a for a in (*self.executors.values(), self.plan_modifier, self.verifier)})
        seen.update({a.name: a for a in (self.outliner, self.section_writer, self.report_aggregator)})
        return list(seen.values())


class AgentRegistry:
    """Agents from ``agents.yaml`` and profiles from ``profiles/*.yaml``."""

    def __init__(self, profiles: dict[str, Profile]) -> None:
        self._profiles = profiles

    @classmethod
    def load(cls, config_dir: Path) -> AgentRegistry:
        """Load and validate everything; the first problem raises ConfigError."""
        agents_path = config_dir / "agents.yaml"
        if not agents_path.is_file():
            raise ConfigError(
                "agents file not found.", file=str(agents_path), fix="point SENTIENT_CONFIG_DIR at agent_configs/."
            )
        parsed = load_yaml_model(agents_path, AgentsFile)
        prompts = _prompts(agents_path, parsed)
        agents = _index_agents(agents_path, parsed)
        profile_paths = sorted((config_dir / "profiles").glob("*.yaml"))
        if not profile_paths:
            raise ConfigError(
                "no profiles found.", file=str(config_dir / "profiles"), fix="add at least one profile YAML file."
            )
        profiles: dict[str, Profile] = {}
        for path in profile_paths:
            config = load_yaml_model(path, ProfileConfig)
            if config.name != path.stem:
                raise ConfigError(
                    f"profile name '{config.name}' does not match the file name{_at(path, 'name')}.",
                    file=str(path),
                    field="name",
                    fix=f"set name: {path.stem}",
                )
            profiles[config.name] = _resolve_profile(path, config, agents, prompts, agents_path)
        return cls(profiles)

    def profile_names(self) -> list[str]:
        return sorted(self._profiles)

    def profile(self, name: str) -> Profile:
        try:
            return self._profiles[name]
        except KeyError:
            raise ProfileNotFoundError(name, self.profile_names()) from None


def _prompts(path: Path, parsed: AgentsFile) -> Prompts:
    """The task templates and lengths, every ``$parameter`` of each template one that it is given."""
    unknown_parameters = parsed.tasks.unknown_parameters(parsed.lengths)
    if unknown_parameters:
        name, unknown = next(iter(unknown_parameters.items()))
        raise ConfigError(
            f"unknown parameter(s) {', '.join('$' + p for p in unknown)}{_at(path, 'tasks', name)}.",
            file=str(path),
            field=f"tasks.{name}",
            fix="use the task's own parameters or a name defined under lengths:; write a literal $ as $$.",
        )
    return Prompts(parsed.tasks, dict(parsed.lengths), dict(parsed.report_lengths), parsed.tasks_language)


def _index_agents(path: Path, parsed: AgentsFile) -> dict[str, AgentConfig]:
    agents: dict[str, AgentConfig] = {}
    for i, agent in enumerate(parsed.agents):
        field = f"agents[{i}] (name '{agent.name}')"
        unknown_parameters = unknown_instruction_parameters(agent.instructions, parsed.lengths)
        if unknown_parameters:
            raise ConfigError(
                f"unknown parameter(s) {', '.join('$' + p for p in unknown_parameters)}"
                f"{_at(path, 'agents', i, 'instructions')}.",
                file=str(path),
                field=f"{field}.instructions",
                fix="define it under lengths:, or write a literal $ as $$.",
            )
        try:
            instructions = render_instructions(agent.instructions, parsed.lengths)
        except ValueError:
            raise ConfigError(
                f"a $ that starts no parameter{_at(path, 'agents', i, 'instructions')}.",
                file=str(path),
                field=f"{field}.instructions",
                fix="write a literal $ as $$.",
            ) from None
        agent = agent.model_copy(update={"instructions": instructions})
        if agent.name in agents:
            raise ConfigError(
                f"duplicate agent name{_at(path, 'agents', i, 'name')}.",
                file=str(path),
                field=f"{field}.name",
                fix="rename one of them.",
            )
        unknown = [t for t in agent.tools if isinstance(t, str) and t not in TOOL_NAMES]
        if unknown:
            raise ConfigError(
                f"unknown tool(s) {unknown}{_at(path, 'agents', i, 'tools')}.",
                file=str(path),
                field=f"{field}.tools",
                fix=f"use only: {', '.join(sorted(TOOL_NAMES))}, or {{callable: 'module:function'}} for your own.",
            )
        for j, entry in enumerate(agent.tools):
            if isinstance(entry, CallableTool):
                try:
                    function_tool(entry)
                except ConfigError as exc:
                    raise _located(exc, path, f"{field}.tools[{j}]", "agents", i, "tools", j) from None
        if agent.role is Role.EXECUTOR and not agent.task_types:
            raise ConfigError(
                f"an executor must list the task types it handles{_at(path, 'agents', i)}.",
                file=str(path),
                field=f"{field}.task_types",
                fix="add e.g. task_types: [SEARCH].",
            )
        agents[agent.name] = agent
    return agents


def _resolve_profile(
    path: Path, config: ProfileConfig, agents: dict[str, AgentConfig], prompts: Prompts, agents_file: Path
) -> Profile:
    def pick(field: str, name: str, role: Role) -> AgentConfig:
        agent = agents.get(name)
        if agent is None:
            raise ConfigError(
                f"unknown agent '{name}'{_at(path, 'agents', *field.split('.'))}.",
                file=str(path),
                field=f"agents.{field}",
                fix=f"use an agent defined in agents.yaml: {', '.join(sorted(agents))}.",
            )
        if agent.role is not role:
            raise ConfigError(
                f"agent '{name}' has role '{agent.role}', but this slot needs role '{role}'"
                f"{_at(path, 'agents', *field.split('.'))}.",
                file=str(path),
                field=f"agents.{field}",
                fix=f"choose an agent with role '{role}'.",
            )
        return agent

    slots = config.agents
    missing = [t.value for t in TaskType if t not in slots.executors]
    if missing:
        raise ConfigError(
            f"no executor for task type(s) {missing}{_at(path, 'agents', 'executors')}.",
            file=str(path),
            field="agents.executors",
            fix="map every task type (SEARCH, THINK, WRITE) to an executor.",
        )
    executors = {}
    for task_type, name in slots.executors.items():
        executor = pick(f"executors.{task_type.value}", name, Role.EXECUTOR)
        if task_type not in executor.task_types:
            raise ConfigError(
                f"agent '{name}' does not handle task type {task_type.value}"
                f"{_at(path, 'agents', 'executors', task_type.value)}.",
                file=str(path),
                field=f"agents.executors.{task_type.value}",
                fix=f"add {task_type.value} to its task_types or choose another executor.",
            )
        executors[task_type] = executor
    for role, text in config.models.items():
        try:
            parse_model_string(text)
        except ConfigError as exc:
            raise _located(exc, path, f"models.{role.value}", "models", role.value) from None
    planner = pick("planner", slots.planner, Role.PLANNER)
    aggregator = pick("aggregator", slots.aggregator, Role.AGGREGATOR)
    return Profile(
        name=config.name,
        description=config.description,
        settings=config.settings,
        planner=planner,
        root_planner=pick("root_planner", slots.root_planner, Role.PLANNER) if slots.root_planner else planner,
        atomizer=pick("atomizer", slots.atomizer, Role.ATOMIZER),
        executors=executors,
        aggregator=aggregator,
        root_aggregator=(
            pick("root_aggregator", slots.root_aggregator, Role.AGGREGATOR) if slots.root_aggregator else aggregator
        ),
        plan_modifier=pick("plan_modifier", slots.plan_modifier, Role.PLAN_MODIFIER),
        verifier=pick("verifier", slots.verifier, Role.VERIFIER),
        outliner=pick("outliner", slots.outliner, Role.PLANNER),
        section_writer=pick("section_writer", slots.section_writer, Role.EXECUTOR),
        report_aggregator=pick("report_aggregator", slots.report_aggregator, Role.AGGREGATOR),
        prompts=prompts,
        models=dict(config.models),
        agents_file=agents_file,
    )


def _at(path: Path, *loc: str | int) -> str:
    """`` (line N)`` for the YAML node at ``loc``, to append to a message."""
    line = line_in_file(path, loc)
    return f" (line {line})" if line else ""


def _located(exc: ConfigError, path: Path, field: str, *loc: str | int) -> ConfigError:
    """``exc``, raised where the place was not known, at ``field`` of ``path`` (its line from ``loc``)."""
    return ConfigError(f"{exc.message.rstrip('.')}{_at(path, *loc)}.", file=str(path), field=field, fix=exc.fix)
