"""Agent and profile configuration: the YAML files, validated at load with file, line and field."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sentient.agents.prompts import ReportSize, TaskTemplates
from sentient.exceptions import ConfigError
from sentient.graph.node import TaskType
from sentient.language import check_language
from sentient.settings import EngineSettings, ReportLength
from sentient.tools.specs import McpServer, ToolEntry


class Role(StrEnum):
    PLANNER = "planner"
    ATOMIZER = "atomizer"
    EXECUTOR = "executor"
    AGGREGATOR = "aggregator"
    PLAN_MODIFIER = "plan_modifier"
    VERIFIER = "verifier"  # judges whether a cited passage supports an answer (sentient.context.grounding)


class AgentConfig(BaseModel):
    """One agent in ``agents.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_\-]+$")
    role: Role
    instructions: str = Field(min_length=1, description="The system prompt; $name takes a value of lengths:.")
    task_types: list[TaskType] = Field(default_factory=list, description="Executors: the task types they handle.")
    model: str | None = Field(None, description="Model string; default is the run's model.")
    tools: list[ToolEntry] = Field(
        default_factory=list, description="Built-in tool names, and your own callables: {callable: 'module:function'}."
    )
    mcp: list[McpServer] = Field(default_factory=list, description="MCP servers whose tools the agent may call.")
    description: str = ""


class AgentsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agents: list[AgentConfig] = Field(min_length=1)
    lengths: dict[str, str | int] = Field(
        default_factory=dict, description="Parameters of the instructions and tasks: how long an answer is."
    )
    report_lengths: dict[ReportLength, ReportSize] = Field(
        description="How large a report is, per value of the report_length setting."
    )
    tasks: TaskTemplates = Field(description="The task of each kind of agent call, with $parameters.")
    tasks_language: str = Field(
        "en",
        description="The language the instructions and tasks are written in: a run in another gets tasks.language.",
    )

    @field_validator("tasks_language")
    @classmethod
    def _a_language(cls, tag: str) -> str:
        return check_language(tag)

    @field_validator("report_lengths")
    @classmethod
    def _every_length(cls, sizes: dict[ReportLength, ReportSize]) -> dict[ReportLength, ReportSize]:
        missing = [length.value for length in ReportLength if length not in sizes]
        if missing:
            raise ValueError(f"no size for {', '.join(missing)}")
        return sizes


class ProfileAgents(BaseModel):
    """Which agent plays which role in a profile."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    planner: str
    root_planner: str | None = None
    atomizer: str
    executors: dict[TaskType, str]
    aggregator: str
    root_aggregator: str | None = None
    plan_modifier: str
    verifier: str = "verifier"
    outliner: str = "outliner"  # a report's outline, and the items of its "for each" parts
    section_writer: str = "section_writer"  # a report's section, from its searches
    report_aggregator: str = "report_aggregator"  # a report's title and summary


class ProfileConfig(BaseModel):
    """A profile file in ``profiles/``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    agents: ProfileAgents
    models: dict[Role, str] = Field(
        default_factory=dict, description="Model string per role, e.g. a strong planner and a cheap atomizer."
    )
    settings: EngineSettings = Field(default_factory=EngineSettings)


_M = TypeVar("_M", bound=BaseModel)

# libyaml's loader when PyYAML was built with it (about ten times faster); the same YAML either way.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml_model(path: Path, model: type[_M]) -> _M:
    """Parse ``path`` into ``model``; any problem becomes a ConfigError naming file, line and field."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read file: {exc.strerror}.", file=str(path)) from exc
    try:
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at_line = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(
            f"malformed YAML{at_line}: {problem}.", file=str(path), fix="correct the YAML syntax."
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(
            "expected a mapping at the top level.", file=str(path), fix="see agent_configs/ for examples."
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = [str(part) for part in error["loc"]]
        line = _line_of(yaml.compose(text, Loader=_LOADER), error["loc"])
        field = ".".join(loc) or "(top level)"
        where = f" (line {line})" if line else ""
        raise ConfigError(
            f"{error['msg']}{where}.",
            file=str(path),
            field=_readable_field(data, error["loc"]) or field,
            fix=_fix_for(error),
        ) from exc


def _readable_field(data: Any, loc: tuple[Any, ...]) -> str:
    """``agents.2.role`` reads better as ``agents[2] (name 'x').role``."""
    parts: list[str] = []
    node = data
    for part in loc:
        if isinstance(part, int) and isinstance(node, list) and part < len(node):
            name = node[part].get("name") if isinstance(node[part], dict) else None
            parts[-1] = f"{parts[-1]}[{part}]" + (f" (name '{name}')" if name else "")
            node = node[part]
        else:
            parts.append(str(part))
            node = node.get(part) if isinstance(node, dict) else None
    return ".".join(parts)


def _fix_for(error: Any) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "remove the field or correct its spelling."
    if kind == "missing":
        return "add the field."
    if kind == "enum":
        return f"use one of {error.get('ctx', {}).get('expected', 'the allowed values')}."
    return "correct the value."


def line_in_file(path: Path, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML node at ``loc`` in ``path`` (or of its nearest existing parent)."""
    try:
        return _line_of(yaml.compose(path.read_text(encoding="utf-8"), Loader=_LOADER), loc)
    except (OSError, yaml.YAMLError):
        return None


def _line_of(tree: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML node at ``loc`` (or of its nearest existing parent)."""
    node = tree
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
        if child is None:
            break
        node = child
        line = node.start_mark.line + 1
    return line
