"""Structured agent outputs. Every agent answers with one of these; anything else is retried.

Planners and plan modifiers answer with a plan, whose vocabulary lives in :mod:`sentient.graph.plan`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model

from sentient.context.citations import cited_numbers, renumber
from sentient.graph.plan import PlanOutput, SubTask


def _every_field_required(schema: dict[str, Any]) -> None:
    """A model asked under a grammar writes every field, defaults too."""
    schema["required"] = list(schema.get("properties", {}))


class AtomizerOutput(BaseModel):
    """Whether a goal is small enough to be executed directly."""

    is_atomic: bool = Field(description="true if one executor can do this directly, false if it needs a plan.")


def _says_something(answer: str) -> str:
    """An answer must state something besides citation markers: "[2]" alone names no fact, but an
    operator does ("//", ":=" answer "which operator…")."""
    rest = renumber(answer, {})
    if cited_numbers(answer) and not any(ch.isalnum() for ch in rest):
        raise ValueError("the answer is only a citation number: write the answer itself (the name, number or value)")
    if not rest.strip():
        raise ValueError("the answer is empty: write the answer itself (the name, number or value)")
    return answer


Answer = Annotated[str, Field(min_length=1), AfterValidator(_says_something)]


class ExecutionOutput(BaseModel):
    """An executor's answer that cites the numbered results or sources it was given as [n]."""

    answer: Answer


class SourcedAnswer(BaseModel):
    """An executor's answer to a task from the numbered passages it was shown, its few key words
    (``short``), and which passage states it: 0 when none does, so the answer comes from the
    model's own knowledge. The verifier then reads that passage, and the passage must hold the
    key words for its citation to be shown as verified (sentient.context.grounding)."""

    model_config = ConfigDict(json_schema_extra=_every_field_required)

    answer: Answer = Field(description="The answer in words, without citation numbers.")
    short: str = Field(
        "", description="The answer itself in a few words (a name, number, date or term), as the source writes it."
    )
    source: int = Field(ge=0, description="The number n of the passage that states the answer; 0 if none does.")


def sourced_schema(count: int) -> type[SourcedAnswer]:
    """``SourcedAnswer`` whose ``source`` can only be 0 or one of ``count`` passages (a model
    decoded under a grammar cannot name a passage it was not shown)."""
    allowed: Any = Literal[tuple(range(count + 1))]
    return create_model(
        "SourcedAnswer",
        __base__=SourcedAnswer,
        source=(allowed, Field(description="The number n of the passage that states the answer; 0 if none does.")),
    )


class AggregationOutput(BaseModel):
    """An aggregator's synthesis of its children's results, citing sources with [n]."""

    answer: Answer


# A planner's reply. Its schema is PlanOutput's, so a model is asked for two or more subtasks (the
# embedded model's grammar enforces it) and cached replies still match; a reply of one subtask is
# accepted too: one stopped as soon as it listed the goal itself, which splits nothing (the goal is
# executed directly: sentient.agents.plans.lists_goal).
class PlanReply(PlanOutput):
    """A plan: the subtasks that together achieve the parent goal."""

    model_config = ConfigDict(title="PlanOutput")

    subtasks: list[SubTask] = Field(min_length=1, max_length=12, json_schema_extra={"minItems": 2})


SLOT = "X"  # where a question plan's second question names what its first lookup finds


class QuestionPlan(BaseModel):
    """A question that no passage answered as asked, planned as two lookups: what must be looked
    up first (what the question refers to without naming it), then the question about that, with
    :data:`SLOT` where what the first lookup finds goes (ReWOO's plan variables). Code fills the
    slot, so the second lookup is asked as one question without another call.

    The small planner, asked for a list of subtasks, lists the question itself first; asked to
    repeat it and then name the lookup it needs, it writes that lookup."""

    model_config = ConfigDict(json_schema_extra=_every_field_required)

    question: str = Field(description="The question, as asked.")
    first: str = Field(min_length=1, description="The question to look up first: the one that finds what it refers to.")
    then: str = Field(
        min_length=1, description=f"The question again, with {SLOT} in place of what the first lookup finds."
    )


# -- reports -------------------------------------------------------------------------------


class RootAtomizerOutput(BaseModel):
    """The atomizer's verdict on the root goal: whether it asks for a report, else whether it is one step."""

    model_config = ConfigDict(title="AtomizerOutput", json_schema_extra=_every_field_required)

    is_report: bool = Field(
        False,
        description="true if the goal asks for a report, an overview, a briefing or a comparison: a document "
        "of several sections; false for a question or a task.",
    )
    is_atomic: bool = Field(description="true if one executor can do this directly, false if it needs a plan.")


