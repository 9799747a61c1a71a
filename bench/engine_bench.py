"""Engine benchmark: scheduling efficiency (T1, T2) and per-node engine overhead (T3).

Every run goes through the public API (``ProfiledSentientAgent.create_with_profile(...).arun``)
with the scripted fake model, so the numbers are the engine's own: no network, no weights.

    python bench/engine_bench.py                      # all scenarios, readable table
    python bench/engine_bench.py --json --repeat 5    # one JSON object on stdout
    python bench/engine_bench.py --scenario T3 --profile t3.pstats

See ``bench/README.md`` for what each scenario measures. The bench checks that every run
completed with exactly the tree and the calls its scenario defines; it never asserts timings.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import logging
import platform
import pstats
import re
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger

from sentient.agents.models.fake import FakeCall, FakeRequest, ScriptedModel
from sentient.agents.schemas import AggregationOutput, AtomizerOutput, ExecutionOutput
from sentient.api import ProfiledSentientAgent, RunResult
from sentient.engine.memory import freeze_startup_objects
from sentient.events import AgentCallFinished, Event
from sentient.graph.node import NodeType, TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus
from sentient.settings import FailurePolicy, Settings
from sentient.store import ProjectStore
from sentient.tools.docs_search import DocsIndex

MAX_CONCURRENT = 256  # the largest the settings allow; wider than every scenario's tree
_TAG = re.compile(r"\[#([\d.]*)\]")
# Goals vary like a real project's do: one shared topic word, then varied words. The knowledge
# store searches by goal, so identical goals would make every search match every entry.
_TOPICS = (
    "event loop scheduling",
    "task cancellation semantics",
    "structured concurrency groups",
    "semaphore fairness",
    "timeout handling",
    "exception groups",
    "queue backpressure",
    "subprocess pipes",
    "thread executor bridging",
    "stream reader buffering",
    "signal handling",
    "debug mode warnings",
)
_VERBS = ("Explain", "Compare", "Summarise", "Assess")


class BenchError(AssertionError):
    """A run did not do what its scenario defines (a bench or an engine bug, not slowness)."""


# -- the scripted tree ----------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """A node of the scripted tree: its planned children (none = atomic) and its sibling dependencies."""

    children: tuple[Spec, ...] = ()
    depends_on: tuple[int, ...] = ()

    @property
    def size(self) -> int:
        return 1 + sum(c.size for c in self.children)


def atomic(*depends_on: int) -> Spec:
    return Spec(depends_on=depends_on)


def uniform(*fanouts: int) -> Spec:
    """A tree in which every node at depth ``d`` plans ``fanouts[d]`` independent children."""
    if not fanouts:
        return Spec()
    child = uniform(*fanouts[1:])
    return Spec(children=(child,) * fanouts[0])


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    tree: Spec
    latency_s: float
    max_depth: int
    skip_atomization: bool
    kind: str  # "efficiency" (makespan vs critical path) or "overhead" (engine ms per node)


SCENARIOS = {
    s.name: s
    for s in (
        Scenario(
            name="T1",
            summary="4 subtasks (3 after 0,1); subtasks 0,1 plan 3 children (2 after 0,1); L=0.2s",
            tree=Spec(
                children=(
                    Spec(children=(atomic(), atomic(), atomic(0, 1))),
                    Spec(children=(atomic(), atomic(), atomic(0, 1))),
                    atomic(),
                    atomic(0, 1),
                )
            ),
            latency_s=0.2,
            max_depth=2,
            skip_atomization=False,
            kind="efficiency",
        ),
        Scenario(
            name="T2",
            summary="10 subtasks x 10 atomic children, no dependencies; L=0.05s",
            tree=uniform(10, 10),
            latency_s=0.05,
            max_depth=2,
            skip_atomization=False,
            kind="efficiency",
        ),
        Scenario(
            # A plan holds at most 12 subtasks (PlanOutput), so 10k nodes need four levels.
            name="T3",
            summary="10 x 10 x 10 x 10 tree (11,111 nodes), no atomizer, L=0: pure engine overhead",
            tree=uniform(10, 10, 10, 10),
            latency_s=0.0,
            max_depth=4,
            skip_atomization=True,
            kind="overhead",
        ),
    )
}


def _paths(spec: Spec, path: str = "root") -> dict[str, Spec]:
    """Every node of the tree by the task id the engine will give it (``root``, ``root.0``, ...)."""
    found = {path: spec}
    for i, child in enumerate(spec.children):
        found |= _paths(child, f"{path}.{i}")
    return found


def _goal(task_id: str) -> str:
    tag = task_id.removeprefix("root").lstrip(".")
    n = sum(int(p) * 7**k for k, p in enumerate(tag.split("."))) if tag else 0
    return f"{_VERBS[n % len(_VERBS)]} asyncio {_TOPICS[n % len(_TOPICS)]} [#{tag}]"


def _task_id(text: str) -> str:
    match = _TAG.search(text)
    if match is None:
        raise BenchError(f"no task tag in {text[:200]!r}")
    tag = match.group(1)
    return f"root.{tag}" if tag else "root"


def _atomizer_calls(scenario: Scenario, layer: int) -> bool:
    """Whether the engine asks the atomizer about a child at ``layer`` (AgentProcessor._node_type_for)."""
    return layer < scenario.max_depth and not scenario.skip_atomization


def _check_tree(scenario: Scenario) -> None:
    """The tree must be one the engine's depth rule can produce, or the run cannot match it."""

    def walk(spec: Spec, layer: int, task_id: str) -> None:
        if layer >= scenario.max_depth and spec.children:
            raise BenchError(f"{scenario.name}: {task_id} plans at layer {layer} >= max_depth")
        if not spec.children and layer < scenario.max_depth and (layer == 0 or scenario.skip_atomization):
            raise BenchError(f"{scenario.name}: {task_id} is atomic but the depth rule would plan it")
        for i, child in enumerate(spec.children):
            if any(d >= i for d in child.depends_on):
                raise BenchError(f"{scenario.name}: {task_id}.{i} depends on a later sibling")
            walk(child, layer + 1, f"{task_id}.{i}")

    walk(scenario.tree, 0, "root")


