"""Model strings (``openai:gpt-4o-mini``, ``ollama:llama3.1:8b`` …): which provider and model
they name. The agno models of the hosted providers are built by :mod:`sentient.agents.models.hosted`,
which imports their SDKs: only a run that uses one pays for that import.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agno.models.base import Model
from pydantic import BaseModel

from sentient.agents.models.weights import EMBEDDED_WEIGHTS
from sentient.exceptions import ConfigError


class Provider(StrEnum):
    LOCAL = "local"  # the embedded GGUF model, in process
    SCRIPTED = "scripted"  # the scripted fake: a dry run, no model at all
    OPENAI = "openai"  # api.openai.com
    ANTHROPIC = "anthropic"  # api.anthropic.com
    OPENROUTER = "openrouter"  # openrouter.ai, OpenAI-style API
    OLLAMA = "ollama"  # an Ollama server (local by default)
    OPENAI_COMPATIBLE = "openai-compatible"  # any server speaking the OpenAI chat API (vLLM, llama.cpp…)


IN_PROCESS = frozenset({Provider.LOCAL, Provider.SCRIPTED})
REMOTE = frozenset(Provider) - IN_PROCESS

FORMS = (
    "local",
    "local:qwen2.5-coder-0.5b",
    "local:qwen2.5-coder-1.5b",
    "scripted",
    "openai:MODEL",
    "anthropic:MODEL",
    "openrouter:MODEL",
    "ollama:MODEL",
    "openai-compatible:http(s)://HOST[:PORT][/PATH]:MODEL",
)

# scheme://host[:port][/path], then ':' and the model id (which may itself contain ':'). The port
# and path are possessive so that "http://h:8000/v1" alone is rejected, not read as model "8000/v1".
_COMPATIBLE = re.compile(r"^(?P<url>https?://[^/:\s]+(?::\d+)?+(?:/[^:\s]*)?+):(?P<model>\S+)$")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model string. ``text`` is the string as written (it keys prices)."""

    provider: Provider
    model_id: str
    base_url: str | None
    text: str


def parse_model_string(text: str) -> ModelSpec:
    """Parse a model string; anything else raises ConfigError naming field ``model``."""
    value = text.strip()
    if value in IN_PROCESS:
        return ModelSpec(Provider(value), value, None, value)
    prefix, sep, rest = value.partition(":")
    if prefix == Provider.LOCAL:
        if rest not in EMBEDDED_WEIGHTS:
            raise _bad_model(text, f"no embedded model '{rest}' (there are: {', '.join(EMBEDDED_WEIGHTS)})")
        return ModelSpec(Provider.LOCAL, rest, None, value)
    if not sep or prefix not in REMOTE:
        raise _bad_model(text, "unknown provider")
    provider = Provider(prefix)
    if provider is Provider.OPENAI_COMPATIBLE:
        match = _COMPATIBLE.match(rest)
        if match is None:
            raise _bad_model(text, "expected a base URL and a model id")
        return ModelSpec(provider, match["model"], match["url"].rstrip("/"), value)
    if not rest or any(ch.isspace() for ch in rest):
        raise _bad_model(text, "missing or malformed model id")
    return ModelSpec(provider, rest, None, value)


def _bad_model(text: str, why: str) -> ConfigError:
    return ConfigError(
        f"cannot use model '{text}': {why}.",
        field="model",
        fix=f"use one of: {', '.join(FORMS)}.",
    )


def response_format_for(model: Model, schema: type[BaseModel]) -> dict[str, Any] | type[BaseModel]:
    """The structured-output request that ``model``'s agno class understands for ``schema``.

    OpenAI-style APIs take a ``json_schema`` dict (not strict: fields with defaults stay optional).
    agno's Claude would send such a dict unchanged as Anthropic's differently shaped
    ``output_format``, and its Ollama ignores dicts: both get the pydantic class and convert it
    (their classes in :mod:`~sentient.agents.models.hosted` say so with ``takes_schema_class``).
    """
    if getattr(model, "takes_schema_class", False):
        return schema
    return _json_schema_format(schema)


def schema_name(schema: type[BaseModel]) -> str:
    """The name a model is asked for ``schema`` by: its title (a PlanReply is asked for as a PlanOutput)."""
    return schema.model_config.get("title") or schema.__name__


@functools.lru_cache(maxsize=64)
def _json_schema_format(schema: type[BaseModel]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": schema_name(schema), "schema": schema.model_json_schema()}}
