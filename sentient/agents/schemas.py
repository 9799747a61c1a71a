"""Structured agent outputs. Every agent answers with one of these; anything else is retried.

Planners and plan modifiers answer with a plan, whose vocabulary lives in :mod:`sentient.graph.plan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from sentient.graph.plan import PlanOutput, SubTask


class AtomizerOutput(BaseModel):
    """Whether a goal is small enough to be executed directly."""

    is_atomic: bool = Field(description="true if one executor can do this directly, false if it needs a plan.")


class Citation(BaseModel):
    """Evidence for an answer: which source, and words copied exactly from it."""

    source: int = Field(description="The number n of the source, as in [n].")
    quote: str = Field(min_length=1, description="A short phrase copied word for word from that source.")


class ExecutionOutput(BaseModel):
    """An executor's answer. ``citations`` come first so the model picks its evidence, then answers
    from it; each quote is checked against its source in code (sentient.context.grounding).

    The schema a model is given requires both fields: grammar-constrained decoding emits required
    properties first, which would put the answer before its evidence.
    """

    model_config = ConfigDict(json_schema_extra={"required": ["citations", "answer"]})

    citations: list[Citation] = Field(default_factory=list, max_length=4)
    answer: str = Field(min_length=1)


def quoting_schema(quotes: Sequence[str]) -> type[ExecutionOutput]:
    """``ExecutionOutput`` whose quotes must be one of ``quotes`` (the sentences of the sources shown).

    Given to a model decoded under a grammar (the embedded one) when it is asked to quote first
    (a second look), it can only copy a real sentence: small models otherwise "quote" their own
    restatement of the answer, or a sentence they make up, which no source contains. Its answer
    is then written after the evidence it picked. Its output validates as ``ExecutionOutput``.
    """
    # llama-cpp-python's grammar converter does not escape backslashes, so a value holding '"' or
    # '\\' breaks the grammar (and llama.cpp then decodes unconstrained): such sentences are offered
    # with single quotes, or not at all. Quotes are compared without punctuation, so they still verify.
    offered = tuple(dict.fromkeys(q.replace('"', "'") for q in quotes if "\\" not in q))
    if not offered:
        return ExecutionOutput
    quote: Any = Literal[offered]
    citation = create_model(
        "Citation", __base__=Citation, quote=(quote, Field(description="A sentence copied from that source."))
    )
    return create_model(
        "ExecutionOutput",
        __base__=ExecutionOutput,
        citations=(list[citation], Field(default_factory=list, max_length=4)),
    )


# This docstring is the model's JSON-schema description, which is part of every response-cache
# key: it is kept as it was when cite_by_evidence moved to sentient.context.evidence, so cached
# answers (and eval replays) stay valid.
class AnswerOutput(BaseModel):
    """An executor's answer on a model decoded under a grammar (the embedded one): the answer
    alone, citing sources with [n]. Small models answer better from a plain "answer from these
    sources" request than when they must pick quotes first; each citation is then checked in
    code against what the cited source states (sentient.context.grounding.cite_by_evidence)."""

    answer: str = Field(min_length=1)


class AggregationOutput(BaseModel):
    """An aggregator's synthesis of its children's results, citing sources with [n]."""

    answer: str = Field(min_length=1)


# A planner's reply. Its schema is PlanOutput's, so a model is asked for two or more subtasks (the
# embedded model's grammar enforces it) and cached replies still match; a reply of one subtask is
# accepted too: one stopped as soon as it listed the goal itself, which splits nothing (the goal is
# executed directly: sentient.agents.plans.lists_goal).
class PlanReply(PlanOutput):
    """A plan: the subtasks that together achieve the parent goal."""

    model_config = ConfigDict(title="PlanOutput")

    subtasks: list[SubTask] = Field(min_length=1, max_length=12, json_schema_extra={"minItems": 2})