class OutlineSection(BaseModel):
    """One section of a report's outline."""

    model_config = ConfigDict(json_schema_extra=_every_field_required)

    title: str = Field(min_length=1, description="The section's title.")
    find: list[str] = Field(min_length=1, description="What the section must find: one short question per search.")


_FOR_EACH = (
    "When the goal asks for the same facts about every item of a kind (each incident, each service): those "
    "items, in the goal's words. Empty otherwise."
)
_EACH = "The facts the goal asks for about each of those items, one short phrase each. Empty without items."
_SECTIONS = "The report's sections in order: for what the goal asks beyond those items, or for all of it."


class Outline(BaseModel):
    """A report's outline: the items it covers one by one, if the goal asks the same of each, and
    its other sections in order."""

    model_config = ConfigDict(json_schema_extra=_every_field_required)

    for_each: str = Field("", description=_FOR_EACH)
    each: list[str] = Field(default_factory=list, description=_EACH)
    sections: list[OutlineSection] = Field(default_factory=list, description=_SECTIONS)


MAX_FACTS_EACH = 12  # facts asked about each item of a fan-out, at most


def outline_schema(sections: int, searches: int) -> type[Outline]:
    """``Outline`` of one to ``sections`` sections that each find at most ``searches`` things (a
    model decoded under a grammar cannot write more, nor an outline of nothing: a fan-out's
    sections are not used, and the embedded model stops after the first, but a goal that is not
    one is written as one search without them)."""
    section = create_model(
        "OutlineSection",
        __base__=OutlineSection,
        find=(
            list[str],
            Field(min_length=1, max_length=searches, description=OutlineSection.model_fields["find"].description),
        ),
    )
    return create_model(
        "Outline",
        __base__=Outline,
        each=(list[str], Field(max_length=MAX_FACTS_EACH, description=_EACH)),
        sections=(list[section], Field(min_length=1, max_length=sections, description=_SECTIONS)),
    )


class Items(BaseModel):
    """The items a fan-out covers, as the passages name them."""

    items: list[str] = Field(description="Each item the passages name, once, in their words.")


def items_schema(max_items: int) -> type[Items]:
    """``Items`` of at most ``max_items`` items."""
    return create_model(
        "Items",
        __base__=Items,
        items=(list[str], Field(max_length=max_items, description=Items.model_fields["items"].description)),
    )


class ReportFrame(BaseModel):
    """What the report's aggregator writes around the sections: they are assembled as written."""

    model_config = ConfigDict(json_schema_extra=_every_field_required)

    title: str = Field(min_length=1, description="The report's title, one line.")
    summary: Answer = Field(description="A short, direct summary of what the sections found.")


class CitedAnswer(BaseModel):
    """The answer to one part of a report section's question from the numbered passages shown,
    its key words (``keys``), and the passages that state it: none when they do not answer it
    (then it is left out). Only a passage that holds the answer or its key words stays cited
    (sentient.context.grounding)."""

    model_config = ConfigDict(json_schema_extra=_every_field_required)

    answer: str = Field(
        description="The answer in words, without citation numbers; empty if the sources do not answer it."
    )
    keys: list[str] = Field(
        default_factory=list,
        description="The names, numbers, dates or terms the answer states, each exactly as the source writes it.",
    )
    sources: list[int] = Field(description="The numbers of the sources that state the answer; empty if none does.")


class CitedAnswers(BaseModel):
    """The answers to a report section's question, one per part it asks, in order."""

    answers: list[CitedAnswer] = Field(description="One answer per part of the question, in order.")


def cited_schema(count: int, parts: int) -> type[CitedAnswers]:
    """``CitedAnswers`` with one answer per part of the question (``parts``), naming only
    sources 1..``count`` (the ones shown): a model decoded under a grammar answers every part."""
    answer = create_model(
        "CitedAnswer",
        __base__=CitedAnswer,
        sources=(_numbers(count), Field(description=CitedAnswer.model_fields["sources"].description)),
    )
    return create_model(
        "CitedAnswers",
        __base__=CitedAnswers,
        answers=(
            list[answer],
            Field(min_length=parts, max_length=parts, description=CitedAnswers.model_fields["answers"].description),
        ),
    )


def _numbers(count: int) -> Any:
    """A list of source numbers, each one of the ``count`` shown."""
    allowed: Any = Literal[tuple(range(1, count + 1))]
    return list[allowed]
