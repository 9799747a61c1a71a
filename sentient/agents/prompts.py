"""The task part of each agent's prompt, rendered from the templates of ``agents.yaml``.

The system prompt is an agent's ``instructions``; the context (overall goal, ancestors,
dependency results, sources) is rendered by the ContextBuilder; the task is one of the
``tasks:`` templates of ``agents.yaml``, filled with ``$parameters``. Nothing here writes prompt
prose or a length: lengths are parameters too (``lengths:`` for answers, ``report_lengths:`` for
a report of the size the run's ``report_length`` setting names). When the run's language is not the
one the tasks are written in (``tasks_language:``), every task ends with the ``language`` template,
so each role writes in it; otherwise the tasks are as written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from string import Template
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sentient.graph.node import TaskNode
from sentient.graph.plan import PlanOutput
from sentient.language import language_name
from sentient.settings import ReportLength

# What each template is given besides the lengths (``lengths:`` and the report size).
TEMPLATE_PARAMETERS: dict[str, frozenset[str]] = {
    "plan": frozenset({"goal", "max_subtasks"}),
    "plan_question": frozenset({"goal"}),
    "atomize": frozenset({"goal", "task_type"}),
    "execute_sourced": frozenset({"goal"}),
    "execute": frozenset({"goal"}),
    "memory": frozenset({"goal"}),
    "support": frozenset({"question", "answer"}),
    "support_choice": frozenset({"question", "answer"}),
    "read": frozenset({"question"}),
    "aggregate": frozenset({"goal"}),
    "aggregate_root": frozenset({"goal"}),
    "structure": frozenset({"goal", "schema"}),
    "modify": frozenset({"goal", "plan", "instructions"}),
    "atomize_root": frozenset({"goal"}),
    "outline": frozenset({"goal"}),
    "discover": frozenset({"goal", "max_items"}),
    "answer_find": frozenset({"goal", "section", "find_words"}),
    "overview_title": frozenset(),
    "assemble": frozenset({"goal", "count"}),
    "language": frozenset({"language"}),
    "use_tools": frozenset({"tools"}),
    "tool_result": frozenset({"tool", "result"}),
}


class ReportSize(BaseModel):
    """How large a report is: the parameters of the report templates (``report_lengths:``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sections: int = Field(ge=1, le=12, description="Sections the outline asks for.")
    searches: int = Field(ge=1, le=6, description="What each section must find: searches per section, at most.")
    passages: int = Field(ge=1, le=10, description="Passages each of a section's searches gives its writer.")
    section_words: int = Field(ge=20, le=5000, description="Words of one section, about.")
    summary_words: int = Field(ge=10, le=2000, description="Words of the report's summary, about.")
    overview_quotes: int = Field(
        0, ge=0, le=30, description="Sentences the overview quotes from a search for the whole goal, at most (0: none)."
    )
    search_quotes: int = Field(
        0, ge=0, le=10, description="Sentences each search of a section quotes from its passages, at most (0: none)."
    )

    @property
    def words(self) -> int:
        return self.sections * self.section_words + self.summary_words

    def scaled_to(self, words: int) -> ReportSize:
        """This size with its sections written longer or shorter, so the report has about ``words``."""
        per_section = max(20, round((words - self.summary_words) / self.sections))
        return self.model_copy(update={"section_words": per_section})


class TaskTemplates(BaseModel):
    """The ``tasks:`` of ``agents.yaml``: one template per kind of agent call, with ``$parameters``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    plan: str
    plan_question: str
    atomize: str
    execute_sourced: str
    execute: str
    memory: str
    support: str
    support_choice: str
    read: str
    aggregate: str
    aggregate_root: str
    structure: str
    modify: str
    atomize_root: str
    outline: str
    discover: str
    answer_find: str
    overview_title: str
    assemble: str
    language: str
    use_tools: str
    tool_result: str

    @field_validator("*")
    @classmethod
    def _is_a_template(cls, text: str) -> str:
        if not Template(text).is_valid():
            raise ValueError("not a valid template: write a literal $ as $$")
        return text

    def unknown_parameters(self, lengths: Mapping[str, object]) -> dict[str, list[str]]:
        """Per template, the ``$parameters`` it uses that no call gives it."""
        size = set(ReportSize.model_fields)
        unknown: dict[str, list[str]] = {}
        for name in type(self).model_fields:
            used = Template(getattr(self, name)).get_identifiers()
            extra = sorted(set(used) - TEMPLATE_PARAMETERS.get(name, frozenset()) - set(lengths) - size)
            if extra:
                unknown[name] = extra
        return unknown


def render_instructions(text: str, lengths: Mapping[str, object]) -> str:
    """An agent's instructions with the ``lengths:`` parameters filled in.

    Raises:
        KeyError: the text names a parameter ``lengths`` lacks.
        ValueError: a ``$`` that starts no parameter.
    """
    return Template(text).substitute(lengths)


def unknown_instruction_parameters(text: str, lengths: Mapping[str, object]) -> list[str]:
    """The ``$parameters`` of ``text`` that ``lengths`` does not define."""
    return sorted(set(Template(text).get_identifiers()) - set(lengths))


@dataclass(frozen=True)
class Prompts:
    """The task templates and lengths of ``agents.yaml``, as loaded."""

    templates: TaskTemplates
    lengths: Mapping[str, str | int]
    report_lengths: Mapping[ReportLength, ReportSize]
    tasks_language: str = "en"

    def for_run(self, report_length: ReportLength | int | None, language: str | None = None) -> TaskPrompts:
        """The tasks of one run: its report (if it writes one) of the size ``report_length`` names,
        or of about that many words (the standard size when it is not set), all written in
        ``language`` (a tag such as ``de``; None: the model follows the goal's language)."""
        written_in = _primary(language) == _primary(self.tasks_language)
        return TaskPrompts(
            self.templates, self.lengths, self.report_size(report_length), None if written_in else language
        )

    def report_size(self, report_length: ReportLength | int | None) -> ReportSize:
        if report_length is None:
            return self.report_lengths[ReportLength.STANDARD]
        if isinstance(report_length, ReportLength):
            return self.report_lengths[report_length]
        nearest = min(self.report_lengths.values(), key=lambda size: abs(size.words - report_length))
        return nearest.scaled_to(report_length)


@dataclass(frozen=True)
class TaskPrompts:
    """The task of each agent call of one run."""

    templates: TaskTemplates
    lengths: Mapping[str, str | int]
    size: ReportSize
    language: str | None = None

    def _render(self, name: str, **values: Any) -> str:
        """The task ``name``, then the run's language instruction when it has one."""
        params = {**self.lengths, **self.size.model_dump(), **values}
        task = Template(getattr(self.templates, name)).substitute(params)
        if self.language is None:
            return task
        instruction = Template(self.templates.language).substitute(
            {**self.lengths, "language": language_name(self.language)}
        )
        return f"{task}\n\n{instruction}"

    # -- answers -------------------------------------------------------------------------

    def plan_task(self, node: TaskNode, max_subtasks: int) -> str:
        return self._render("plan", goal=node.goal, max_subtasks=max_subtasks)

    def plan_question_task(self, goal: str) -> str:
        """The planner's task for a question no passage answered as asked
        (:class:`~sentient.agents.schemas.QuestionPlan`)."""
        return self._render("plan_question", goal=goal)

    def atomize_task(self, goal: str, task_type: str) -> str:
        # What makes a task atomic is the atomizer's instructions (agents.yaml): in the system
        # prompt, the embedded model reads them once per run, not once per call (prompt_states).
        return self._render("atomize", goal=goal, task_type=task_type)

    def execute_task(self, node: TaskNode, sourced: bool) -> str:
        """An executor's task. ``sourced``: it answers from the numbered passages it was shown and
        names the one that states the answer (:class:`~sentient.agents.schemas.SourcedAnswer`);
        else it works from the results above and cites them inline as [n]."""
        return self._render("execute_sourced" if sourced else "execute", goal=node.goal)

    def memory_task(self, goal: str) -> str:
        """The task of an executor asked from its own knowledge alone (no sources shown)."""
        return self._render("memory", goal=goal)

    def use_tools_task(self, tools: str) -> str:
        """What follows the task of a model that may call ``tools`` (one line each) before it
        answers (:mod:`sentient.agents.tool_loop`). Not in the run's language: tools are named as they are."""
        return Template(self.templates.use_tools).substitute({**self.lengths, "tools": tools})

    def tool_result_task(self, tool: str, result: str) -> str:
        """The message that gives a model the ``result`` of its call of ``tool`` (:mod:`sentient.agents.tool_loop`)."""
        return Template(self.templates.tool_result).substitute({**self.lengths, "tool": tool, "result": result})

    def support_task(self, question: str, answer: str) -> str:
        """The verifier's task: do the sources listed above (those ``answer`` cites) support it?"""
        return self._render("support", question=question, answer=answer)

    def support_choice_task(self, question: str, answer: str) -> str:
        """The verifier's second reading: which of the sources listed above states ``answer``?"""
        return self._render("support_choice", question=question, answer=answer)

    def read_task(self, question: str) -> str:
        """The verifier's reading of the source above, without being shown the answer it checks:
        what answer to ``question`` does it state? (:class:`~sentient.context.grounding.Reading`)"""
        return self._render("read", question=question)

    def aggregate_task(self, node: TaskNode, is_root: bool) -> str:
        """An aggregator's task: combine the children's results, keeping their citations."""
        return self._render("aggregate_root" if is_root else "aggregate", goal=node.goal)

    def structure_task(self, goal: str, schema: Mapping[str, Any]) -> str:
        """The root aggregator's task in a run with an output schema: the answer above as a JSON
        value of ``schema``, its strings citing [n] (:mod:`sentient.agents.structured`)."""
        return self._render("structure", goal=goal, schema=json.dumps(schema, ensure_ascii=False))

    def modify_task(self, node: TaskNode, plan: PlanOutput | None, instructions: str) -> str:
        current = _render_plan(plan.subtasks) if plan else "(no plan yet)"
        return self._render("modify", goal=node.goal, plan=current, instructions=instructions)

    # -- reports -------------------------------------------------------------------------

    def atomize_root_task(self, goal: str) -> str:
        """The atomizer's task for the root: does the goal ask for a report, else is it one step?"""
        return self._render("atomize_root", goal=goal)

    def outline_task(self, goal: str) -> str:
        """The outliner's task: a report's sections, from a quick search shown above."""
        return self._render("outline", goal=goal)

    def discover_task(self, items: str, max_items: int) -> str:
        """The outliner's task for a fan-out: list the ``items`` the passages above name."""
        return self._render("discover", goal=items, max_items=max_items)

    def answer_find_task(self, find: str, section: str) -> str:
        """A section writer's task: answer ``find``, one of ``section``'s questions, from the
        passages of its search above, in its share of the section's words."""
        words = max(10, round(self.size.section_words / self.size.searches))
        return self._render("answer_find", goal=find, section=section, find_words=words)

    @property
    def overview_title(self) -> str:
        """The heading of a report's overview, the sentences it quotes (one line of ``agents.yaml``;
        not translated into the run's language)."""
        return " ".join(self.templates.overview_title.split())

    def assemble_task(self, goal: str, count: int) -> str:
        """The report aggregator's task: the title and summary of ``count`` sections."""
        return self._render("assemble", goal=goal, count=count)


def _render_plan(subtasks: Sequence[object]) -> str:
    lines = []
    for i, sub in enumerate(subtasks):
        deps = getattr(sub, "depends_on_indices", [])
        after = f" (after {', '.join(map(str, deps))})" if deps else ""
        lines.append(f"{i}. [{getattr(sub, 'task_type', '')}] {getattr(sub, 'goal', '')}{after}")
    return "\n".join(lines)


def _primary(tag: str | None) -> str | None:
    """A language tag's language alone: ``pt`` of ``pt-BR``."""
    return tag.split("-")[0].casefold() if tag else None
