"""The toolbox: building it from agent config names, numbering sources, and agno's tool loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from agno.models.message import Message
from agno.models.response import ModelResponse
from agno.tools.function import Function
from ddgs.exceptions import DDGSException
from fakes.web import KEYS, FakeDDGS, FakeWeb, fake_web

from sentient.agents.models.fake import ScriptedModel
from sentient.exceptions import ConfigError, ToolError
from sentient.graph.node import Source
from sentient.tools.base import CircuitBreaker, RetrievalTool, Tool, ToolOutput, ToolSettings
from sentient.tools.docs_search import DocsIndex
from sentient.tools.toolbox import TOOL_NAMES, DocsSearch, SourceSink, ToolBox, render
from sentient.tools.web_search import DuckDuckGoBackend, WebSearch

OFFLINE = ToolSettings(offline=True)


@pytest.fixture
def web() -> Iterator[FakeWeb]:
    with fake_web() as server:
        yield server


def seeded_sink(count: int) -> SourceSink:
    return SourceSink(Source(ref=f"/docs/{i}.md", title=f"Doc {i}") for i in range(1, count + 1))


# -- building ---------------------------------------------------------------------------------


def test_tool_names_are_the_ones_agents_yaml_may_use() -> None:
    assert {"docs_search", "web_search", "fetch_page", "run_python", "calculator"} == TOOL_NAMES


def test_for_agent_builds_every_named_tool_in_a_fixed_order(docs_index: DocsIndex) -> None:
    box = ToolBox.for_agent(
        ["calculator", "web_search", "docs_search", "run_python", "fetch_page"], OFFLINE, docs_index
    )

    assert box.names == ("docs_search", "web_search", "fetch_page", "run_python", "calculator")
    assert all(isinstance(box.get(name), Tool) for name in box.names)
    assert [t.name for t in box.retrieval_tools()] == ["docs_search", "web_search"]
    assert all(isinstance(t, RetrievalTool) for t in box.retrieval_tools())


def test_for_agent_leaves_out_docs_search_without_an_index() -> None:
    box = ToolBox.for_agent(["docs_search", "calculator"], OFFLINE, None)

    assert box.names == ("calculator",)
    assert "docs_search" not in box


def test_unknown_tool_name_is_a_config_error_listing_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match="unknown tool\\(s\\): browser") as error:
        ToolBox.for_agent(["calculator", "browser"], OFFLINE)
    assert error.value.field == "tools"
    assert "docs_search, web_search, fetch_page, run_python, calculator" in str(error.value)


def test_duplicate_tool_names_are_a_bug() -> None:
    from sentient.tools.calculator import Calculator

    with pytest.raises(ValueError, match="two tools are named 'calculator'"):
        ToolBox([Calculator(), Calculator()])


# -- docs search adapter ----------------------------------------------------------------------


async def test_docs_search_sources_point_at_document_paths(docs_index: DocsIndex) -> None:
    sources = await DocsSearch(docs_index).retrieve("event loop coroutines", 3)

    assert sources[0].ref.endswith("asyncio.md")
    assert "event loop" in sources[0].snippet
    assert sources[0].title.startswith("asyncio.md")


async def test_docs_search_with_no_match_says_so(docs_index: DocsIndex) -> None:
    output = await DocsSearch(docs_index).run(query="xylophonequartz")

    assert output.sources == []
    assert output.text == "No passage matches 'xylophonequartz'."


class CountingIndex(DocsIndex):
    """A real index that counts the searches run on it."""

    searches = 0

    def search(self, *args: Any, **kwargs: Any) -> Any:
        self.searches += 1
        return super().search(*args, **kwargs)


async def test_docs_search_of_an_empty_index_finds_nothing_without_searching_it() -> None:
    with CountingIndex() as index:
        tool = DocsSearch(index)
        assert await tool.retrieve("tides", 3) == []
        assert index.searches == 0

        index.add_document("/docs/tides.md", "Tides", "Tides rise and fall twice a day.")
        assert [s.ref for s in await tool.retrieve("tides", 3)] == ["/docs/tides.md"]
        assert index.searches == 1


# -- source numbering and call records --------------------------------------------------------


def test_sink_numbers_sources_in_order_and_keeps_the_first_number_of_a_ref() -> None:
    sink = seeded_sink(2)

    assert sink.add(Source(ref="https://a.example/")) == 3
    assert sink.add(Source(ref="/docs/1.md", title="again")) == 1
    assert sink.number_of("https://a.example/") == 3
    assert sink.number_of("https://never.example/") is None
    assert len(sink) == 3


def test_render_numbers_sources_after_the_ones_the_node_already_has() -> None:
    sink = seeded_sink(5)
    output = ToolOutput(
        text="",
        sources=[
            Source(ref="https://a.example/x", title="Page A", snippet="alpha facts"),
            Source(ref="https://b.example/y", snippet="beta facts"),
            Source(ref="/docs/2.md", title="Doc 2", snippet="known"),
        ],
    )

    text = render(output, sink)

    assert text == (
        "[6] Page A — https://a.example/x\nalpha facts\n\n"
        "[7] https://b.example/y\nbeta facts\n\n"
        "[2] Doc 2 — /docs/2.md\nknown"
    )
    assert [s.ref for s in sink.sources[5:]] == ["https://a.example/x", "https://b.example/y"]


def test_render_prints_the_tool_text_after_source_headers_without_repeating_snippets() -> None:
    output = ToolOutput(text="Full page text.", sources=[Source(ref="https://p.example/", title="P", snippet="Full…")])

    assert render(output, SourceSink()) == "[1] P — https://p.example/\n\nFull page text."


async def test_call_runs_the_tool_and_records_the_call() -> None:
    box = ToolBox.for_agent(["calculator"], OFFLINE)
    sink = SourceSink()

    text = await box.call("calculator", {"expression": "6 * 7"}, sink)

    assert text == "6 * 7 = 42"
    (call,) = sink.calls
    assert (call.tool, call.arguments, call.result, call.error) == ("calculator", {"expression": "6 * 7"}, text, None)
    assert call.duration_s >= 0


async def test_tool_error_becomes_text_for_the_model_and_is_recorded() -> None:
    box = ToolBox.for_agent(["calculator", "web_search"], OFFLINE)
    sink = SourceSink()

    calc = await box.call("calculator", {"expression": "1 / 0"}, sink)
    web = await box.call("web_search", {"query": "quokka"}, sink)

    assert calc == "Error: division by zero"
    assert web == "Error: web search is off: Sentient is running offline"
    assert [c.error for c in sink.calls] == ["division by zero", "web search is off: Sentient is running offline"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "calculator needs the argument expression"),
        ({"expression": "1", "precision": 3}, "calculator got the unknown argument precision; it takes expression"),
        ({"expression": 12}, "calculator: argument expression: Input should be a valid string"),
    ],
)
async def test_bad_arguments_are_reported_to_the_model(arguments: dict[str, Any], message: str) -> None:
    box = ToolBox.for_agent(["calculator"], OFFLINE)

    text = await box.call("calculator", arguments, SourceSink())

    assert text == f"Error: {message}"


async def test_integer_arguments_sent_as_strings_are_accepted(docs_index: DocsIndex) -> None:
    box = ToolBox.for_agent(["docs_search"], OFFLINE, docs_index)
    sink = SourceSink()

    text = await box.call("docs_search", {"query": "threads memory", "max_results": "1"}, sink)

    assert text.startswith("[1] threads.md")
    assert len(sink) == 1
    bad = await box.call("docs_search", {"query": "threads", "max_results": "many"}, sink)
    assert bad == (
        "Error: docs_search: argument max_results: Input should be a valid integer, unable to parse string as an integer"
    )


async def test_unknown_tool_call_is_an_error_text() -> None:
    text = await ToolBox.for_agent(["calculator"], OFFLINE).call("web_search", {"query": "x"}, SourceSink())

    assert text == "Error: no tool named 'web_search'; available: calculator"


async def test_a_bug_in_a_tool_propagates_and_is_still_recorded() -> None:
    class Broken:
        name = "broken"
        description = "always fails"
        parameters: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

        def check(self, arguments: object) -> dict[str, Any]:
            return {}

        async def run(self) -> ToolOutput:
            raise KeyError("oops")

    sink = SourceSink()
    with pytest.raises(KeyError):
        await ToolBox([Broken()]).call("broken", {}, sink)
    assert sink.calls[0].error == "KeyError: 'oops'"


# -- up-front retrieval -----------------------------------------------------------------------


async def test_retrieve_merges_tools_and_turns_a_failing_tool_into_a_warning(
    docs_index: DocsIndex, web: FakeWeb
) -> None:
    web.status_override["tavily"] = 500
    settings = ToolSettings(search_provider="tavily", tavily_api_key=KEYS["tavily"], tavily_base_url=web.url("/tavily"))
    box = ToolBox.for_agent(["docs_search", "web_search"], settings, docs_index)

    found = await box.retrieve("event loop", 3)

    assert found.sources and found.sources[0].ref.endswith("asyncio.md")
    assert found.warnings == ['web_search: Tavily search failed: HTTP 500: {"error": "provider trouble"}']


async def test_retrieve_keeps_as_many_passages_of_one_document_as_asked() -> None:
    filler = "The tide tables are printed each spring. " * 40
    index = DocsIndex()
    index.add_document("tides.md", "Tides", f"# Tides\n\nHigh tide {filler}\n\n## Low\n\nLow tide {filler}")
    index.add_document("boats.md", "Boats", "# Boats\n\nBoats wait for the tide.")
    box = ToolBox.for_agent(["docs_search"], OFFLINE, index)

    one = await box.retrieve("tide", 5)
    two = await box.retrieve("tide", 5, per_source=2)

    assert sorted(s.ref for s in one.sources) == ["boats.md", "tides.md"]
    assert sorted(s.ref for s in two.sources) == ["boats.md", "tides.md", "tides.md"]
    assert len({s.snippet for s in two.sources}) == 3


async def test_offline_retrieval_leaves_web_search_out_without_a_warning(docs_index: DocsIndex) -> None:
    box = ToolBox.for_agent(["docs_search", "web_search"], OFFLINE, docs_index)

    found = await box.retrieve("event loop", 3)

    assert found.sources and found.warnings == []


async def test_web_search_without_network_is_said_once_per_run_in_one_line(docs_index: DocsIndex) -> None:
    # What ddgs raises when no engine resolves its host: primp's DNSError, wrapped twice.
    engine = DDGSException("DNSError: DNSError('error sending request > DNS error: failed to lookup address')")
    client = FakeDDGS(error=DDGSException(engine))
    breaker = CircuitBreaker("web search")
    web_search = WebSearch(ToolSettings(), breaker=breaker, backend=DuckDuckGoBackend(5, client))
    nodes = [ToolBox([DocsSearch(docs_index), web_search]) for _ in range(4)]

    first_wave = await asyncio.gather(*(box.retrieve("event loop", 3) for box in nodes))
    later = await nodes[0].retrieve("event loop", 3)

    warnings = [warning for found in [*first_wave, later] for warning in found.warnings]
    assert warnings == ["web search unavailable (no network); using local documents only"]
    assert all(found.sources for found in [*first_wave, later])  # the documents are still searched
    assert len(client.queries) == 4  # the first wave's searches were under way; none after


async def test_toolboxes_of_one_run_share_the_breaker(web: FakeWeb) -> None:
    with fake_web() as gone:
        settings = ToolSettings(search_provider="serper", serper_api_key=KEYS["serper"], serper_base_url=gone.url(""))
    breaker = CircuitBreaker("web search")
    first = ToolBox.for_agent(["web_search"], settings, breaker=breaker)
    second = ToolBox.for_agent(["web_search"], settings, breaker=breaker)

    failed = await first.retrieve("quokka", 3)
    skipped = await second.retrieve("quokka", 3)

    assert breaker.is_open
    assert "Serper is unreachable" in failed.warnings[0]
    assert skipped.warnings == [], "an open breaker was reported once, where it tripped"


# -- agno integration -------------------------------------------------------------------------


@dataclass
class ToolCallingModel(ScriptedModel):
    """Asks for `tool_calls` on its first turn, then answers with the tool results it saw."""

    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)

    async def ainvoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        results = [m for m in messages if m.role == "tool"]
        if not results:
            calls = [
                {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
                for i, (name, arguments) in enumerate(self.tool_calls)
            ]
            return ModelResponse(role="assistant", tool_calls=calls)
        self.seen = [m.get_content_string() for m in results]
        return ModelResponse(role="assistant", content="See [3] and [4].")


async def test_agno_functions_run_through_the_model_tool_loop(docs_index: DocsIndex) -> None:
    box = ToolBox.for_agent(["docs_search", "calculator"], OFFLINE, docs_index)
    sink = seeded_sink(2)
    model = ToolCallingModel(
        tool_calls=[("docs_search", {"query": "GIL threads"}), ("calculator", {"expression": "2 ** 8"})]
    )

    functions = box.agno_functions(sink)
    tools: list[Function | dict[Any, Any]] = [*functions]
    response = await model.aresponse(messages=[Message(role="user", content="go")], tools=tools)

    assert all(isinstance(f, Function) for f in functions)
    assert response.content == "See [3] and [4]."
    docs_text, calc_text = model.seen
    assert docs_text.startswith("[3] threads.md")
    assert "GIL serialises bytecode" in docs_text
    assert calc_text == "2 ** 8 = 256"
    assert sink.sources[2].ref.endswith("threads.md")
    # agno awaits async entrypoints concurrently, so the calls may finish in either order.
    assert sorted(c.tool for c in sink.calls) == ["calculator", "docs_search"]


def test_agno_functions_carry_our_schema_and_description() -> None:
    box = ToolBox.for_agent(["calculator", "fetch_page"], OFFLINE)

    functions = {f.name: f for f in box.agno_functions(SourceSink())}

    assert set(functions) == {"calculator", "fetch_page"}
    spec = functions["fetch_page"].to_dict()
    assert spec["parameters"]["required"] == ["url"]
    assert "web page" in spec["description"]
    with pytest.raises(ToolError):
        box.get("run_python")
