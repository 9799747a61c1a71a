"""Web search: keyless DuckDuckGo (through ``ddgs``) or Tavily, Exa and Serper with API keys.

Each backend turns a query into title/URL/snippet results; :class:`WebSearch` wraps the
chosen one as the ``web_search`` tool and as a retrieval tool whose top results are enriched
with the fetched page's main text. A connection-level failure (the provider cannot be
reached, or rejects the key) trips the run's :class:`~sentient.tools.base.CircuitBreaker`, so
later nodes fail at once with one clear reason instead of each waiting for a timeout. Searches that
fail together (the first wave of a run without network) are reported once: by the one that
opened the breaker, with a short reason ("no network"); the others count as finding it open.
"""

from __future__ import annotations

import asyncio
import errno
import math
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

import httpx
from ddgs import DDGS
from ddgs.exceptions import DDGSException, TimeoutException
from loguru import logger
from pydantic import Field

from sentient.exceptions import ToolError
from sentient.graph.node import Source
from sentient.tools.base import CircuitBreaker, SignatureTool, ToolOutput, ToolSettings
from sentient.tools.fetch import fetch_page

_MAX_RESULTS = 20
# The ddgs engine used: DuckDuckGo's HTML results, no key needed.
_DDGS_BACKEND = "duckduckgo"
_DDGS_NO_RESULTS = "No results found"


class SearchUnavailableError(ToolError):
    """The search provider cannot be used for the rest of the run (unreachable, key rejected).

    Attributes:
        reason: why, in a few words for the user ("no network"); the message has the details.
    """

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


@dataclass(frozen=True)
class SearchResult:
    """One web search result."""

    title: str
    url: str
    snippet: str

    def to_source(self) -> Source:
        return Source(ref=self.url, title=self.title, snippet=self.snippet)


class SearchBackend(Protocol):
    """A search provider."""

    name: str

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        """Up to `max_results` results, best first.

        Raises:
            SearchUnavailableError: the provider cannot be reached or refuses the key.
            ToolError: any other failure of this one request.
        """
        ...


class DuckDuckGoBackend:
    """Keyless search through the ``ddgs`` package (which scrapes DuckDuckGo's HTML results).

    Args:
        timeout_s: time limit of one search.
        client_factory: builds the ``DDGS`` client; tests inject a double, since ddgs cannot
            be pointed at a local server.
    """

    name = "DuckDuckGo"

    def __init__(self, timeout_s: float, client_factory: Callable[..., Any] = DDGS) -> None:
        self._timeout_s = timeout_s
        self._client_factory = client_factory

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        try:
            # ddgs is synchronous; its own timeout bounds each engine request, this one the whole call.
            async with asyncio.timeout(self._timeout_s + 1):
                rows = await asyncio.to_thread(self._search_sync, query, max_results)
        except TimeoutError as exc:
            raise SearchUnavailableError(f"DuckDuckGo did not answer within {self._timeout_s:g}s") from exc
        except DDGSException as exc:
            if _DDGS_NO_RESULTS in str(exc):
                return []
            # ddgs already retried its engines; rate limits and network errors will not clear up mid-run.
            message = f"DuckDuckGo search failed: {type(exc).__name__}: {exc}"
            raise SearchUnavailableError(message, reason=self._reason(exc)) from exc
        results = [SearchResult(_text(r.get("title")), _text(r.get("href")), _text(r.get("body"))) for r in rows]
        return [r for r in results if r.url][:max_results]

    def _reason(self, exc: DDGSException) -> str | None:
        if _no_network(exc):
            return "no network"
        if isinstance(exc, TimeoutException):
            return f"DuckDuckGo did not answer within {self._timeout_s:g}s"
        return None  # the message says it best

    def _search_sync(self, query: str, max_results: int) -> list[dict[str, Any]]:
        with self._client_factory(timeout=max(1, math.ceil(self._timeout_s))) as client:
            rows: list[dict[str, Any]] = client.text(query, max_results=max_results, backend=_DDGS_BACKEND)
            return rows


