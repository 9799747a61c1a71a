"""Structured output: the user's JSON Schema for a run's final answer, checked before the run, and
the values checked against it.

A schema is checked against its metaschema (JSON Schema draft 2020-12, the ``$schema`` it names
otherwise) up front, so a typo fails at once, not after the research. The answer's value is
checked with the same validator after the run (:mod:`sentient.agents.structured`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, SchemaError
from jsonschema.validators import validator_for

from sentient.exceptions import ConfigError


@dataclass(frozen=True)
class CitedValue:
    """A JSON value whose strings cited sources: ``citations`` maps the JSON pointer of each such
    string to the numbers of the sources it cited (the markers are no longer in the value)."""

    value: Any
    citations: dict[str, list[int]]


def schema_problem(schema: object) -> str | None:
    """Why ``schema`` is not a usable JSON Schema for an answer (one line), or None when it is."""
    if not isinstance(schema, dict):
        return f"a JSON Schema must be a JSON object, not {_json_type(schema)}"
    try:
        json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"the schema is not JSON: {exc}"
    validator = validator_for(schema, default=Draft202012Validator)
    try:
        validator.check_schema(schema)
    except SchemaError as exc:
        return f"not a valid JSON Schema: {exc.message} (at {json_pointer(exc.path) or 'the top'})"
    return None


def check_output_schema(schema: object, where: str) -> dict[str, Any]:
    """``schema`` if it is a valid JSON Schema; ConfigError naming ``where`` (a field) otherwise."""
    problem = schema_problem(schema)
    if problem is not None:
        raise ConfigError(f"{problem}.", field=where, fix="correct the schema (see docs/structured-output.md).")
    assert isinstance(schema, dict)
    return schema


def load_output_schema(path: Path) -> dict[str, Any]:
    """The JSON Schema in the file ``path``; ConfigError naming the file when it cannot be read,
    is not JSON or is not a valid JSON Schema."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the output schema: {exc.strerror or exc}.", file=str(path)) from None
    except UnicodeDecodeError:
        raise ConfigError("the output schema is not UTF-8 text.", file=str(path)) from None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"the output schema is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.", file=str(path)
        ) from None
    problem = schema_problem(schema)
    if problem is not None:
        raise ConfigError(f"{problem}.", file=str(path), fix="correct the schema (see docs/structured-output.md).")
    return dict(schema)


def violation(value: Any, schema: dict[str, Any]) -> str | None:
    """Why ``value`` does not validate against ``schema`` (the first error, one line), or None."""
    validator = validator_for(schema, default=Draft202012Validator)(schema)
    error = next(iter(sorted(validator.iter_errors(value), key=lambda e: list(e.path))), None)
    if error is None:
        return None
    return f"{error.message} (at {json_pointer(error.path) or 'the top'})"


def json_pointer(path: Any) -> str:
    """A JSON pointer (RFC 6901) of a path of keys and indexes."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _json_type(value: object) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
