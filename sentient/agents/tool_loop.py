"""The tool loop of a model that decodes under a grammar (the embedded one).

agno runs the tool-call loop of hosted models. A model held to a JSON-schema grammar cannot emit
a provider's tool-call message, so it gets its tools through the grammar instead: at each step it
answers under a schema that is a choice between calling one of its tools, with arguments valid
for that tool (``{"tool": "calculator", "arguments": {...}}``), and giving the call's answer in
its normal output schema. The runner (:class:`~sentient.agents.runner.AgentRunner`) runs the
tool, adds its result to the conversation, and asks again; after ``max_tool_steps`` calls only
the answer is offered.

Only the tools a model's call runs are offered (:meth:`~sentient.tools.toolbox.ToolBox.acting_tools`):
retrieval tools (document and web search) run before the call, with the node's goal, as for every model.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from sentient.agents.json_repair import extract_json
from sentient.tools.base import Tool

_DEFS = "#/$defs/"
NO_TOOL = "none"  # the "tool" of a step that answers


class ToolRequest(BaseModel):
    """One step's call of a tool: its name and its arguments."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any]


def describe_tools(tools: Sequence[Tool]) -> str:
    """The tools as the model is shown them: one line each, its name, what it does and its arguments."""
    return "\n".join(
        f"- {tool.name}: {tool.description} Arguments: {json.dumps(tool.parameters.get('properties', {}))}"
        for tool in tools
    )


def step_schema(tools: Sequence[Tool], answer: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of one step: a call of one of ``tools`` with its arguments, or the ``answer``
    schema. Each schema's ``$defs`` move to the top, renamed apart (a grammar resolves references
    from the top)."""
    defs: dict[str, Any] = {}
    branches: list[dict[str, Any]] = []
    for number, tool in enumerate(tools):
        arguments = _hoisted(tool.parameters, f"tool{number}_", defs)
        branches.append(
            {
                "type": "object",
                "properties": {"tool": {"const": tool.name}, "arguments": arguments},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    answering = _hoisted(answer, "answer_", defs)
    # Every branch starts with "tool": the model decides first whether it calls one ("none": it answers).
    answering["properties"] = {"tool": {"const": NO_TOOL}, **answering.get("properties", {})}
    answering["required"] = ["tool", *answering.get("required", [])]
    branches.append(answering)
    schema: dict[str, Any] = {"anyOf": branches}
    if defs:
        schema["$defs"] = defs
    return schema


def tool_request(raw: str, names: Sequence[str]) -> ToolRequest | str:
    """The tool call ``raw`` makes, or the answer it gives, without its ``"tool": "none"`` (the
    caller validates it as one)."""
    text, _ = extract_json(raw)
    try:
        data = json.loads(text)
    except ValueError:
        return raw
    if isinstance(data, dict) and data.get("tool") == NO_TOOL:
        return json.dumps({key: value for key, value in data.items() if key != "tool"})
    try:
        request = ToolRequest.model_validate(data)
    except ValidationError:
        return raw
    return request if request.tool in names else raw


def _hoisted(schema: dict[str, Any], prefix: str, defs: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without its ``$defs``, which go to ``defs`` named with ``prefix``, every reference renamed."""
    copied = copy.deepcopy(schema)
    own = copied.pop("$defs", {})
    copied.pop("title", None)
    for name, definition in own.items():
        defs[prefix + name] = _renamed(definition, prefix)
    renamed = _renamed(copied, prefix)
    assert isinstance(renamed, dict)
    return renamed


def _renamed(value: Any, prefix: str) -> Any:
    if isinstance(value, dict):
        return {
            key: (
                _DEFS + prefix + item[len(_DEFS) :]
                if key == "$ref" and isinstance(item, str) and item.startswith(_DEFS)
                else _renamed(item, prefix)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_renamed(item, prefix) for item in value]
    return value
