"""Model strings (``openai:gpt-4o-mini``, ``ollama:llama3.1:8b`` …) and the agno models they name.

The SDK clients are built with their own retries off (``max_retries=0``): the retry policy is
:func:`sentient.agents.models.resilience.call_with_retries`, which sees every attempt.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from agno.exceptions import ModelProviderError
from agno.models.anthropic import Claude
from agno.models.base import Model
from agno.models.ollama import Ollama
from agno.models.openai import OpenAIChat
from agno.models.openai.like import OpenAILike
from agno.models.openrouter import OpenRouter
from agno.models.response import ModelResponse
from pydantic import BaseModel

from sentient.agents.models.weights import EMBEDDED_WEIGHTS
from sentient.exceptions import ConfigError, MalformedResponseError

if TYPE_CHECKING:
    from sentient.agents.models.catalog import ModelCatalog


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


class _KeepsSdkError(Model):
    """Keeps the SDK error under agno's rate-limit error, and names malformed answers.

    agno's retry wrapper turns a 429 ``ModelProviderError`` into a new ``ModelRateLimitError``
    without a cause, which loses the HTTP response and its ``Retry-After`` header. Classifying
    here, with ``raise … from``, keeps the chain; agno passes an already classified error on.

    An HTTP 200 that carries no usable completion (no ``choices``, a choice without its
    message, a body that is not JSON) would otherwise surface as an ``IndexError`` or
    ``AttributeError`` deep in agno's parsing; it becomes a :class:`MalformedResponseError`,
    which the retry policy treats like a 502.
    """

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        try:
            return await super().ainvoke(*args, **kwargs)  # type: ignore[safe-super]
        except ModelProviderError as exc:
            malformed = _malformed(exc)
            if malformed is not None:
                raise malformed from exc
            classified = ModelProviderError.classify(exc)
            if classified is exc:
                raise
            raise classified from exc

    def _parse_provider_response(self, response: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        choices = getattr(response, "choices", None)
        if not choices:
            raise MalformedResponseError(f"the provider answered without choices (choices={choices!r})")
        if getattr(choices[0], "message", None) is None:
            raise MalformedResponseError("the provider's first choice has no message")
        return super()._parse_provider_response(response, *args, **kwargs)  # type: ignore[safe-super]


def _malformed(exc: BaseException) -> MalformedResponseError | None:
    """The malformed-answer error under ``exc`` (agno wraps everything in ModelProviderError), if any."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, MalformedResponseError):
            return link
        if isinstance(link, json.JSONDecodeError):
            return MalformedResponseError(f"the provider's response body is not JSON ({link.msg} at {link.pos})")
        link = link.__cause__ or link.__context__
    return None


@dataclass
class _OpenAIChat(_KeepsSdkError, OpenAIChat):
    pass


@dataclass
class _OpenRouter(_KeepsSdkError, OpenRouter):
    pass


@dataclass
class _OpenAILike(_KeepsSdkError, OpenAILike):
    pass


# openai-compatible servers need some key in the header even when they check none.
_NO_KEY = "not-needed"


def build_model(spec: ModelSpec, catalog: ModelCatalog, *, timeout_s: float) -> Model:
    """The agno model for a remote ``spec``; credentials are checked first (ConfigError if missing).

    ``local`` and ``scripted`` are built by the model factory, not here.
    """
    if spec.provider in IN_PROCESS:
        raise ValueError(f"build_model does not build in-process models ({spec.text})")
    catalog.check_credentials(spec)
    config = catalog.provider(spec.provider)
    key = catalog.api_key(spec)
    base_url = spec.base_url or config.base_url
    if spec.provider is Provider.OPENAI:
        return _OpenAIChat(id=spec.model_id, api_key=key, base_url=base_url, timeout=timeout_s, max_retries=0)
    if spec.provider is Provider.OPENROUTER:
        model = _OpenRouter(id=spec.model_id, api_key=key, timeout=timeout_s, max_retries=0)
        if base_url:
            model.base_url = base_url
        # agno's OpenRouter caps answers at 1024 tokens; let the model decide, like the others.
        model.max_tokens = None  # type: ignore[assignment]
        return model
    if spec.provider is Provider.OPENAI_COMPATIBLE:
        return _OpenAILike(
            id=spec.model_id, api_key=key or _NO_KEY, base_url=base_url, timeout=timeout_s, max_retries=0
        )
    if spec.provider is Provider.ANTHROPIC:
        client_params: dict[str, Any] = {"max_retries": 0}
        if base_url:
            client_params["base_url"] = base_url
        return Claude(id=spec.model_id, api_key=key, timeout=timeout_s, client_params=client_params)
    # Ollama's client does not retry; the key (for ollama.com) is passed only when configured.
    return Ollama(id=spec.model_id, host=base_url, api_key=key, timeout=timeout_s)


def response_format_for(model: Model, schema: type[BaseModel]) -> dict[str, Any] | type[BaseModel]:
    """The structured-output request that ``model``'s agno class understands for ``schema``.

    OpenAI-style APIs take a ``json_schema`` dict (not strict: fields with defaults stay optional).
    agno's Claude would send such a dict unchanged as Anthropic's differently shaped
    ``output_format``, and its Ollama ignores dicts: both get the pydantic class and convert it.
    """
    if isinstance(model, Claude | Ollama):
        return schema
    return _json_schema_format(schema)


@functools.lru_cache(maxsize=64)
def _json_schema_format(schema: type[BaseModel]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()}}
