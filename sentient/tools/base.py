"""What every tool shares: its output, the two protocols, the settings, and the circuit breaker.

A tool is anything with a ``name``, a ``description``, JSON-schema ``parameters``, a ``check``
of the model's arguments and an ``async run(**arguments) -> ToolOutput``; failures raise
:class:`~sentient.exceptions.ToolError` (or a subclass) with a message meant for both the user
and the model. A :class:`SignatureTool` derives ``parameters`` and ``check`` from its ``run``. Tools that can also be
run up-front with the node's goal (document search, web search) implement
:class:`RetrievalTool` too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable
from urllib.parse import urlencode

from loguru import logger
from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_core import to_jsonable_python

from sentient.exceptions import ToolError
from sentient.graph.node import Source
from sentient.tools.arguments import Arguments

SearchProvider = Literal["auto", "duckduckgo", "tavily", "exa", "serper"]

_SNIPPET_CHARS = 300  # the start of a call's result kept as its source's snippet

# Providers that need a key, in the order `auto` tries them.
_KEYED_PROVIDERS: tuple[Literal["tavily", "exa", "serper"], ...] = ("tavily", "exa", "serper")


@dataclass(frozen=True)
class ToolOutput:
    """What a tool returns.

    Attributes:
        text: what the tool has to say beyond its sources (page text, program output, a
            result, "no results"); the toolbox prints the sources, numbered, above it.
        sources: citable sources the text came from, best first.
    """

    text: str
    sources: list[Source] = field(default_factory=list)


@runtime_checkable
class Tool(Protocol):
    """A tool a model can call by name with JSON arguments."""

    @property
    def name(self) -> str:
        """The name the model calls it by (``web_search``)."""
        ...

    @property
    def description(self) -> str:
        """What it does, for the model."""
        ...

    @property
    def parameters(self) -> dict[str, Any]:
        """Its arguments as a JSON schema of type "object"."""
        ...

    def check(self, arguments: object) -> dict[str, Any]:
        """The keyword arguments to run with, from the model's; raises ToolError naming what is wrong."""
        ...

    async def run(self, *args: Any, **arguments: Any) -> ToolOutput:
        """Run with keyword arguments that `check` returned; raises ToolError when it cannot.

        (``*args`` only lets implementations declare their own keyword-only signature.)
        """
        ...


class SignatureTool:
    """A tool whose arguments are the keyword parameters of its ``run`` method (see
    :mod:`sentient.tools.arguments`)."""

    name: str

    @property
    def parameters(self) -> dict[str, Any]:
        return Arguments.of(type(self).run).schema

    run: Callable[..., Awaitable[ToolOutput]]  # each tool's own, with its named parameters

    def check(self, arguments: object) -> dict[str, Any]:
        return Arguments.of(type(self).run).check(self.name, arguments)


def call_source(ref: str, title: str, arguments: dict[str, Any], text: str) -> Source:
    """The citable source of one call of a tool that names none of its own (your callables,
    MCP servers): ``ref`` with the arguments as a query string, and the start of the result."""
    plain = {k: v if isinstance(v, str) else json.dumps(to_jsonable_python(v)) for k, v in arguments.items()}
    query = urlencode(plain)
    flat = " ".join(text.split())
    snippet = flat if len(flat) <= _SNIPPET_CHARS else flat[: _SNIPPET_CHARS - 1].rstrip() + "…"
    return Source(ref=f"{ref}?{query}" if query else ref, title=title, snippet=snippet)


@runtime_checkable
class RetrievalTool(Tool, Protocol):
    """A tool that can also be run up-front with a query, before the model is asked."""

    async def retrieve(self, query: str, limit: int, per_source: int = 1) -> list[Source]:
        """Return up to `limit` sources for `query`, best first, at most `per_source` passages of
        one document (a web page is one); raises ToolError when it cannot."""
        ...


def _env_secret(name: str) -> SecretStr | None:
    value = os.environ.get(name, "").strip()
    return SecretStr(value) if value else None


class ToolSettings(BaseModel):
    """Limits and provider choices for the tools of one run.

    API keys default to the ``TAVILY_API_KEY``, ``EXA_API_KEY`` and ``SERPER_API_KEY``
    environment variables, read when the settings are created.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    offline: bool = Field(False, description="Web tools refuse at once; nothing leaves the machine.")
    # Web search.
    search_provider: SearchProvider = Field(
        "auto", description="'auto': the first provider with a key, else DuckDuckGo."
    )
    tavily_api_key: SecretStr | None = Field(default_factory=lambda: _env_secret("TAVILY_API_KEY"))
    exa_api_key: SecretStr | None = Field(default_factory=lambda: _env_secret("EXA_API_KEY"))
    serper_api_key: SecretStr | None = Field(default_factory=lambda: _env_secret("SERPER_API_KEY"))
    tavily_base_url: str = "https://api.tavily.com"
    exa_base_url: str = "https://api.exa.ai"
    serper_base_url: str = "https://google.serper.dev"
    search_timeout_s: float = Field(15.0, gt=0, description="Time limit of each search request.")
    search_max_results: int = Field(5, ge=1, le=20, description="Results per search when the caller gives no number.")
    enrich_top: int = Field(2, ge=0, le=10, description="Up-front retrieval: how many top results get page text.")
    enrich_chars: int = Field(1_500, ge=100, description="Page text kept per enriched result.")
    # Page fetching.
    fetch_max_bytes: int = Field(2 * 1024 * 1024, ge=1_024, description="Bytes read from a page; the rest is dropped.")
    fetch_timeout_s: float = Field(15.0, gt=0, description="Time limit of a whole fetch, redirects included.")
    fetch_max_redirects: int = Field(5, ge=0, le=20)
    fetch_max_chars: int = Field(8_000, ge=200, description="Page text the fetch_page tool hands the model.")
    allow_private_urls: bool = Field(False, description="Allow loopback/private/link-local hosts (tests, intranets).")
    # Python sandbox.
    sandbox_timeout_s: float = Field(10.0, gt=0)
    sandbox_memory_mb: int = Field(512, ge=32)
    sandbox_output_chars: int = Field(10_000, ge=100)

    def api_key(self, provider: str) -> str | None:
        """The API key for `provider` ('tavily', 'exa', 'serper'), or None."""
        secret: SecretStr | None = getattr(self, f"{provider}_api_key", None)
        return secret.get_secret_value() if secret is not None else None

    def resolved_provider(self) -> Literal["duckduckgo", "tavily", "exa", "serper"]:
        """The provider `search_provider` stands for: 'auto' picks the first one with a key."""
        if self.search_provider != "auto":
            return self.search_provider
        return next((p for p in _KEYED_PROVIDERS if self.api_key(p)), "duckduckgo")


class CircuitOpenError(ToolError):
    """A web tool that already failed at the connection level in this run, so it does not retry."""


class CircuitBreaker:
    """Stops a tool from retrying after a failure that will not fix itself within a run.

    Share one breaker between every toolbox of a run: the first trip logs one warning, and
    every later `check()` raises at once instead of waiting for another timeout.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.reason: str | None = None

    @property
    def is_open(self) -> bool:
        return self.reason is not None

    def check(self) -> None:
        """Raise CircuitOpenError if the breaker has tripped."""
        if self.reason is not None:
            raise CircuitOpenError(
                f"{self.name} is disabled for the rest of this run after an earlier failure: {self.reason}"
            )

    def trip(self, reason: str) -> bool:
        """Open the breaker; only the first trip is logged. True when this call opened it."""
        if self.reason is not None:
            return False
        self.reason = reason
        logger.warning("{} disabled for the rest of this run: {}", self.name, reason)
        return True