def expected_calls(scenario: Scenario) -> dict[str, int]:
    """Agent calls per role: plan + aggregate per planning node, one executor call per leaf,
    one atomizer call per non-root node above max_depth (unless atomization is skipped)."""
    counts = {"planner": 0, "atomizer": 0, "executor": 0, "aggregator": 0}

    def walk(spec: Spec, layer: int) -> None:
        if not spec.children:
            counts["executor"] += 1
            return
        counts["planner"] += 1
        counts["aggregator"] += 1
        for child in spec.children:
            counts["atomizer"] += _atomizer_calls(scenario, layer + 1)
            walk(child, layer + 1)

    walk(scenario.tree, 0)
    return counts


def critical_calls(scenario: Scenario) -> int:
    """Length, in sequential agent calls, of the longest chain with unlimited concurrency.

    A leaf takes 1 call. A planning node takes 1 (plan) + 1 if its children are atomized (all
    in parallel) + the finish time of its slowest child + 1 (aggregate), where a child starts
    when its sibling dependencies finish. The root is planned without an atomizer call.
    """

    def span(spec: Spec, layer: int) -> int:
        if not spec.children:
            return 1
        finish: list[int] = []
        for child in spec.children:
            start = max((finish[d] for d in child.depends_on), default=0)
            finish.append(start + span(child, layer + 1))
        return 1 + _atomizer_calls(scenario, layer + 1) + max(finish) + 1

    return span(scenario.tree, 0)


# -- the scripted model ---------------------------------------------------------------------


