"""The tools one agent may use, behind one interface, and their bridge to agno.

``ToolBox.for_agent(entries, settings, docs_index, mcp=...)`` builds the tools an agent's config
names: built-in tools, your own callables (:mod:`sentient.tools.functions`) and the tools of its
MCP servers (:mod:`sentient.tools.mcp_servers`). Each call's arguments are checked by the tool
(:mod:`sentient.tools.arguments`), and a tool marked ``confirm: true`` runs only once the run's
reviewer approves the call (:mod:`sentient.tools.confirm`).
``retrieval_tools()`` (or ``retrieve``) run up-front with the node's goal; ``agno_functions(sink)``
hands the same tools to the model. Every model-facing result lists its sources numbered
where the :class:`SourceSink` puts them (continuing after the sources the node already
has), so the executor can cite them as ``[n]``; the sink also records each call for traces.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any

from agno.tools.function import Function
from pydantic import Field

from sentient.context.citations import SourceList
from sentient.exceptions import ConfigError, ToolError
from sentient.graph.node import Source
from sentient.tools.base import (
    CircuitBreaker,
    CircuitOpenError,
    RetrievalTool,
    SignatureTool,
    Tool,
    ToolOutput,
    ToolSettings,
)
from sentient.tools.calculator import Calculator
from sentient.tools.confirm import CallApproval
from sentient.tools.docs_search import DocsIndex
from sentient.tools.fetch import FetchPage
from sentient.tools.functions import FunctionTool, load_callable
from sentient.tools.mcp_servers import McpSession, McpTool
from sentient.tools.sandbox import PythonSandbox
from sentient.tools.specs import CallableTool, ToolEntry
from sentient.tools.web_search import SearchUnavailableError, WebSearch

# The names agents.yaml may list, in the order a toolbox holds them (docs before the web).
_ORDER = ("docs_search", "web_search", "fetch_page", "run_python", "calculator")
TOOL_NAMES: frozenset[str] = frozenset(_ORDER)
NETWORK_TOOLS: frozenset[str] = frozenset({"web_search", "fetch_page"})  # left out when running offline
_RECORDED_RESULT_CHARS = 500


class DocsSearch(SignatureTool):
    """The ``docs_search`` tool: the local documents index as a retrieval tool (ref = document path)."""

    name = "docs_search"
    description = "Search the local documents. Returns the best matching passages with their file paths."

    def __init__(self, index: DocsIndex, default_results: int = 5) -> None:
        self._index = index
        self._default_results = default_results

    async def retrieve(self, query: str, limit: int, per_source: int = 1) -> list[Source]:
        """Up to ``limit`` passages for ``query``, at most ``per_source`` of one document; none when
        nothing in the documents is relevant to it."""
        if self._index.empty:  # nothing to find: no thread to start for it
            return []
        hits = await asyncio.to_thread(self._index.search, query, max(1, min(limit, 20)), per_source=per_source)
        return [Source(ref=h.source, title=h.title, snippet=h.snippet) for h in hits]

    async def run(
        self,
        *,
        query: Annotated[str, Field(description="Words to look for.")],
        max_results: Annotated[int | None, Field(description="How many passages (1-20).", ge=1)] = None,
    ) -> ToolOutput:
        sources = await self.retrieve(query, max_results or self._default_results)
        return ToolOutput(text="" if sources else f"No passage matches {query!r}.", sources=sources)


@dataclass(frozen=True)
class ToolCall:
    """One tool call, for traces.

    Attributes:
        tool: the tool's name.
        arguments: the arguments as the model sent them.
        result: the text the model got back, cut at 500 characters.
        error: the ToolError message when the call failed, else None.
        duration_s: how long the call took.
        server: the MCP server the tool belongs to, if any.
    """

    tool: str
    arguments: dict[str, Any]
    result: str
    error: str | None
    duration_s: float
    server: str | None = None


class SourceSink(SourceList):
    """The sources a node can cite, numbered from 1 in the order first seen, plus its tool calls.

    Seed it with the sources the node's context already offers, so tool results continue
    the numbering; a source seen again (same ref) keeps its first number. ``task_id`` names the
    node whose calls these are (a call that needs approval says which node asks).
    """

    def __init__(self, sources: Iterable[Source] = (), task_id: str = "") -> None:
        super().__init__(sources)
        self.task_id = task_id
        self.calls: list[ToolCall] = []

    def number_of(self, ref: str) -> int | None:
        """The citation number of `ref`, or None if no source has it."""
        return self._numbers.get(ref)

    def record(self, call: ToolCall) -> None:
        self.calls.append(call)


@dataclass(frozen=True)
class Retrieval:
    """What the up-front retrieval found: sources (de-duplicated, tool by tool) and warnings."""

    sources: list[Source] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class ToolBox:
    """An agent's tools: the built-in ones in a fixed order (docs_search, web_search, fetch_page,
    run_python, calculator), then its callables, then its MCP servers' tools.

    Args:
        tools: the tools.
        confirm: the names of the tools whose calls need approval.
        approval: who approves them; by default nobody does, and every such call is declined.
        offline: the run is offline: its web tools only refuse, and are not offered where that costs
            a model's turn (:meth:`acting_tools`).
    """

    def __init__(
        self,
        tools: Iterable[Tool],
        *,
        confirm: Iterable[str] = (),
        approval: CallApproval | None = None,
        offline: bool = False,
    ) -> None:
        self._confirm = frozenset(confirm)
        self._approval = approval or CallApproval(None)
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self._tools[tool.name] = tool
        # Asked before every executor call. isinstance against a runtime-checkable Protocol walks
        # the protocol's members each time (tens of microseconds a tool), and the tools never change.
        self._retrieval = [tool for tool in self._tools.values() if isinstance(tool, RetrievalTool)]
        self._acting = [
            tool
            for tool in self._tools.values()
            if tool not in self._retrieval and not (offline and tool.name in NETWORK_TOOLS)
        ]

    @classmethod
    def for_agent(
        cls,
        entries: Iterable[ToolEntry],
        settings: ToolSettings,
        docs_index: DocsIndex | None = None,
        *,
        breaker: CircuitBreaker | None = None,
        mcp: Iterable[McpSession] = (),
        approval: CallApproval | None = None,
    ) -> ToolBox:
        """Build the tools `entries` lists (built-in names and callables), then add the tools of
        the connected `mcp` servers.

        Pass one `breaker` to every toolbox of a run, so a web search that failed to connect
        is not retried by every node. ``docs_search`` is left out when there is no index.

        Raises:
            ConfigError: a name that is not in TOOL_NAMES, or a callable that cannot be a tool.
        """
        entries = list(entries)
        wanted = {e for e in entries if isinstance(e, str)}
        unknown = wanted - TOOL_NAMES
        if unknown:
            raise ConfigError(
                f"unknown tool(s): {', '.join(sorted(unknown))}.",
                field="tools",
                fix=f"use only: {', '.join(_ORDER)}.",
            )
        tools: list[Tool] = []
        for name in _ORDER:
            if name not in wanted:
                continue
            if name == "docs_search":
                if docs_index is not None:
                    tools.append(DocsSearch(docs_index))
            elif name == "web_search":
                tools.append(WebSearch(settings, breaker=breaker))
            elif name == "fetch_page":
                tools.append(FetchPage(settings))
            elif name == "run_python":
                tools.append(PythonSandbox(settings))
            else:
                tools.append(Calculator())
        confirm: list[str] = []
        for entry in entries:
            if isinstance(entry, CallableTool):
                tool = function_tool(entry)
                tools.append(tool)
                confirm += [tool.name] if entry.confirm else []
        for session in mcp:
            tools += session.tools
            confirm += [t.name for t in session.tools] if session.config.confirm else []
        return cls(tools, confirm=confirm, approval=approval, offline=settings.offline)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def get(self, name: str) -> Tool:
        """The tool called `name`; raises ToolError when this toolbox has none."""
        try:
            return self._tools[name]
        except KeyError:
            raise ToolError(f"no tool named {name!r}; available: {', '.join(self._tools) or 'none'}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def docs(self) -> DocsSearch | None:
        """The local documents search, if this toolbox has one."""
        tool = self._tools.get("docs_search")
        return tool if isinstance(tool, DocsSearch) else None

    def retrieval_tools(self) -> list[RetrievalTool]:
        """The tools that can run up-front with a query (docs_search, web_search)."""
        return list(self._retrieval)

    def acting_tools(self) -> list[Tool]:
        """The tools only a model's call runs (fetch_page, run_python, calculator, your callables and
        MCP tools): not the retrieval tools, which run up-front, nor the web tools offline."""
        return list(self._acting)

    async def retrieve(self, query: str, limit: int, per_source: int = 1) -> Retrieval:
        """Run every retrieval tool with `query` at once, keeping at most ``per_source`` passages
        of one source (a document, or a web page two search providers both found, first found
        first); a failing tool becomes a warning.

        Web search that becomes unavailable is said once per run, in one line (by the search
        that switched it off); the provider's own error goes to the debug log.
        """
        tools = self.retrieval_tools()
        outcomes = await asyncio.gather(*(t.retrieve(query, limit, per_source) for t in tools), return_exceptions=True)
        found: list[Source] = []
        taken: Counter[str] = Counter()
        warnings: list[str] = []
        for tool, outcome in zip(tools, outcomes, strict=True):
            if isinstance(outcome, CircuitOpenError):
                continue  # the tool was switched off earlier in the run: said once, when it happened
            if isinstance(outcome, SearchUnavailableError):
                rest = "using local documents only" if "docs_search" in self._tools else "continuing without it"
                warnings.append(f"web search unavailable ({outcome.reason}); {rest}")
            elif isinstance(outcome, ToolError):
                warnings.append(f"{tool.name}: {outcome}")
            elif isinstance(outcome, BaseException):
                raise outcome  # a bug, or cancellation: not a tool failure
            else:
                for source in outcome:
                    if taken[source.ref] < per_source and source not in found:
                        taken[source.ref] += 1
                        found.append(source)
        return Retrieval(sources=found, warnings=warnings)

    async def call(self, name: str, arguments: dict[str, Any], sink: SourceSink) -> str:
        """Run one tool as the model asked and return the text the model should see.

        Sources in the result are added to `sink` and printed with their numbers. A ToolError
        (bad arguments included) becomes an ``Error: ...`` text, so the model can react;
        other exceptions are bugs and propagate. Every call is recorded in `sink`.
        """
        started = time.perf_counter()
        error: str | None = None
        server = self._server_of(name)
        try:
            tool = self.get(name)
            checked = tool.check(arguments)
            declined = None
            if name in self._confirm:
                declined = await self._approval.declined(sink.task_id, name, checked)
            text = declined if declined is not None else render(await tool.run(**checked), sink)
        except ToolError as exc:
            error = str(exc)
            text = f"Error: {error}"
        except Exception as exc:
            sink.record(ToolCall(name, dict(arguments), "", f"{type(exc).__name__}: {exc}", _since(started), server))
            raise
        sink.record(ToolCall(name, dict(arguments), text[:_RECORDED_RESULT_CHARS], error, _since(started), server))
        return text

    def _server_of(self, name: str) -> str | None:
        tool = self._tools.get(name)
        return tool.server if isinstance(tool, McpTool) else None

    def agno_functions(self, sink: SourceSink) -> list[Function]:
        """The tools as agno Functions for ``Model.aresponse(tools=...)``, results numbered into `sink`."""
        return [
            Function(
                name=tool.name,
                description=tool.description,
                parameters=copy.deepcopy(tool.parameters),
                entrypoint=self._entrypoint(tool.name, sink),
                # Our JSON schema is the contract: agno must neither rebuild it from the
                # signature nor wrap the entrypoint in its own validation.
                skip_entrypoint_processing=True,
            )
            for tool in self._tools.values()
        ]

    def _entrypoint(self, name: str, sink: SourceSink) -> Any:
        async def entrypoint(**arguments: Any) -> str:
            return await self.call(name, arguments, sink)

        entrypoint.__name__ = name
        return entrypoint


def function_tool(entry: CallableTool) -> FunctionTool:
    """The tool ``entry`` names; ConfigError saying why the callable cannot be one."""
    try:
        func = load_callable(entry.callable)
    except ValueError as exc:
        raise ConfigError(f"{exc}.", field="tools", fix="name an importable function: 'module:function'.") from None
    tool = FunctionTool(func, entry.callable, entry.name)
    if tool.name in TOOL_NAMES:
        raise ConfigError(
            f"{entry.callable} is named {tool.name!r}, like a built-in tool.", field="tools", fix="give it a name:."
        )
    return tool


def render(output: ToolOutput, sink: SourceSink) -> str:
    """The model-facing text of `output`: its sources numbered through `sink`, then its text.

    Snippets are printed only when the tool has no text of its own (search results); a
    fetched page's text already holds what its snippet would say.
    """
    blocks: list[str] = []
    for source in output.sources:
        number = sink.add(source)
        block = f"[{number}] {source.title} — {source.ref}" if source.title else f"[{number}] {source.ref}"
        if source.snippet and not output.text:
            block += f"\n{source.snippet}"
        blocks.append(block)
    if output.text:
        blocks.append(output.text)
    return "\n\n".join(blocks)


def _since(started: float) -> float:
    return time.perf_counter() - started
