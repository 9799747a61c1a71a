"""Whole runs against the chaos provider (a loopback OpenAI-compatible server that injects faults):
one bad response never loses a run, hangs are bounded, FAILED work is resumed without redoing
what is DONE, claims are atomic, and budgets count every request across resumes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.chaos_server import FAST_FAULTS, ChaosServer, Fault, chaos_server
from loguru import logger

from sentient import ProfiledSentientAgent
from sentient.graph.status import TaskStatus
from sentient.settings import Settings
from sentient.store import Owner, ProjectBusyError, ProjectStore

GOAL = "How do Python lists differ from tuples?"
# Two executors under the root, no atomizer, one call at a time: faults land where the script says.
# No second look at the unconfirmed report (test_answer_pipeline.py): requests are counted exactly.
ENGINE: dict[str, Any] = {"max_depth": 1, "skip_atomization": True, "max_concurrent_llm_calls": 1}


@pytest.fixture
def server() -> Iterator[ChaosServer]:
    with chaos_server(seed=1) as server:
        yield server


@pytest.fixture
def settings(tmp_path: Path, server: ChaosServer) -> Settings:
    return Settings(
        model=server.model(),
        cache_dir=tmp_path / "cache",
        results_dir=tmp_path / "results",
        user_config=tmp_path / "config.yaml",
    )


@pytest.fixture
def store(settings: Settings) -> Iterator[ProjectStore]:
    with ProjectStore.open(settings.results_dir) as store:
        yield store


def agent(settings: Settings, **engine: Any) -> ProfiledSentientAgent:
    docs = settings.cache_dir.parent / "docs"  # SEARCH executors search this, not Python's own docs
    if not docs.is_dir():
        docs.mkdir(parents=True)
        (docs / "tuples.md").write_text("# Tuples\n\nA tuple is an immutable sequence; tuples can be dict keys.\n")
    return ProfiledSentientAgent.create_with_profile(
        "general_agent", settings=settings, docs=docs, **{**ENGINE, **engine}
    )


def schemas(server: ChaosServer, since: int = 0) -> list[str]:
    """The structured outputs asked for, in order; the verifier's (one or two per answer from passages) aside."""
    names = [b["response_format"]["json_schema"]["name"] for b in server.requests[since:]]
    return [name for name in names if name not in ("Verdict", "Choice")]


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    seen: list[str] = []
    sink = logger.add(lambda message: seen.append(str(message)), level="WARNING", format="{message}")
    yield seen
    logger.remove(sink)


# -- every fault kind is survived ---------------------------------------------------------------


@pytest.mark.parametrize("fault", FAST_FAULTS, ids=str)
async def test_one_bad_response_of_any_kind_costs_a_retry_not_the_run(
    settings: Settings, server: ChaosServer, fault: Fault, warnings: list[str]
) -> None:
    server.script(fault)  # the root planner's first request
    result = await agent(settings).arun(GOAL, write_files=False)

    assert result.status == "completed", result.error
    assert server.injected[0] is fault
    assert schemas(server)[:2] == ["PlanOutput", "PlanOutput"], "the planner asked again"
    assert len(schemas(server)) == 5, "one extra request: plan, plan, two executors, aggregator"
    if fault is not Fault.SCHEMA:  # a schema violation is fed back to the model, not retried as transient
        assert warnings, "the retry is logged"
        assert all(": " in w.split("retrying")[0] and "(attempt 1)" in w for w in warnings), warnings


@pytest.mark.parametrize(
    ("fault", "name"),
    [
        (Fault.EMPTY_CHOICES, "MalformedResponseError"),
        (Fault.NO_MESSAGE, "MalformedResponseError"),
        (Fault.MALFORMED, "MalformedResponseError"),
        (Fault.DROP, "ModelProviderError"),
    ],
)
async def test_retry_warnings_name_the_error(
    settings: Settings, server: ChaosServer, fault: Fault, name: str, warnings: list[str]
) -> None:
    server.script(fault)
    await agent(settings).arun(GOAL, write_files=False)
    [warning] = warnings
    assert f"{name}: " in warning, warning