def scripted_model(scenario: Scenario) -> ScriptedModel:
    """A fake model whose planner and atomizer reproduce ``scenario.tree`` exactly."""
    specs = _paths(scenario.tree)

    def plan(request: FakeRequest) -> PlanOutput | BaseException:
        spec = specs.get(_task_id(request.goal))
        if spec is None or not spec.children:
            return BenchError(f"planner called for {request.task_id}, which the scenario does not plan")
        return PlanOutput(
            subtasks=[
                SubTask(
                    goal=_goal(f"{request.task_id}.{i}"),
                    task_type=TaskType.THINK if child.children or i % 2 else TaskType.WRITE,
                    depends_on_indices=list(child.depends_on),
                )
                for i, child in enumerate(spec.children)
            ]
        )

    def atomize(request: FakeRequest) -> AtomizerOutput | BaseException:
        # The subtask in question is in the task part; the context lists its siblings too.
        task = request.prompt.rpartition("## Your task")[2]
        spec = specs.get(_task_id(task))
        if spec is None:
            return BenchError(f"atomizer asked about an unknown subtask: {task[:200]!r}")
        return AtomizerOutput(is_atomic=not spec.children)

    def execute(request: FakeRequest) -> ExecutionOutput:
        return ExecutionOutput(answer=f"Findings for {request.goal}.")

    def aggregate(request: FakeRequest) -> AggregationOutput:
        return AggregationOutput(answer=f"Synthesis for {request.goal}.")

    return ScriptedModel(
        script={"planner": plan, "atomizer": atomize, "executor": execute, "aggregator": aggregate},
        latency=scenario.latency_s,
    )


# -- one run --------------------------------------------------------------------------------


@dataclass
class CallClock:
    """Subscriber that records when each agent call (AgentRunner.run, agno included) ran."""

    spans: list[tuple[float, float]] = field(default_factory=list)

    def __call__(self, event: Event) -> None:
        if isinstance(event, AgentCallFinished):
            self.spans.append((event.started_at, event.started_at + event.latency_s))


@dataclass
class Run:
    result: RunResult
    model: ScriptedModel
    clock: CallClock
    wall_s: float
    baseline_rss_mb: float
    peak_rss_mb: float


def run_once(
    scenario: Scenario, workdir: Path, profiler: cProfile.Profile | None = None, store: ProjectStore | None = None
) -> Run:
    """One run of ``scenario``; with ``store``, every event is persisted as in production."""
    model = scripted_model(scenario)
    docs = DocsIndex()  # empty: the profile has docs_search, and the default would index Python's docs
    agent = ProfiledSentientAgent.create_with_profile(
        "deep_research_agent",
        settings=Settings(results_dir=workdir, cache_dir=workdir),
        model=model,
        docs=docs,
        max_depth=scenario.max_depth,
        force_root_planning=True,
        skip_atomization=scenario.skip_atomization,
        max_concurrent_llm_calls=MAX_CONCURRENT,
        failure_policy=FailurePolicy.FAIL_PARENT,
        max_validation_retries=0,
        knowledge_results=3,
    )
    clock = CallClock()

    async def timed() -> tuple[RunResult, float]:
        started = time.perf_counter()
        result = await agent.arun(_goal("root"), write_files=False, subscribers=[clock], store=store)
        return result, time.perf_counter() - started

    gc.collect()
    baseline = _rss_mb()
    if profiler is not None:
        profiler.enable()
    try:
        result, wall = asyncio.run(timed())
    finally:
        if profiler is not None:
            profiler.disable()
        docs.close()
    run = Run(result, model, clock, wall, baseline, _rss_mb())
    verify(scenario, run)
    return run


def verify(scenario: Scenario, run: Run) -> None:
    """Raise BenchError unless the run built exactly the scenario's tree with exactly its calls."""
    result, name = run.result, scenario.name
    if result.status != "completed":
        raise BenchError(f"{name}: run ended {result.status}: {result.error}")
    specs = _paths(scenario.tree)
    ids = {n.task_id for n in result.graph}
    if ids != specs.keys() or result.stats.nodes != len(specs):
        missing, extra = sorted(specs.keys() - ids)[:5], sorted(ids - specs.keys())[:5]
        raise BenchError(f"{name}: expected {len(specs)} nodes, got {len(ids)} (missing {missing}, extra {extra})")
    for node in result.graph:
        planned = NodeType.PLAN if specs[node.task_id].children else NodeType.EXECUTE
        if node.node_type is not planned or node.status is not TaskStatus.DONE:
            raise BenchError(f"{name}: {node.task_id} is {node.node_type}/{node.status}, expected {planned}/DONE")
    want = expected_calls(scenario)
    got = {role: len(run.model.calls_for(role)) for role in want}
    if got != want or len(run.model.calls) != sum(want.values()) or result.stats.agent_calls != sum(want.values()):
        raise BenchError(f"{name}: expected calls {want}, model saw {got}, run counted {result.stats.agent_calls}")
    if len(run.clock.spans) != sum(want.values()):
        raise BenchError(f"{name}: {len(run.clock.spans)} AgentCallFinished events for {sum(want.values())} calls")


