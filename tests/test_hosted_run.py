"""Whole runs against a hosted-style model over real HTTP (a loopback fake OpenAI server):
tool calls reach executors and their sources reach the report, cost is counted and budgeted,
per-role models and the --model override pick the right model, and the cache answers re-runs."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAIServer, Reply, fake_openai_server, json_reply, tool_call

from sentient import ProfiledSentientAgent
from sentient.agents.models.fake import ScriptedModel
from sentient.exceptions import ConfigError
from sentient.resources import agent_configs_dir
from sentient.settings import Settings
from sentient.store import ProjectStore

GOAL = "How do Python lists differ from tuples?"
ENGINE = {"max_depth": 1, "skip_atomization": True}


def schema_name(body: dict[str, Any]) -> str:
    return body["response_format"]["json_schema"]["name"]


def research_team(body: dict[str, Any]) -> Reply:
    """Answers like a hosted model: a two-step plan; the SEARCH executor first calls docs_search."""
    kind = schema_name(body)
    messages = body["messages"]
    if kind == "PlanOutput":
        return json_reply(
            {
                "subtasks": [
                    {"goal": "Find how tuples behave", "task_type": "SEARCH", "depends_on_indices": []},
                    {"goal": "Write the comparison", "task_type": "WRITE", "depends_on_indices": [0]},
                ]
            }
        )
    if kind == "Verdict":
        return json_reply({"supports": True})
    if kind == "Reading":  # the named passage read again, without the answer
        return json_reply({"answer": "an immutable sequence"})
    offered = {t["function"]["name"] for t in body.get("tools", [])}
    if kind == "SourcedAnswer" and "docs_search" in offered and messages[-1]["role"] == "user":
        return tool_call("docs_search", {"query": "tuple immutable dict key"})
    if kind == "SourcedAnswer" and messages[-1]["role"] == "tool":
        # Name the tuples document the tool found as the passage that states the answer.
        (number,) = re.findall(r"^\[(\d+)\] .*tuples\.md$", messages[-1]["content"], re.MULTILINE)[:1]
        return json_reply(
            {
                "answer": "Tuples are immutable and can be dict keys.",
                "short": "immutable sequence",
                "source": int(number),
            }
        )
    if kind == "ExecutionOutput":
        return json_reply({"answer": "Lists change; tuples do not [1]."})
    return json_reply({"answer": "# Lists and tuples\n\nTuples are immutable [1], lists are not."})


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with fake_openai_server(default=research_team) as server:
        yield server


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "lists.md").write_text("# Lists\n\nA list is a mutable sequence that grows with append.\n")
    (folder / "tuples.md").write_text("# Tuples\n\nA tuple is an immutable sequence; tuples can be dict keys.\n")
    return folder


def settings_for(tmp_path: Path, model: str, **extra: Any) -> Settings:
    return Settings(
        model=model,
        cache_dir=tmp_path / "cache",
        results_dir=tmp_path / "results",
        user_config=tmp_path / "config.yaml",
        **extra,
    )


def model_of(server: FakeOpenAIServer, name: str = "fake") -> str:
    return f"openai-compatible:{server.base_url}:{name}"


async def test_tool_sources_reach_the_report_and_every_citation_resolves(
    tmp_path: Path, server: FakeOpenAIServer, docs: Path
) -> None:
    settings = settings_for(tmp_path, model_of(server))
    agent = ProfiledSentientAgent.create_with_profile("general_agent", settings=settings, docs=docs, **ENGINE)
    result = await agent.arun(GOAL, project_id="hosted")
    assert result.status == "completed", result.error

    search = result.graph.get("root.0")
    assert any(s.ref.endswith("tuples.md") for s in search.sources), "the tool's source is recorded on the node"
    tool_requests = [b for b in server.requests if b["messages"][-1]["role"] == "tool"]
    assert len(tool_requests) == 1, "agno ran the tool and sent its result back"

    report = result.report_markdown
    body, _, references = report.partition("## References")
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", body)}
    listed = dict(re.findall(r"^(\d+)\. .*?`([^`]+)`$", references, re.MULTILINE))
    assert cited, "the report cites something"
    assert cited <= {int(n) for n in listed}, f"every [n] resolves: cited {cited}, listed {sorted(listed)}"
    assert all((docs / ref).is_file() for ref in listed.values()), "references name the documents used, in the folder"
    assert any(ref.endswith("tuples.md") for ref in listed.values())

    trace = json.loads((tmp_path / "results" / "hosted" / "traces" / "root.0.json").read_text())
    [executor_call] = [c for c in trace["calls"] if c["role"] == "executor"]
    assert executor_call["tool_calls"][0]["tool"] == "docs_search"


async def test_cost_is_counted_per_call_node_and_project_and_a_cost_budget_stops_the_run(
    tmp_path: Path, server: FakeOpenAIServer, docs: Path
) -> None:
    model = model_of(server)
    # 11 prompt + 7 completion tokens per fake response: $0.011 + $0.014 = $0.025 per model call.
    (tmp_path / "config.yaml").write_text(
        f"prices:\n  {model}: {{input_per_million: 1000, output_per_million: 2000}}\n"
    )
    settings = settings_for(tmp_path, model)
    agent = ProfiledSentientAgent.create_with_profile("general_agent", settings=settings, docs=docs, **ENGINE)
    store = ProjectStore.open(settings.results_dir)
    try:
        full = await agent.arun(GOAL, project_id="priced", store=store)
        calls = len(server.requests)
        assert full.stats.cost_usd == pytest.approx(0.025 * calls)
        assert sum(n.cost_usd for n in full.graph) == pytest.approx(full.stats.cost_usd)
        assert store.get_project("priced").stats["cost_usd"] == pytest.approx(full.stats.cost_usd)
        assert sum(c["cost_usd"] for c in store.calls("priced")) == pytest.approx(full.stats.cost_usd)

        stopped = await agent.arun(GOAL, project_id="budget", store=store, max_cost_usd=0.05)
        assert stopped.status == "stopped"
        assert "cost budget reached" in (stopped.error or "")
        assert stopped.stats.cost_usd < full.stats.cost_usd
        assert "**Partial report**" in stopped.report_markdown
    finally:
        store.close()


async def test_per_role_models_and_the_global_override(tmp_path: Path, server: FakeOpenAIServer, docs: Path) -> None:
    config = tmp_path / "agent_configs"
    shutil.copytree(agent_configs_dir(), config)
    profile = config / "profiles" / "general_agent.yaml"
    profile.write_text(
        profile.read_text()
        + f"models:\n  planner: {model_of(server, 'strong')}\n  executor: {model_of(server, 'cheap')}\n"
        + f"  aggregator: {model_of(server, 'cheap')}\n"
    )
    settings = settings_for(tmp_path, "scripted", config_dir=config)
    agent = ProfiledSentientAgent.create_with_profile("general_agent", settings=settings, docs=docs, **ENGINE)
    await agent.arun(GOAL, write_files=False)
    by_schema = {(schema_name(b), b["model"]) for b in server.requests}
    assert ("PlanOutput", "strong") in by_schema
    assert ("ExecutionOutput", "cheap") in by_schema
    assert not any(model == "strong" for kind, model in by_schema if kind != "PlanOutput")

    server.requests.clear()
    override = ProfiledSentientAgent.create_with_profile(
        "general_agent", settings=settings, docs=docs, model=model_of(server, "everyone"), **ENGINE
    )
    await override.arun(GOAL, write_files=False)
    assert {b["model"] for b in server.requests} == {"everyone"}


def test_a_missing_api_key_is_named_before_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = settings_for(tmp_path, "openai:gpt-4o-mini")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set") as info:
        ProfiledSentientAgent.create_with_profile("general_agent", settings=settings)
    assert "export OPENAI_API_KEY" in (info.value.fix or "")


async def test_a_rerun_with_the_cache_costs_zero_model_calls(tmp_path: Path, docs: Path) -> None:
    settings = settings_for(tmp_path, "scripted", cache_responses=True)
    first_model, second_model = ScriptedModel(), ScriptedModel()
    first = await ProfiledSentientAgent.create_with_profile(
        "deep_research_agent", settings=settings, docs=docs, model=first_model
    ).arun(GOAL, write_files=False)
    second = await ProfiledSentientAgent.create_with_profile(
        "deep_research_agent", settings=settings, docs=docs, model=second_model
    ).arun(GOAL, write_files=False)
    assert first_model.calls and first.stats.model_calls == len(first_model.calls)
    assert second_model.calls == []
    assert second.stats.model_calls == 0
    assert second.stats.agent_calls == first.stats.agent_calls
    assert second.report_markdown == first.report_markdown
