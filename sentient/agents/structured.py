"""The structured answer of a run with an ``output_schema``: the root's finished answer and its
numbered sources, turned by one more call of the root's aggregator into a JSON value that
validates against the user's JSON Schema.

The call asks for the user's schema itself: hosted models get it as their structured-output
format, the embedded model decodes under its grammar. Strings of the value cite the root's
sources as ``[n]``; the markers are taken out of the value and kept per string, by JSON pointer
(:class:`~sentient.structured.CitedValue`). The value without them is checked with ``jsonschema``;
one that does not validate is asked again with the error (the runner's validation retries), and
after the last retry the call fails: an invalid value is never kept.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any, ClassVar

from pydantic import ConfigDict, RootModel, model_validator

from sentient.context.citations import cited_numbers, renumber
from sentient.structured import CitedValue, json_pointer, violation


class StructuredOutput(RootModel[Any]):
    """A JSON value that validates against ``schema`` once its ``[n]`` markers are taken out."""

    schema_: ClassVar[dict[str, Any]] = {}

    @model_validator(mode="after")
    def _validates(self) -> StructuredOutput:
        problem = violation(cited_value(self.root, 0).value, self.schema_)
        if problem is not None:
            raise ValueError(f"the JSON does not match the schema: {problem}")
        return self


def structured_schema(schema: dict[str, Any]) -> type[StructuredOutput]:
    """The output class of a call asked for a value of ``schema``: its JSON schema is ``schema``
    (the format a hosted model is sent, the embedded model's grammar) and it validates against it."""
    return _output_class(json.dumps(schema, sort_keys=True))


@functools.lru_cache(maxsize=16)
def _output_class(schema_text: str) -> type[StructuredOutput]:
    schema = json.loads(schema_text)

    def as_user_wrote_it(generated: dict[str, Any]) -> None:
        generated.clear()
        generated.update(copy.deepcopy(schema))

    config = ConfigDict(title="StructuredOutput", json_schema_extra=as_user_wrote_it)
    return type("StructuredOutput", (StructuredOutput,), {"model_config": config, "schema_": schema})


def cited_value(value: Any, sources: int) -> CitedValue:
    """``value`` with the ``[n]`` markers taken out of its strings, and per string (by JSON
    pointer) the numbers it cited among ``sources`` (0: any number, as when only checking it)."""
    citations: dict[str, list[int]] = {}

    def clean(item: Any, path: tuple[str | int, ...]) -> Any:
        if isinstance(item, str):
            markers = cited_numbers(item)
            if not markers:
                return item
            cited = [n for n in markers if sources == 0 or 1 <= n <= sources]
            if cited:
                citations[json_pointer(path)] = cited
            return renumber(item, {}).strip()
        if isinstance(item, list):
            return [clean(element, (*path, i)) for i, element in enumerate(item)]
        if isinstance(item, dict):
            return {key: clean(element, (*path, key)) for key, element in item.items()}
        return item

    return CitedValue(clean(value, ()), citations)