# -- measures -------------------------------------------------------------------------------


def recorded_critical_path(run: Run) -> tuple[int, float]:
    """Critical path over the recorded calls, linked by the engine's rules on the final graph.

    A node's first call (plan or execute) waits for its parent's atomizer calls (or its plan
    when there are none) and for its dependencies' last calls; atomizer calls wait for their
    node's plan; an aggregation waits for its children's last calls. Each call weighs what the
    model measured for it. Returns (calls on the path, seconds on the path).
    """
    graph = run.result.graph
    by_key: dict[tuple[str, str], list[FakeCall]] = {}
    for call in run.model.calls:
        by_key.setdefault((call.request.role, call.request.task_id), []).append(call)

    def one(role: str, task_id: str) -> FakeCall:
        calls = by_key.get((role, task_id), [])
        if len(calls) != 1:
            raise BenchError(f"expected one {role} call for {task_id}, recorded {len(calls)}")
        return calls[0]

    def last(task_id: str) -> FakeCall:
        node = graph.get(task_id)
        return one("aggregator" if node.node_type is NodeType.PLAN else "executor", task_id)

    def first(task_id: str) -> FakeCall:
        node = graph.get(task_id)
        return one("planner" if node.node_type is NodeType.PLAN else "executor", task_id)

    preds: dict[int, list[FakeCall]] = {}
    for node in graph:
        before = [last(d) for d in node.depends_on]
        if node.parent_id is not None:
            before += by_key.get(("atomizer", node.parent_id)) or [first(node.parent_id)]
        preds[id(first(node.task_id))] = before
        if node.node_type is NodeType.PLAN:
            for call in by_key.get(("atomizer", node.task_id), []):
                preds[id(call)] = [first(node.task_id)]
            preds[id(last(node.task_id))] = [last(c) for c in node.children]

    memo: dict[int, tuple[int, float]] = {}

    def longest(call: FakeCall) -> tuple[int, float]:
        key = id(call)
        if key not in memo:
            calls, seconds = max((longest(p) for p in preds[key]), default=(0, 0.0), key=lambda cs: cs[1])
            memo[key] = (calls + 1, seconds + call.finished_at - call.started_at)
        return memo[key]

    return longest(last("root"))


