"""Your own Python callables as tools (``tools: [{callable: "mypkg.tools:lookup"}]`` in agents.yaml).

The callable's keyword parameters, or its one pydantic-model parameter, are its arguments
(:mod:`sentient.tools.arguments`); its docstring is its description. It may be a plain or an
``async`` function: a plain one runs in a thread. It returns text, anything JSON can hold, or a
:class:`~sentient.tools.base.ToolOutput` with sources of its own; otherwise the call itself is the
source the model cites (``python:mypkg.tools:lookup?id=42``). An exception it raises is a failed
call the model is told about, not a failed run.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
from collections.abc import Callable
from typing import Any

from pydantic_core import to_jsonable_python

from sentient.exceptions import ToolError
from sentient.tools.arguments import Arguments
from sentient.tools.base import ToolOutput, call_source


def load_callable(path: str) -> Callable[..., Any]:
    """The callable ``path`` ('module:attribute') names; ValueError saying why it cannot be used."""
    module_name, _, attribute = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name}: {exc}") from None
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValueError(f"{module_name} has no {attribute}") from None
    if not callable(target):
        raise ValueError(f"{path} is a {type(target).__name__}, not a function")
    try:
        Arguments.of(target)
    except (TypeError, ValueError, NameError) as exc:
        raise ValueError(f"{path} cannot be a tool: {exc}") from None
    func: Callable[..., Any] = target
    return func


class FunctionTool:
    """A Python callable as a tool.

    Args:
        func: the callable.
        path: where it comes from ('module:function'), for its sources.
        name: the name the model calls it by; default: the callable's ``__name__``.
    """

    def __init__(self, func: Callable[..., Any], path: str, name: str | None = None) -> None:
        self._func = func
        self._path = path
        self._arguments = Arguments.of(func)
        self.name: str = name or func.__name__
        self.description: str = inspect.getdoc(func) or f"The {self.name} tool."

    @property
    def parameters(self) -> dict[str, Any]:
        return self._arguments.schema

    def check(self, arguments: object) -> dict[str, Any]:
        return self._arguments.check(self.name, arguments)

    async def run(self, **arguments: Any) -> ToolOutput:
        try:
            if inspect.iscoroutinefunction(self._func):
                result = await self._func(**arguments)
            else:
                result = await asyncio.to_thread(self._func, **arguments)
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(f"{self.name} failed: {type(exc).__name__}: {exc}") from exc
        if isinstance(result, ToolOutput):
            return result
        text = result if isinstance(result, str) else json.dumps(to_jsonable_python(result), ensure_ascii=False)
        return ToolOutput(text=text, sources=[call_source(f"python:{self._path}", self.name, arguments, text)])
