"""Tools from MCP servers: a real fixture server (tests/tools/mcp_fixture_server.py) over stdio and
over streamable HTTP on loopback (the ``http_server`` fixture of conftest.py); its results as sources,
its timeouts, and servers that fail to start."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest

from sentient.tools.base import ToolSettings
from sentient.tools.mcp_servers import McpSession, McpStartError, connect
from sentient.tools.specs import McpServer
from sentient.tools.toolbox import SourceSink, ToolBox

HERE = Path(__file__).parent
FIXTURE = [sys.executable, str(HERE / "mcp_fixture_server.py")]


@asynccontextmanager
async def wiki_server(tmp_path: Path) -> AsyncIterator[McpSession]:
    """The stdio fixture server (pytest-asyncio runs a fixture's setup and teardown in two tasks,
    and the SDK closes a session only in the task that opened it)."""
    config = McpServer(name="wiki", command=FIXTURE, env={"NOTES": str(tmp_path / "notes.txt")}, timeout_s=20)
    async with AsyncExitStack() as stack:
        yield await connect(config, stack, tmp_path)


async def test_stdio_server_tools_are_named_after_the_server_and_keep_its_schema(tmp_path: Path) -> None:
    async with wiki_server(tmp_path) as wiki:
        box = ToolBox.for_agent([], ToolSettings(offline=True), mcp=[wiki])

    specs = {f.name: f.to_dict() for f in box.agno_functions(SourceSink())}

    assert set(specs) == {"wiki_lookup", "wiki_slow", "wiki_fails", "wiki_cite", "wiki_add_note"}
    assert specs["wiki_lookup"]["parameters"]["required"] == ["term"]
    assert "Look a term up in the team wiki." in specs["wiki_lookup"]["description"]


async def test_a_stdio_call_is_a_source_and_a_traced_call_naming_tool_and_server(tmp_path: Path) -> None:
    sink = SourceSink()
    async with wiki_server(tmp_path) as wiki:
        box = ToolBox.for_agent([], ToolSettings(offline=True), mcp=[wiki])
        text = await box.call("wiki_lookup", {"term": "Kestrel"}, sink)

    assert text == (
        "[1] lookup (MCP server wiki) — mcp://wiki/lookup?term=Kestrel\n\n"
        "Kestrel is the internal billing service; its on-call rotation is weekly."
    )
    (call,) = sink.calls
    assert (call.tool, call.server, call.error) == ("wiki_lookup", "wiki", None)


async def test_resource_links_in_a_result_are_its_sources(tmp_path: Path) -> None:
    sink = SourceSink()
    async with wiki_server(tmp_path) as wiki:
        box = ToolBox.for_agent([], ToolSettings(offline=True), mcp=[wiki])
        await box.call("wiki_cite", {"term": "osprey"}, sink)

    assert [(s.ref, s.title) for s in sink.sources] == [("https://wiki.example/osprey", "osprey page")]


async def test_a_failing_tool_and_a_slow_one_are_errors_the_model_reads(tmp_path: Path) -> None:
    config = McpServer(name="wiki", command=FIXTURE, timeout_s=3)
    async with AsyncExitStack() as stack:
        box = ToolBox.for_agent([], ToolSettings(offline=True), mcp=[await connect(config, stack, tmp_path)])
        sink = SourceSink()

        failed = await box.call("wiki_fails", {"reason": "disk full"}, sink)
        slow = await box.call("wiki_slow", {"seconds": 30}, sink)
        after = await box.call("wiki_lookup", {"term": "osprey"}, sink)

    assert failed.startswith("Error: wiki_fails: ")
    assert slow == "Error: MCP server 'wiki' did not answer slow within 3 s"
    assert after.endswith("it times out after 750 ms."), "the server still answers after a call timed out"


async def test_only_the_listed_tools_of_a_server_are_offered(tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        session = await connect(McpServer(name="w", command=FIXTURE, tools=["lookup"]), stack, tmp_path)

    assert [t.name for t in session.tools] == ["w_lookup"]


async def test_streamable_http_server_tools_are_called_like_stdio_ones(http_server: str, tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        session = await connect(McpServer(name="api", url=http_server, timeout_s=20), stack, tmp_path)
        sink = SourceSink()
        text = await ToolBox.for_agent([], ToolSettings(offline=True), mcp=[session]).call(
            "api_lookup", {"term": "osprey"}, sink
        )

    assert text.startswith("[1] lookup (MCP server api) — mcp://api/lookup?term=osprey")
    assert sink.calls[0].server == "api"


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        (McpServer(name="gone", command=["sentient-no-such-program"]), "FileNotFoundError"),
        (
            McpServer(name="dies", command=[sys.executable, "-c", "raise SystemExit('no licence key')"]),
            "no licence key",
        ),
        (McpServer(name="mute", command=[sys.executable, "-c", "import time; time.sleep(60)"], timeout_s=2), "2 s"),
        (McpServer(name="nobody", url="http://127.0.0.1:9/mcp", timeout_s=10), "ConnectError"),
    ],
)
async def test_a_server_that_does_not_start_says_why_in_one_line(
    config: McpServer, reason: str, tmp_path: Path
) -> None:
    async with AsyncExitStack() as stack:
        with pytest.raises(McpStartError) as error:
            await connect(config, stack, tmp_path)

    assert str(error.value).startswith(f"MCP server '{config.name}' did not start: ")
    assert reason in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("url", "remote"),
    [
        ("http://localhost:8765/mcp", False),
        ("http://LocalHost./mcp", False),
        ("http://127.0.0.1:8765/mcp", False),
        ("http://127.4.5.6/mcp", False),
        ("http://[::1]:8765/mcp", False),
        ("https://mcp.example.com/mcp", True),
        ("http://localhost.example.com/mcp", True),
        ("http://192.168.1.4/mcp", True),
        ("http://[2001:db8::1]/mcp", True),
    ],
)
def test_a_server_is_remote_unless_its_url_is_on_this_machine(url: str, remote: bool) -> None:
    assert McpServer(name="api", url=url).remote is remote
    assert McpServer(name="wiki", command=["wiki-server"]).remote is False