def _union_s(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for start, stop in sorted(spans):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def _interleaved(spans: list[tuple[float, float]], tolerance_s: float = 1e-6) -> int:
    """How many spans start before an earlier-started span has ended."""
    count, end = 0, float("-inf")
    for start, stop in sorted(spans):
        count += start < end - tolerance_s
        end = max(end, stop)
    return count


def _rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux


def measure(scenario: Scenario, run: Run) -> dict[str, Any]:
    calls = len(run.model.calls)
    if scenario.kind == "efficiency":
        path_calls = critical_calls(scenario)
        bound = path_calls * scenario.latency_s
        rec_calls, rec_s = recorded_critical_path(run)
        if rec_calls != path_calls:
            raise BenchError(f"{scenario.name}: recorded critical path has {rec_calls} calls, analytic {path_calls}")
        return {
            "makespan_s": run.wall_s,
            "bound_s": bound,
            "critical_path_calls": path_calls,
            "bound_recorded_s": rec_s,
            "efficiency": bound / run.wall_s,
            "agent_calls": calls,
        }
    nodes = run.result.stats.nodes
    spans = run.clock.spans
    inside = _union_s(spans)  # equals the plain sum when calls do not interleave
    model_spans = [(c.started_at, c.finished_at) for c in run.model.calls]
    return {
        "nodes": nodes,
        "agent_calls": calls,
        "wall_s": run.wall_s,
        "total_ms_per_node": 1000 * run.wall_s / nodes,
        "agent_ms_per_node": 1000 * inside / nodes,
        "overhead_ms_per_node": 1000 * (run.wall_s - inside) / nodes,
        "agent_ms_per_call": 1000 * inside / calls,
        "agent_calls_interleaved": _interleaved(spans),
        "model_calls_interleaved": _interleaved(model_spans),
        "baseline_rss_mb": run.baseline_rss_mb,
        "peak_rss_mb": run.peak_rss_mb,
    }


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for key, value in runs[0].items():
        values = [r[key] for r in runs]
        if key.endswith("rss_mb"):  # process-wide: later runs start at the earlier runs' peak
            merged[key] = round(min(values) if key.startswith("baseline") else max(values), 1)
        elif isinstance(value, float):
            merged[key] = round(statistics.median(values), 6)
        elif isinstance(value, int):
            merged[key] = int(statistics.median(values)) if len(set(values)) > 1 else value
        else:
            merged[key] = value
    headline = "makespan_s" if "makespan_s" in runs[0] else "overhead_ms_per_node"
    merged[f"{headline}_runs"] = [round(r[headline], 6) for r in runs]
    return merged


def bench(names: list[str], repeat: int, warmup: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sentient-bench-") as tmp:
        workdir = Path(tmp)
        if warmup:  # first-use costs (imports, pydantic schemas, agno) are not the engine's
            run_once(Scenario("warmup", "", uniform(2, 2), 0.0, 2, True, "overhead"), workdir)
        freeze_startup_objects()  # as `sentient run`, `serve` and `worker` do after start-up
        results: dict[str, Any] = {}
        for name in names:
            scenario = SCENARIOS[name]
            _check_tree(scenario)
            runs = [measure(scenario, run_once(scenario, workdir)) for _ in range(repeat)]
            results[name] = {"summary": scenario.summary, "latency_s": scenario.latency_s, **median_of(runs)}
    return {
        "repeat": repeat,
        "warmup": warmup,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "scenarios": results,
    }


def profile(names: list[str], out: Path, top: int = 30) -> None:
    """Run each scenario once under cProfile; write the stats to ``out`` and a summary to stderr."""
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory(prefix="sentient-bench-") as tmp:
        for name in names:
            run_once(SCENARIOS[name], Path(tmp), profiler)
    profiler.dump_stats(out)
    stats = pstats.Stats(profiler, stream=sys.stderr)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


# -- output ---------------------------------------------------------------------------------


def table(report: dict[str, Any]) -> str:
    lines = [f"median of {report['repeat']} run(s), Python {report['python']}"]
    for name, r in report["scenarios"].items():
        lines.append(f"\n{name}: {r['summary']}")
        if "makespan_s" in r:
            rows: list[tuple[str, Any]] = [
                ("makespan", f"{r['makespan_s']:.3f} s"),
                ("bound", f"{r['bound_s']:.3f} s ({r['critical_path_calls']} calls x {r['latency_s']} s)"),
                ("bound (recorded calls)", f"{r['bound_recorded_s']:.3f} s"),
                ("efficiency", f"{r['efficiency']:.3f}"),
                ("agent calls", r["agent_calls"]),
            ]
        else:
            rows = [
                ("nodes", r["nodes"]),
                ("agent calls", r["agent_calls"]),
                ("wall", f"{r['wall_s']:.2f} s"),
                ("total per node", f"{r['total_ms_per_node']:.3f} ms"),
                ("in agent calls per node", f"{r['agent_ms_per_node']:.3f} ms"),
                ("engine overhead per node", f"{r['overhead_ms_per_node']:.3f} ms"),
                ("interleaved agent calls", r["agent_calls_interleaved"]),
                ("peak RSS", f"{r['peak_rss_mb']:.0f} MB (before the run {r['baseline_rss_mb']:.0f} MB)"),
            ]
        lines += [f"  {label:<26} {value}" for label, value in rows]
    return "\n".join(lines)


def _scenarios(text: str) -> list[str]:
    names = [n.strip().upper() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown scenario(s) {unknown}; choose from {', '.join(SCENARIOS)}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", type=_scenarios, default=list(SCENARIOS), help="e.g. T1,T3 (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per scenario; medians are reported")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false", help="skip the untimed warm-up run")
    parser.add_argument("--profile", type=Path, metavar="FILE", help="instead: one cProfile run, stats to FILE")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    logger.remove()  # the engine logs through loguru; a benchmark wants a quiet stdout
    logging.getLogger("agno").setLevel(logging.CRITICAL)

    if args.profile is not None:
        profile(args.scenario, args.profile)
        return 0
    report = bench(args.scenario, args.repeat, args.warmup)
    print(json.dumps(report, indent=2) if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
