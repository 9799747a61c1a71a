"""A tool's arguments, derived from a Python signature: the JSON schema the model is offered and
the check of what the model sends.

A function's keyword parameters become the fields of a pydantic model (write
``Annotated[int, Field(description=..., ge=1)]`` for a description or limits); a function whose
only parameter is typed with a pydantic model takes that model's fields instead. The model's
JSON schema is what the model is offered, and validating the model's arguments against it (lax:
``"5"`` is 5) is the check before every call. Built-in tools and your own callables both come
through here.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import ErrorDetails

from sentient.exceptions import ToolError


class Arguments:
    """The arguments of one callable: ``schema`` (JSON schema) and ``check`` (validation).

    Build it with :meth:`of`; it raises TypeError for a signature a model cannot call with a
    JSON object (``*args``, ``**kwargs``, positional-only parameters).
    """

    def __init__(self, model: type[BaseModel], *, wrapped: str | None = None) -> None:
        self._model = model
        self._wrapped = wrapped  # the parameter that takes the whole model, if the callable has one
        self.schema: dict[str, Any] = _tidy(model.model_json_schema())

    @classmethod
    def of(cls, func: Callable[..., Any]) -> Arguments:
        """The arguments of ``func`` (a function, or a method: ``self`` is left out)."""
        return _arguments_of(func)

    @property
    def names(self) -> list[str]:
        return list(self._model.model_fields)

    def check(self, tool: str, arguments: object) -> dict[str, Any]:
        """The keyword arguments to call with; a ToolError naming ``tool`` and what is wrong."""
        if not isinstance(arguments, dict):
            raise ToolError(f"{tool} takes a JSON object of arguments, not {type(arguments).__name__}")
        try:
            value = self._model.model_validate(arguments)
        except ValidationError as exc:
            raise ToolError("; ".join(self._explain(tool, error) for error in exc.errors())) from None
        if self._wrapped is not None:
            return {self._wrapped: value}
        return {name: getattr(value, name) for name in self._model.model_fields}

    def _explain(self, tool: str, error: ErrorDetails) -> str:
        name = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        if error["type"] == "missing":
            return f"{tool} needs the argument {name}"
        if error["type"] == "extra_forbidden":
            return f"{tool} got the unknown argument {name}; it takes {', '.join(self.names) or 'none'}"
        return f"{tool}: argument {name}: {error['msg']}"


@functools.cache
def _arguments_of(func: Callable[..., Any]) -> Arguments:
    signature = inspect.signature(func)
    hints = typing.get_type_hints(func, include_extras=True)
    parameters = [
        p for p in signature.parameters.values() if not (p.name == "self" and p.kind is p.POSITIONAL_OR_KEYWORD)
    ]
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD, parameter.POSITIONAL_ONLY):
            raise TypeError(f"parameter {parameter.name!r} cannot be given by name: use named parameters only")
    name = getattr(func, "__name__", "tool")
    if len(parameters) == 1:
        hint = hints.get(parameters[0].name)
        if isinstance(hint, type) and issubclass(hint, BaseModel):
            return Arguments(hint, wrapped=parameters[0].name)
    fields: dict[str, Any] = {
        p.name: (hints.get(p.name, Any), ... if p.default is p.empty else p.default) for p in parameters
    }
    model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    return Arguments(model)


def _tidy(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without pydantic's generated titles, which only repeat the names."""
    schema.pop("title", None)
    for field in schema.get("properties", {}).values():
        if isinstance(field, dict):
            field.pop("title", None)
    return schema
