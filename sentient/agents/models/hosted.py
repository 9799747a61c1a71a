"""The agno models of hosted providers (OpenAI, OpenRouter, OpenAI-compatible servers, Anthropic,
Ollama), built from a parsed model string.

This module imports the providers' SDKs, which takes seconds. It is imported only for a hosted
model, when the researcher that uses one is checked (``ModelFactory.check``, before its run), so
an offline run on the embedded model never loads them. The SDK clients are
built with their own retries off (``max_retries=0``): the retry policy is
:func:`sentient.agents.models.resilience.call_with_retries`, which sees every attempt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from agno.exceptions import ModelProviderError
from agno.models.anthropic import Claude
from agno.models.base import Model
from agno.models.ollama import Ollama
from agno.models.openai import OpenAIChat
from agno.models.openai.like import OpenAILike
from agno.models.openrouter import OpenRouter
from agno.models.response import ModelResponse

from sentient.agents.models.providers import IN_PROCESS, ModelSpec, Provider
from sentient.exceptions import MalformedResponseError

if TYPE_CHECKING:
    from sentient.agents.models.catalog import ModelCatalog


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


@dataclass
class _Claude(Claude):
    takes_schema_class: ClassVar[bool] = True  # see providers.response_format_for


@dataclass
class _Ollama(Ollama):
    takes_schema_class: ClassVar[bool] = True


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
        return _Claude(id=spec.model_id, api_key=key, timeout=timeout_s, client_params=client_params)
    # Ollama's client does not retry; the key (for ollama.com) is passed only when configured.
    return _Ollama(id=spec.model_id, host=base_url, api_key=key, timeout=timeout_s)
