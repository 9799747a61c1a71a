"""The structured outputs agents are asked for."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sentient.agents.schemas import ExecutionOutput, quoting_schema


def test_a_quoting_schema_offers_only_the_sentences_shown_and_asks_for_the_evidence_first() -> None:
    shown = (
        "Lists grow with append().",
        'Tuples are "immutable".',
        "A path like C:\\temp.",
        "Lists grow with append().",
    )
    schema = quoting_schema(shown)

    asked = schema.model_json_schema()
    # Once each; '"' becomes "'" and a backslash leaves the sentence out (llama.cpp's grammar breaks on them).
    assert asked["$defs"]["Citation"]["properties"]["quote"]["enum"] == [
        "Lists grow with append().",
        "Tuples are 'immutable'.",
    ]
    assert asked["required"] == ["citations", "answer"]
    reply = {"citations": [{"source": 1, "quote": "Lists grow with append()."}], "answer": "They grow [1]."}
    assert isinstance(schema.model_validate(reply), ExecutionOutput)
    with pytest.raises(ValidationError):
        schema.model_validate({"citations": [{"source": 1, "quote": "Lists grow."}], "answer": "They grow [1]."})


def test_with_no_sentence_to_offer_the_plain_schema_is_asked() -> None:
    assert quoting_schema([]) is ExecutionOutput
    assert quoting_schema(["C:\\temp"]) is ExecutionOutput