async def test_a_response_that_stays_malformed_fails_the_node_with_a_named_error(
    settings: Settings, server: ChaosServer
) -> None:
    # One call at a time holds its slot through its retries: the first executor gets all four.
    server.script(None, Fault.EMPTY_CHOICES, Fault.EMPTY_CHOICES, Fault.EMPTY_CHOICES, Fault.EMPTY_CHOICES)
    result = await agent(settings, failure_policy="continue").arun(GOAL, write_files=False)

    [failed] = [n for n in result.graph if n.status is TaskStatus.FAILED]
    assert "after 4 attempt(s): MalformedResponseError" in (failed.error or ""), failed.error
    assert "list index out of range" not in (failed.error or "")
    assert result.status == "completed_with_failures"
    not_covered = result.report_markdown.split("## Not covered")[1]
    assert f"- {failed.task_id}: {failed.goal}" in not_covered


async def test_a_provider_that_never_answers_is_bounded_by_the_call_deadline(
    settings: Settings, server: ChaosServer
) -> None:
    server.script(*[Fault.HANG] * 10)
    result = await agent(settings, agent_timeout_s=0.2, call_deadline_s=0.5).arun(GOAL, write_files=False)

    assert result.status == "failed"
    assert "deadline" in (result.error or ""), result.error
    assert len(server.requests) < 4, "attempts stop at the deadline, not after 4 timeouts"


# -- resume of failed work ---------------------------------------------------------------------


async def test_resume_retries_a_failed_root_aggregation_without_rerunning_its_done_children(
    settings: Settings, server: ChaosServer, store: ProjectStore
) -> None:
    aggregation = lambda body: body["response_format"]["json_schema"]["name"] == "AggregationOutput"  # noqa: E731
    server.fail_when(aggregation, Fault.EMPTY_CHOICES)  # the aggregator never gets an answer
    failed = await agent(settings).arun(GOAL, project_id="p-agg", store=store, write_files=False)
    server.rules.clear()
    assert failed.status == "failed"
    assert "aggregation failed" in (failed.error or "")
    assert store.get_project("p-agg").status == "failed"

    before = len(server.requests)
    resumed = await agent(settings).aresume("p-agg", store=store, write_files=False)

    assert resumed.status == "completed", resumed.error
    assert schemas(server, before) == ["AggregationOutput"], "only the aggregation ran again"
    assert {n.task_id: n.status for n in store.load_graph("p-agg")} == dict.fromkeys(
        ("root", "root.0", "root.1"), TaskStatus.DONE
    )


async def test_resume_reruns_a_failed_subtask_and_aggregates_again(
    settings: Settings, server: ChaosServer, store: ProjectStore
) -> None:
    server.script(None, Fault.SCHEMA)  # the first executor's answer is invalid, and is not retried
    first = await agent(settings, failure_policy="continue", max_validation_retries=0).arun(
        GOAL, project_id="p-sub", store=store
    )
    assert first.status == "completed_with_failures"
    assert store.get_project("p-sub").failed_nodes == 1

    before = len(server.requests)
    resumed = await agent(settings).aresume("p-sub", store=store, write_files=False)

    assert resumed.status == "completed", resumed.error
    assert schemas(server, before) == ["ExecutionOutput", "AggregationOutput"], "the other executor was kept"
    assert "## Not covered" not in resumed.report_markdown


# -- claims --------------------------------------------------------------------------------------


def test_of_two_simultaneous_claims_exactly_one_wins(settings: Settings, store: ProjectStore) -> None:
    store.create_project("p-claim", GOAL, "general_agent", {})
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        pids = [os.getpid(), other.pid]
        outcomes: list[str] = []
        barrier = threading.Barrier(2)

        def claim(pid: int) -> None:
            with ProjectStore.open(settings.results_dir) as mine:  # a connection of its own, as a process has
                barrier.wait()
                try:
                    mine.claim("p-claim", Owner.local(pid))
                    outcomes.append("won")
                except ProjectBusyError as exc:
                    outcomes.append(str(exc))

        threads = [threading.Thread(target=claim, args=(pid,)) for pid in pids]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes)[-1] == "won" and outcomes.count("won") == 1, outcomes
        [refusal] = [o for o in outcomes if o != "won"]
        assert "is already being run by process" in refusal
    finally:
        other.kill()
        other.wait()


