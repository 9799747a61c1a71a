"""A whole run whose SEARCH executor has an MCP server in agents.yaml: a hosted-style model (a
loopback fake OpenAI server) calls the server's tool, and its answer is a cited source of the
node and a traced call; a server that does not start, or (offline) one reached by a URL off this
machine, stops the run before any model call."""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAIServer, Reply, fake_openai_server, json_reply, tool_call

from sentient import ProfiledSentientAgent
from sentient.exceptions import ConfigError
from sentient.resources import agent_configs_dir
from sentient.settings import Settings

FIXTURE = Path(__file__).parent / "mcp_fixture_server.py"
SEARCH_TOOLS = "    tools: [docs_search, web_search, fetch_page]\n"


def team(body: dict[str, Any]) -> Reply:
    kind = body["response_format"]["json_schema"]["name"]
    messages = body["messages"]
    if kind == "PlanOutput":
        return json_reply(
            {
                "subtasks": [
                    {"goal": "Who is on call for Kestrel?", "task_type": "SEARCH", "depends_on_indices": []},
                    {"goal": "Write the answer", "task_type": "WRITE", "depends_on_indices": [0]},
                ]
            }
        )
    if kind == "Verdict":
        return json_reply({"supports": True})
    offered = {t["function"]["name"] for t in body.get("tools", [])}
    if "wiki_lookup" in offered and messages[-1]["role"] == "user":
        return tool_call("wiki_lookup", {"term": "Kestrel"})
    if messages[-1]["role"] == "tool":
        (number,) = re.findall(r"^\[(\d+)\] lookup \(MCP server wiki\)", messages[-1]["content"], re.MULTILINE)
        if kind == "SourcedAnswer":
            return json_reply({"answer": "Kestrel's on-call rotation is weekly.", "source": int(number)})
        return json_reply({"answer": f"Kestrel's on-call rotation is weekly [{number}]."})
    return json_reply({"answer": "Kestrel rotates weekly [1]."})


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with fake_openai_server(default=team) as server:
        yield server


def configs_with(tmp_path: Path, mcp: str) -> Path:
    folder = tmp_path / "agent_configs"
    shutil.copytree(agent_configs_dir(), folder)
    agents = folder / "agents.yaml"
    text = agents.read_text()
    assert SEARCH_TOOLS in text
    agents.write_text(text.replace(SEARCH_TOOLS, f"    tools: [docs_search]\n    mcp: [{mcp}]\n", 1))
    return folder


def agent_for(tmp_path: Path, server: FakeOpenAIServer, mcp: str, *, offline: bool = False) -> ProfiledSentientAgent:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "billing.md").write_text("# Billing\n\nInvoices are sent monthly.\n")
    settings = Settings(
        model=f"openai-compatible:{server.base_url}:fake",
        cache_dir=tmp_path / "cache",
        results_dir=tmp_path / "results",
        user_config=tmp_path / "config.yaml",
        config_dir=configs_with(tmp_path, mcp),
        offline=offline,
    )
    return ProfiledSentientAgent.create_with_profile(
        "general_agent", settings=settings, docs=docs, max_depth=1, skip_atomization=True
    )


async def test_an_mcp_tool_answer_is_a_cited_source_and_a_traced_call(tmp_path: Path, server: FakeOpenAIServer) -> None:
    mcp = f"{{name: wiki, command: [{json.dumps(sys.executable)}, {json.dumps(str(FIXTURE))}], timeout_s: 20}}"
    result = await agent_for(tmp_path, server, mcp).arun("Who is on call for Kestrel?", project_id="mcp")

    assert result.status == "completed", result.error
    (searched,) = [n for n in result.graph if any(s.ref == "mcp://wiki/lookup?term=Kestrel" for s in n.sources)]
    assert "mcp://wiki/lookup?term=Kestrel" in result.report_markdown
    trace = json.loads((tmp_path / "results" / "mcp" / "traces" / f"{searched.task_id}.json").read_text())
    [executor_call] = [c for c in trace["calls"] if c["role"] == "executor"]
    assert [(c["tool"], c["server"]) for c in executor_call["tool_calls"]] == [("wiki_lookup", "wiki")]


async def test_a_server_that_does_not_start_stops_the_run_before_any_model_call(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    agent = agent_for(tmp_path, server, "{name: wiki, command: [sentient-no-such-wiki-server]}")

    with pytest.raises(ConfigError) as error:
        await agent.arun("Who is on call for Kestrel?", project_id="broken")

    message = str(error.value)
    assert "agents.yaml, field 'agents (search_executor).mcp (wiki)'" in message
    assert "MCP server 'wiki' did not start: FileNotFoundError" in message
    assert "\n" not in message
    assert server.requests == [], "no model was asked anything"


@pytest.mark.parametrize("url", ["https://mcp.example.com/mcp", "http://10.0.0.7:8765/mcp", "http://[2001:db8::1]/mcp"])
async def test_offline_a_server_reached_by_url_off_this_machine_stops_the_run_before_any_model_call(
    tmp_path: Path, server: FakeOpenAIServer, url: str
) -> None:
    agent = agent_for(tmp_path, server, f"{{name: wiki, url: {json.dumps(url)}}}", offline=True)

    with pytest.raises(ConfigError) as error:
        await agent.arun("Who is on call for Kestrel?", project_id="offline")

    message = str(error.value)
    assert "agents.yaml, field 'agents (search_executor).mcp (wiki)'" in message
    assert f"offline: MCP server 'wiki' is reached by URL ({url})." in message
    assert "\n" not in message
    assert server.requests == [], "no model was asked anything"


async def test_offline_a_server_on_this_machine_is_still_used(
    tmp_path: Path, server: FakeOpenAIServer, http_server: str
) -> None:
    mcp = f"{{name: wiki, url: {json.dumps(http_server)}, timeout_s: 20}}"

    result = await agent_for(tmp_path, server, mcp, offline=True).arun("Who is on call for Kestrel?", project_id="mcp")

    assert result.status == "completed", result.error
    assert "mcp://wiki/lookup?term=Kestrel" in result.report_markdown
