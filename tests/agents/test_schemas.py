"""The structured outputs agents are asked for."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sentient.agents.schemas import (
    AggregationOutput,
    CitedAnswers,
    ExecutionOutput,
    Outline,
    SourcedAnswer,
    cited_schema,
    outline_schema,
    sourced_schema,
)


def test_a_sourced_answer_can_only_name_a_passage_it_was_shown_or_none() -> None:
    schema = sourced_schema(3)
    asked = schema.model_json_schema()
    assert asked["properties"]["source"]["enum"] == [0, 1, 2, 3]
    # The answer first, its few words, then which passage states it; all written under a grammar.
    assert asked["required"] == ["answer", "short", "source"]
    assert isinstance(schema.model_validate({"answer": "They grow.", "source": 2}), SourcedAnswer)
    with pytest.raises(ValidationError):
        schema.model_validate({"answer": "They grow.", "source": 4})


@pytest.mark.parametrize("schema", [ExecutionOutput, AggregationOutput, sourced_schema(2)])
@pytest.mark.parametrize("answer", ["[2]", " [1][2]. ", "[1, 2]"])
def test_an_answer_that_is_only_a_citation_number_does_not_validate(schema, answer: str) -> None:
    with pytest.raises(ValidationError, match="only a citation number"):
        schema.model_validate({"answer": answer, "source": 1})


@pytest.mark.parametrize("answer", ["//", ":=", "+"])
def test_an_operator_is_an_answer(answer: str) -> None:
    assert ExecutionOutput.model_validate({"answer": answer}).answer == answer


def test_a_blank_answer_does_not_validate() -> None:
    with pytest.raises(ValidationError, match="the answer is empty"):
        ExecutionOutput.model_validate({"answer": "  "})


def test_an_answer_in_any_script_validates() -> None:
    assert ExecutionOutput.model_validate({"answer": "生成器 [1]"}).answer == "生成器 [1]"


def test_a_report_question_gets_one_answer_per_part_each_naming_only_passages_shown() -> None:
    schema = cited_schema(3, parts=2)
    one = {"answer": "In the old town.", "sources": [1]}
    assert isinstance(schema.model_validate({"answers": [one, {"answer": "", "sources": []}]}), CitedAnswers)
    with pytest.raises(ValidationError):  # a part left unanswered: a grammar would not let it be
        schema.model_validate({"answers": [one]})
    with pytest.raises(ValidationError):
        schema.model_validate({"answers": [one, {"answer": "In 2016.", "sources": [4]}]})


def test_an_outline_under_a_grammar_has_one_to_the_sizes_sections_each_finding_at_most_its_searches() -> None:
    schema = outline_schema(sections=2, searches=1)
    section = {"title": "Sites", "find": ["Where are the depots?"]}
    assert isinstance(schema.model_validate({"for_each": "", "each": [], "sections": [section]}), Outline)
    # A fan-out's outline has sections too (they are not used): an outline of nothing is not one.
    for sections in ([], [section] * 3, [{"title": "Sites", "find": ["Where?", "Since when?"]}]):
        with pytest.raises(ValidationError):
            schema.model_validate({"for_each": "depot", "each": ["where"], "sections": sections})