async def test_a_project_held_by_a_live_process_is_not_resumed(
    settings: Settings, server: ChaosServer, store: ProjectStore
) -> None:
    store.create_project("p-held", GOAL, "general_agent", {})
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        store.claim("p-held", Owner.local(other.pid))
        with pytest.raises(ProjectBusyError, match=f"process {other.pid}"):
            await agent(settings).aresume("p-held", store=store, write_files=False)
        assert server.requests == [], "refused before any model call"
    finally:
        other.kill()
        other.wait()
    # Its owner is dead now: the project can be taken over.
    resumed = await agent(settings).aresume("p-held", store=store, write_files=False)
    assert resumed.status == "completed"


# -- budgets -------------------------------------------------------------------------------------


async def test_retries_count_against_the_call_budget_and_budgets_add_up_across_resumes(
    settings: Settings, server: ChaosServer, store: ProjectStore
) -> None:
    server.script(Fault.HTTP_500)
    stopped = await agent(settings, max_llm_calls=3).arun(GOAL, project_id="p-calls", store=store, write_files=False)
    assert stopped.status == "stopped"
    assert len(server.requests) == 3, "the failed request counted: plan, plan again, one executor"
    assert store.get_project("p-calls").spent["requests"] == 3

    again = await agent(settings).aresume("p-calls", store=store, write_files=False, max_llm_calls=3)
    assert again.status == "stopped", "the budget is the project's: nothing is left of it"
    assert len(server.requests) == 3

    done = await agent(settings).aresume("p-calls", store=store, write_files=False, max_llm_calls=10)
    assert done.status == "completed"
    assert store.get_project("p-calls").spent["requests"] == len(server.requests)
    # The first run's executor answered as the budget ran out, before the verifier read its passage: a node
    # is done only when verified, so that executor runs again.
    assert schemas(server) == [
        "PlanOutput",
        "PlanOutput",
        "SourcedAnswer",
        "SourcedAnswer",
        "SourcedAnswer",
        "AggregationOutput",
    ]


async def test_a_cost_limit_is_overshot_by_at_most_one_request(
    tmp_path: Path, settings: Settings, store: ProjectStore
) -> None:
    with chaos_server(width=6) as wide:
        model = wide.model()
        # The chaos server reports 40 + 20 tokens per request: $0.04 + $0.04 = $0.08 each.
        (tmp_path / "config.yaml").write_text(
            f"prices:\n  {model}: {{input_per_million: 1000, output_per_million: 2000}}\n"
        )
        wide_settings = settings.model_copy(update={"model": model})
        result = await agent(wide_settings, max_concurrent_llm_calls=6, max_cost_usd=0.2).arun(
            GOAL, project_id="p-cost", store=store, write_files=False
        )
        assert result.status == "stopped"
        spent = store.get_project("p-cost").spent["cost_usd"]
        assert 0.2 <= spent < 0.2 + 0.08 + 1e-9, f"spent ${spent:.2f} of $0.20"
        assert len(wide.requests) == 3, "six executors were ready, but no request starts past the limit"


async def test_every_request_of_a_tool_call_loop_counts(
    tmp_path: Path, settings: Settings, store: ProjectStore
) -> None:
    from fakes.openai_server import fake_openai_server
    from test_hosted_run import research_team  # a SEARCH executor that calls docs_search first

    with fake_openai_server(default=research_team) as hosted:
        model = f"openai-compatible:{hosted.base_url}:fake"
        result = await agent(settings.model_copy(update={"model": model})).arun(
            GOAL, project_id="p-tools", store=store, write_files=False
        )
        assert result.status == "completed"
        assert any(b["messages"][-1]["role"] == "tool" for b in hosted.requests), "a tool loop ran"
        assert store.get_project("p-tools").spent["requests"] == len(hosted.requests)
