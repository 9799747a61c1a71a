"""The structured answer's output class: it asks for the user's schema itself (so the embedded
model's grammar is built from it), checks values against it, and turns [n] markers into citations."""

from __future__ import annotations

import json
from typing import Any

import pytest
from llama_cpp.llama_grammar import LlamaGrammar
from pydantic import ValidationError

from sentient.agents.models.embedded import schema_from_response_format
from sentient.agents.models.fake import ScriptedModel
from sentient.agents.models.providers import response_format_for
from sentient.agents.structured import cited_value, structured_schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "kind": {"enum": ["list", "tuple"]},
        "years": {"type": "array", "items": {"type": "integer"}},
        "facts": {"type": "array", "items": {"type": "object", "properties": {"text": {"type": "string"}}}},
    },
    "required": ["name", "kind"],
}


def test_the_embedded_models_grammar_is_built_from_the_users_schema() -> None:
    output = structured_schema(SCHEMA)

    asked = schema_from_response_format(response_format_for(ScriptedModel(), output))

    assert asked == SCHEMA
    grammar = LlamaGrammar.from_json_schema(json.dumps(asked), verbose=False)
    assert 'kind ::= "\\"list\\"" | "\\"tuple\\""' in grammar._grammar  # the enum is a rule of the grammar


def test_a_value_is_checked_without_its_markers() -> None:
    output = structured_schema(SCHEMA)

    # "Python list" is 11 characters: it fits maxLength once its marker is out.
    assert output.model_validate_json('{"name": "Python list [1]", "kind": "list"}').root["kind"] == "list"
    with pytest.raises(ValidationError, match=r"'set' is not one of \['list', 'tuple'\] \(at /kind\)"):
        output.model_validate_json('{"name": "x", "kind": "set"}')


def test_each_string_keeps_the_sources_it_cites_by_json_pointer() -> None:
    value = {"name": "lists [1]", "kind": "list", "years": [1991, 2008], "facts": [{"text": "grow [2, 3] [9]"}]}

    cited = cited_value(value, sources=3)

    assert cited.value == {"name": "lists", "kind": "list", "years": [1991, 2008], "facts": [{"text": "grow"}]}
    assert cited.citations == {"/name": [1], "/facts/0/text": [2, 3]}  # [9] names no source: dropped
