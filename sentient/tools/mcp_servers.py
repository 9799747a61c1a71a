"""Tools from MCP servers, over stdio or streamable HTTP, through the official ``mcp`` SDK.

:func:`connect` starts (stdio) or reaches (HTTP) one server declared in agents.yaml, lists its
tools and keeps the session open in the caller's exit stack; a server that cannot be started or
reached is a :class:`McpStartError` (the run turns it into a one-line configuration error before
any model call). Each of its tools is an :class:`McpTool` named ``server_tool``; every call has
the server's ``timeout_s``. A result's resources become its sources; a result without any is
cited as the call itself (``mcp://wiki/lookup?term=...``). The server's own error output is kept
in a temporary file, and its last line explains a server that exited.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, EmbeddedResource, ResourceLink, TextContent, TextResourceContents
from mcp.types import Tool as McpToolSpec
from pydantic_core import to_jsonable_python

from sentient.exceptions import SentientError, ToolError
from sentient.graph.node import Source
from sentient.tools.base import ToolOutput, call_source
from sentient.tools.specs import McpServer


class McpStartError(SentientError):
    """An MCP server that could not be started, reached or listed."""

    def __init__(self, server: str, reason: str) -> None:
        self.server = server
        self.reason = reason
        super().__init__(f"MCP server '{server}' did not start: {reason}")


class McpSession:
    """One connected MCP server: its tools and its calls."""

    def __init__(self, config: McpServer, client: Client, tools: list[McpToolSpec]) -> None:
        self.config = config
        self._client = client
        self.tools = [McpTool(self, spec) for spec in tools if config.tools is None or spec.name in config.tools]

    @property
    def name(self) -> str:
        return self.config.name

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call ``tool``; ToolError when the server fails or takes longer than ``timeout_s``."""
        timeout = self.config.timeout_s
        try:
            async with asyncio.timeout(timeout):
                return await self._client.call_tool(tool, arguments)
        except TimeoutError:
            raise ToolError(f"MCP server '{self.name}' did not answer {tool} within {timeout:g} s") from None
        except (MCPError, OSError) as exc:
            raise ToolError(f"MCP server '{self.name}' failed on {tool}: {_reason(exc)}") from exc


class McpTool:
    """One tool of a connected MCP server; the server checks the arguments against its schema."""

    def __init__(self, session: McpSession, spec: McpToolSpec) -> None:
        self._session = session
        self._spec = spec
        self.server = session.name
        self.name = f"{session.name}_{spec.name}"
        self.description = f"{spec.description or spec.name} (from the MCP server '{session.name}')"
        self.parameters: dict[str, Any] = spec.input_schema

    def check(self, arguments: object) -> dict[str, Any]:
        if not isinstance(arguments, dict):
            raise ToolError(f"{self.name} takes a JSON object of arguments, not {type(arguments).__name__}")
        return dict(arguments)

    async def run(self, **arguments: Any) -> ToolOutput:
        result = await self._session.call(self._spec.name, arguments)
        texts: list[str] = []
        sources: list[Source] = []
        for block in result.content:
            if isinstance(block, TextContent):
                texts.append(block.text)
            elif isinstance(block, ResourceLink):
                sources.append(
                    Source(ref=str(block.uri), title=block.title or block.name, snippet=block.description or "")
                )
            elif isinstance(block, EmbeddedResource):
                resource = block.resource
                body = resource.text if isinstance(resource, TextResourceContents) else ""
                sources.append(Source(ref=str(resource.uri), snippet=body[:300]))
                texts.append(body)
        if not texts and result.structured_content is not None:
            texts.append(json.dumps(to_jsonable_python(result.structured_content), ensure_ascii=False))
        text = "\n".join(t for t in texts if t)
        if result.is_error:
            raise ToolError(f"{self.name}: {text or 'the server reported an error'}")
        if not sources:
            ref = f"mcp://{self._session.name}/{self._spec.name}"
            sources.append(call_source(ref, f"{self._spec.name} (MCP server {self._session.name})", arguments, text))
        return ToolOutput(text=text, sources=sources)


async def connect(config: McpServer, stack: AsyncExitStack, folder: Path) -> McpSession:
    """Start or reach the server, list its tools, and keep it open until ``stack`` closes.

    ``folder`` is the default working directory of a stdio server (the agents.yaml folder).
    Call it, and close ``stack``, in one task: the SDK's sessions are bound to the task that
    opened them.

    Raises:
        McpStartError: the command does not start, the server exits or answers nothing usable,
            the URL does not answer, or any of it takes longer than ``timeout_s``.
    """
    errors = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))  # noqa: SIM115
    target: Any
    if config.command is not None:
        params = StdioServerParameters(
            command=config.command[0], args=config.command[1:], env=config.env or None, cwd=config.cwd or folder
        )
        target = stdio_client(params, errlog=errors)
    else:
        assert config.url is not None
        target = config.url
    client = Client(target, read_timeout_seconds=config.timeout_s)
    try:
        async with asyncio.timeout(config.timeout_s):
            await stack.enter_async_context(client)
            return McpSession(config, client, await _all_tools(client))
    except TimeoutError:
        raise McpStartError(config.name, _said(errors) or f"no answer within {config.timeout_s:g} s") from None
    except Exception as exc:  # the SDK and its transports raise anything from OSError to exception groups
        raise McpStartError(config.name, _said(errors) or _reason(exc)) from exc


async def _all_tools(client: Client) -> list[McpToolSpec]:
    tools: list[McpToolSpec] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools


def _reason(exc: BaseException) -> str:
    """One line for ``exc``, looking inside the exception groups the SDK's task groups raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _said(errors: Any) -> str:
    """The last line a stdio server wrote to its error output, if any."""
    errors.flush()
    errors.seek(0)
    lines = [line.strip() for line in errors.read().splitlines() if line.strip()]
    return f"it said: {lines[-1]}" if lines else ""