class _JsonApiBackend:
    """A provider reached by POSTing JSON to ``{base_url}/search``."""

    name = "search API"

    def __init__(self, base_url: str, api_key: str, timeout_s: float) -> None:
        self._url = base_url.rstrip("/") + "/search"
        self._api_key = api_key
        self._timeout_s = timeout_s

    async def _post(self, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
        try:
            async with asyncio.timeout(self._timeout_s), httpx.AsyncClient(timeout=self._timeout_s) as client:
                response = await client.post(self._url, headers=headers, json=body)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise SearchUnavailableError(
                f"{self.name} is unreachable at {self._url}: {str(exc) or type(exc).__name__}",
                reason="no network" if _no_network(exc) else f"{self.name} is unreachable at {self._url}",
            ) from exc
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise ToolError(f"{self.name} search took longer than {self._timeout_s:g}s") from exc
        except httpx.HTTPError as exc:
            raise ToolError(f"{self.name} search failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code in (401, 403):
            raise SearchUnavailableError(f"{self.name} rejected the API key (HTTP {response.status_code})")
        if response.status_code >= 400:
            raise ToolError(f"{self.name} search failed: HTTP {response.status_code}: {response.text[:200]}")
        try:
            data = response.json()
        except ValueError as exc:
            raise ToolError(f"{self.name} returned a response that is not JSON") from exc
        if not isinstance(data, dict):
            raise ToolError(f"{self.name} returned unexpected JSON: {type(data).__name__}")
        return data


class TavilyBackend(_JsonApiBackend):
    """Tavily: ``POST /search`` with a bearer key; ``results[{title, url, content}]``."""

    name = "Tavily"

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        data = await self._post(
            {"Authorization": f"Bearer {self._api_key}"}, {"query": query, "max_results": max_results}
        )
        return _results(data.get("results"), url="url", snippet=lambda r: r.get("content"))[:max_results]


class ExaBackend(_JsonApiBackend):
    """Exa: ``POST /search`` with ``x-api-key``; ``results[{title, url, highlights | text}]``."""

    name = "Exa"

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        body = {"query": query, "numResults": max_results, "contents": {"highlights": True}}
        data = await self._post({"x-api-key": self._api_key}, body)

        def snippet(row: dict[str, Any]) -> Any:
            highlights = row.get("highlights")
            if isinstance(highlights, list) and highlights:
                return " … ".join(str(h) for h in highlights)
            return row.get("text")

        return _results(data.get("results"), url="url", snippet=snippet)[:max_results]


class SerperBackend(_JsonApiBackend):
    """Serper (Google results): ``POST /search`` with ``X-API-KEY``; ``organic[{title, link, snippet}]``."""

    name = "Serper"

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        data = await self._post({"X-API-KEY": self._api_key}, {"q": query, "num": max_results})
        return _results(data.get("organic"), url="link", snippet=lambda r: r.get("snippet"))[:max_results]


def _results(rows: Any, *, url: str, snippet: Callable[[dict[str, Any]], Any]) -> list[SearchResult]:
    if not isinstance(rows, list):
        return []
    found = (
        SearchResult(_text(row.get("title")), _text(row.get(url)), _text(snippet(row)))
        for row in rows
        if isinstance(row, dict)
    )
    return [r for r in found if r.url]


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value else ""


# What a failed request says when the machine has no network: a name that does not resolve, a
# network that is not there. ddgs's HTTP client (primp, in Rust) has its own DNSError class and
# otherwise says it in text.
_NO_NETWORK_ERRNOS = frozenset({errno.ENETUNREACH, errno.ENETDOWN, errno.EHOSTUNREACH})
_NO_NETWORK_TYPES = frozenset({"DNSError", "DNSTimeoutError"})
_NO_NETWORK_TEXT = ("dns error", "failed to lookup address", "name resolution", "network is unreachable")


def _no_network(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it carries) says the machine has no network."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        error = stack.pop()
        if id(error) in seen:
            continue
        seen.add(id(error))
        if isinstance(error, socket.gaierror) or (isinstance(error, OSError) and error.errno in _NO_NETWORK_ERRNOS):
            return True
        if type(error).__name__ in _NO_NETWORK_TYPES:
            return True
        if any(text in str(error).lower() for text in _NO_NETWORK_TEXT):
            return True
        # ddgs wraps the engines' errors as arguments, httpx as causes.
        carried = [error.__cause__, error.__context__, *error.args]
        stack += [e for e in carried if isinstance(e, BaseException)]
    return False


def make_backend(settings: ToolSettings) -> SearchBackend:
    """The backend `settings` choose.

    Raises:
        SearchUnavailableError: the chosen provider needs a key and has none.
    """
    provider = settings.resolved_provider()
    if provider == "duckduckgo":
        return DuckDuckGoBackend(settings.search_timeout_s)
    key = settings.api_key(provider)
    if not key:
        raise SearchUnavailableError(f"web search provider {provider!r} needs {provider.upper()}_API_KEY to be set")
    classes: dict[str, type[TavilyBackend | ExaBackend | SerperBackend]] = {
        "tavily": TavilyBackend,
        "exa": ExaBackend,
        "serper": SerperBackend,
    }
    base_url: str = getattr(settings, f"{provider}_base_url")
    return classes[provider](base_url, key, settings.search_timeout_s)


class WebSearch(SignatureTool):
    """The ``web_search`` tool, also usable up-front as a retrieval tool.

    Args:
        settings: provider, keys, limits and the offline switch.
        breaker: shared by every WebSearch of a run; a private one when omitted.
        backend: overrides the provider `settings` choose (tests, custom providers).
    """

    name = "web_search"
    description = "Search the web. Returns titles, URLs and snippets of the best matching pages."

    def __init__(
        self, settings: ToolSettings, *, breaker: CircuitBreaker | None = None, backend: SearchBackend | None = None
    ) -> None:
        self._settings = settings
        self.breaker = breaker or CircuitBreaker("web search")
        self._backend = backend

    async def search(self, query: str, max_results: int) -> list[Source]:
        """Search and return the results as sources.

        Raises:
            ToolError: offline, the breaker is open, or the provider failed.
        """
        if self._settings.offline:
            raise ToolError("web search is off: Sentient is running offline")
        self.breaker.check()
        try:
            backend = self._backend or make_backend(self._settings)
            results = await backend.search(query, max(1, min(max_results, _MAX_RESULTS)))
        except SearchUnavailableError as exc:
            logger.debug("web search failed: {}", exc)
            if not self.breaker.trip(exc.reason):
                self.breaker.check()  # another search opened it meanwhile and said why: this one is quiet
            raise
        return [r.to_source() for r in results]

    async def run(
        self,
        *,
        query: Annotated[str, Field(description="What to search for.")],
        max_results: Annotated[int | None, Field(description="How many results (1-20).", ge=1)] = None,
    ) -> ToolOutput:
        sources = await self.search(query, max_results or self._settings.search_max_results)
        return ToolOutput(text="" if sources else f"No web results for {query!r}.", sources=sources)

    async def retrieve(self, query: str, limit: int, per_source: int = 1) -> list[Source]:
        """Search, then replace the snippets of the top `enrich_top` results with page text (a
        page is one passage, whatever ``per_source``).

        A page that cannot be fetched keeps its search snippet. Offline, nothing is found and
        nothing is said: the user chose it (a search the model asks for is refused, with why).
        """
        if self._settings.offline:
            return []
        sources = await self.search(query, limit)
        top = self._settings.enrich_top
        enriched = await asyncio.gather(*(self._enrich(s) for s in sources[:top]))
        return [*enriched, *sources[top:]]

    async def _enrich(self, source: Source) -> Source:
        try:
            page = await fetch_page(source.ref, self._settings)
        except ToolError as exc:
            logger.debug("keeping the search snippet of {}: {}", source.ref, exc)
            return source
        if not page.text.strip():
            return source
        limit = self._settings.enrich_chars
        text = " ".join(page.text.split())
        snippet = text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
        return Source(ref=source.ref, title=source.title or page.title, snippet=snippet)
