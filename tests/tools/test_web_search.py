"""Web search against loopback fakes of Tavily, Exa and Serper, and ddgs through a client double."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from ddgs.exceptions import DDGSException, RatelimitException
from fakes.web import KEYS, FakeDDGS, FakeWeb, fake_web
from loguru import logger

from sentient.exceptions import ToolError
from sentient.tools.base import CircuitBreaker, CircuitOpenError, ToolSettings
from sentient.tools.web_search import (
    DuckDuckGoBackend,
    SearchUnavailableError,
    SerperBackend,
    WebSearch,
    make_backend,
)

RESULTS = [
    {
        "title": "Quokka - Wikipedia",
        "url": "https://en.wikipedia.org/wiki/Quokka",
        "snippet": "The quokka is a macropod.",
    },
    {"title": "Rottnest Island", "url": "https://rottnestisland.com/", "snippet": "Home of the quokka."},
    {"title": "Macropods", "url": "https://example.org/macropods", "snippet": "Kangaroos and kin."},
]


@pytest.fixture
def web() -> Iterator[FakeWeb]:
    with fake_web() as server:
        server.results = list(RESULTS)
        yield server


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    """Messages of the loguru warnings logged during the test."""
    seen: list[str] = []
    handler = logger.add(lambda message: seen.append(message.record["message"]), level="WARNING")
    yield seen
    logger.remove(handler)


def settings_for(web: FakeWeb, provider: str, **overrides: Any) -> ToolSettings:
    """Settings that point every provider at the fake and carry only explicit keys."""
    values: dict[str, Any] = {
        "search_provider": provider,
        "tavily_api_key": KEYS["tavily"],
        "exa_api_key": KEYS["exa"],
        "serper_api_key": KEYS["serper"],
        "tavily_base_url": web.url("/tavily"),
        "exa_base_url": web.url("/exa"),
        "serper_base_url": web.url("/serper"),
        "search_timeout_s": 5,
        "allow_private_urls": True,
    }
    return ToolSettings(**{**values, **overrides})


@pytest.mark.parametrize("provider", ["tavily", "exa", "serper"])
async def test_each_provider_returns_title_url_and_snippet_as_sources(web: FakeWeb, provider: str) -> None:
    search = WebSearch(settings_for(web, provider))

    output = await search.run(query="quokka habitat", max_results=2)

    assert [(s.ref, s.title, s.snippet) for s in output.sources] == [
        (r["url"], r["title"], r["snippet"]) for r in RESULTS[:2]
    ]
    assert output.text == ""
    (request,) = web.requests
    assert request.path == f"/{provider}/search"


async def test_tavily_request_carries_bearer_key_query_and_count(web: FakeWeb) -> None:
    await WebSearch(settings_for(web, "tavily")).search("quokka", 3)

    (request,) = web.requests
    assert request.headers["authorization"] == f"Bearer {KEYS['tavily']}"
    assert request.body == {"query": "quokka", "max_results": 3}


async def test_exa_request_carries_key_query_count_and_asks_for_highlights(web: FakeWeb) -> None:
    await WebSearch(settings_for(web, "exa")).search("quokka", 4)

    (request,) = web.requests
    assert request.headers["x-api-key"] == KEYS["exa"]
    assert request.body["query"] == "quokka" and request.body["numResults"] == 4
    assert request.body["contents"] == {"highlights": True}


async def test_serper_request_carries_key_q_and_num(web: FakeWeb) -> None:
    await WebSearch(settings_for(web, "serper")).search("quokka", 2)

    (request,) = web.requests
    assert request.headers["x-api-key"] == KEYS["serper"]
    assert request.body == {"q": "quokka", "num": 2}


async def test_max_results_is_clamped_to_the_api_range(web: FakeWeb) -> None:
    await WebSearch(settings_for(web, "tavily")).search("quokka", 500)

    assert web.requests[0].body["max_results"] == 20


async def test_no_results_is_an_empty_answer_not_an_error(web: FakeWeb) -> None:
    web.results = []

    output = await WebSearch(settings_for(web, "serper")).run(query="zzxxqq")

    assert output.sources == []
    assert output.text == "No web results for 'zzxxqq'."


# -- failures and the circuit breaker ---------------------------------------------------------


async def test_server_error_is_a_tool_error_and_the_next_call_still_tries(web: FakeWeb) -> None:
    web.status_override["tavily"] = 500
    search = WebSearch(settings_for(web, "tavily"))

    with pytest.raises(ToolError, match="Tavily search failed: HTTP 500"):
        await search.search("quokka", 3)
    del web.status_override["tavily"]
    assert len(await search.search("quokka", 3)) == 3
    assert not search.breaker.is_open


async def test_rejected_key_opens_the_breaker_with_one_warning(web: FakeWeb, warnings: list[str]) -> None:
    search = WebSearch(settings_for(web, "exa", exa_api_key="wrong-key"))

    with pytest.raises(SearchUnavailableError, match="Exa rejected the API key"):
        await search.search("quokka", 3)
    for _ in range(3):
        with pytest.raises(CircuitOpenError, match="disabled for the rest of this run"):
            await search.search("quokka", 3)

    assert len(web.requests) == 1  # later calls never reached the provider
    assert len(warnings) == 1 and "rejected the API key" in warnings[0]


async def test_unreachable_provider_opens_a_breaker_shared_across_tools(warnings: list[str]) -> None:
    with fake_web() as gone:
        settings = settings_for(gone, "serper")
    breaker = CircuitBreaker("web search")
    first, second = WebSearch(settings, breaker=breaker), WebSearch(settings, breaker=breaker)

    with pytest.raises(SearchUnavailableError, match="Serper is unreachable"):
        await first.search("quokka", 3)
    with pytest.raises(CircuitOpenError, match="Serper is unreachable"):
        await second.run(query="quokka")
    assert len(warnings) == 1


async def test_slow_provider_is_a_timeout_error_that_does_not_open_the_breaker(web: FakeWeb) -> None:
    web.delay["tavily"] = 1.0
    search = WebSearch(settings_for(web, "tavily", search_timeout_s=0.2))

    with pytest.raises(ToolError, match=r"took longer than 0\.2s"):
        await search.search("quokka", 3)
    assert not search.breaker.is_open


async def test_offline_refuses_at_once_without_a_request(web: FakeWeb) -> None:
    search = WebSearch(settings_for(web, "tavily", offline=True))

    with pytest.raises(ToolError, match="offline"):
        await search.run(query="quokka")
    assert web.requests == []
    assert not search.breaker.is_open


# -- provider choice -------------------------------------------------------------------------


@pytest.fixture
def no_key_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("TAVILY_API_KEY", "EXA_API_KEY", "SERPER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_auto_uses_the_first_provider_whose_key_is_in_the_environment(no_key_env: pytest.MonkeyPatch) -> None:
    assert ToolSettings().resolved_provider() == "duckduckgo"
    no_key_env.setenv("SERPER_API_KEY", "s-key")
    no_key_env.setenv("EXA_API_KEY", "e-key")

    settings = ToolSettings()

    assert settings.resolved_provider() == "exa"
    assert settings.api_key("exa") == "e-key"
    assert "e-key" not in repr(settings)  # keys are secrets


async def test_explicit_provider_without_its_key_is_a_clear_error_once(
    no_key_env: pytest.MonkeyPatch, warnings: list[str]
) -> None:
    search = WebSearch(ToolSettings(search_provider="tavily"))

    with pytest.raises(SearchUnavailableError, match="needs TAVILY_API_KEY to be set"):
        await search.search("quokka", 3)
    with pytest.raises(CircuitOpenError, match="TAVILY_API_KEY"):
        await search.search("quokka", 3)
    assert len(warnings) == 1


def test_make_backend_picks_the_resolved_provider(no_key_env: pytest.MonkeyPatch) -> None:
    assert isinstance(make_backend(ToolSettings()), DuckDuckGoBackend)
    assert isinstance(make_backend(ToolSettings(serper_api_key="k")), SerperBackend)


def test_settings_reject_unknown_fields_and_providers() -> None:
    with pytest.raises(ValueError, match="extra"):
        ToolSettings(serach_provider="exa")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="search_provider"):
        ToolSettings(search_provider="bing")


# -- DuckDuckGo through ddgs -----------------------------------------------------------------


async def test_duckduckgo_rows_become_sources() -> None:
    client = FakeDDGS(rows=[{"title": r["title"], "href": r["url"], "body": r["snippet"]} for r in RESULTS])
    search = WebSearch(ToolSettings(search_provider="duckduckgo"), backend=DuckDuckGoBackend(7, client))

    sources = await search.search("quokka", 2)

    assert [(s.ref, s.title, s.snippet) for s in sources] == [(r["url"], r["title"], r["snippet"]) for r in RESULTS[:2]]
    assert client.clients == [{"timeout": 7}]
    assert client.queries == [{"query": "quokka", "max_results": 2, "backend": "duckduckgo"}]


async def test_duckduckgo_no_results_is_empty() -> None:
    client = FakeDDGS(error=DDGSException("No results found."))
    search = WebSearch(ToolSettings(), backend=DuckDuckGoBackend(5, client))

    assert await search.search("zzxxqq", 5) == []
    assert not search.breaker.is_open


async def test_duckduckgo_failure_opens_the_breaker(warnings: list[str]) -> None:
    client = FakeDDGS(error=RatelimitException("202 Ratelimit"))
    search = WebSearch(ToolSettings(), backend=DuckDuckGoBackend(5, client))

    with pytest.raises(SearchUnavailableError, match="DuckDuckGo search failed: RatelimitException"):
        await search.search("quokka", 5)
    with pytest.raises(CircuitOpenError):
        await search.search("quokka", 5)
    assert len(client.queries) == 1
    assert len(warnings) == 1


# -- up-front retrieval with page text -------------------------------------------------------


async def test_retrieve_enriches_the_top_results_with_page_text(web: FakeWeb) -> None:
    web.results = [
        {"title": "Article", "url": web.url("/article"), "snippet": "search snippet one"},
        {"title": "Plain", "url": web.url("/plain"), "snippet": "search snippet two"},
        {"title": "Third", "url": web.url("/article?third"), "snippet": "search snippet three"},
    ]
    search = WebSearch(settings_for(web, "tavily", enrich_top=2, enrich_chars=120))

    first, second, third = await search.retrieve("quokka", 3)

    assert first.snippet.startswith("Quokka facts The quokka is a small macropod")
    assert len(first.snippet) == 120 and first.snippet.endswith("…")
    assert second.snippet == "Plain facts: the wombat's droppings are cube shaped."
    assert third.snippet == "search snippet three"  # beyond enrich_top
    assert "/article?third" not in web.paths()


async def test_retrieve_keeps_the_search_snippet_when_the_page_fails(web: FakeWeb) -> None:
    web.results = [{"title": "Gone", "url": web.url("/missing"), "snippet": "search snippet"}]
    search = WebSearch(settings_for(web, "exa"))

    (source,) = await search.retrieve("quokka", 3)

    assert source.snippet == "search snippet"
    assert "/missing" in web.paths()
