"""The structured outputs agents are asked for."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sentient.agents.schemas import AggregationOutput, ExecutionOutput, SourcedAnswer, sourced_schema


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


def test_an_answer_in_any_script_validates() -> None:
    assert ExecutionOutput.model_validate({"answer": "生成器 [1]"}).answer == "生成器 [1]"
