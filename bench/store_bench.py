"""Store benchmark: how fast StoreWriter persists a run, and what it costs the event loop.

    python bench/store_bench.py                                  # 10,000 nodes × 5 status changes
    python bench/store_bench.py --json --repeat 5                # one JSON object on stdout
    python bench/store_bench.py --nodes 2000 --calls-per-node 3  # a smaller, chattier run

A synthetic graph (root → 99 subtasks → the rest spread under them) is built first, untimed.
Then, node by node, parents first, the bench does what the engine does on its loop thread:
announce the node (``NodeCreated``), move it through the five status changes of a planned node
(READY → PLANNING → ATOMIZATION → PLAN_DONE → AGGREGATING → DONE, via ``TaskNode.move_to``),
publish ``--calls-per-node`` agent calls (2 KB prompt, 1 KB response) after PLANNING, and set a
1 KB result with two sources before DONE. Every event goes to a :class:`StoreWriter` on a
fresh ``sentient.db`` in a temp folder (WAL, ``synchronous=NORMAL``, as in production).

Metrics (median over ``--repeat`` runs):

- ``status_changes_per_s``: persisted status changes / (first event → ``flush()`` returned).
- ``events_per_s``: the same for every event (creations, status changes, calls).
- ``flush_lag_ms``: last event published → ``flush()`` returned (what was still queued).
- ``loop_us_per_event``: mean time inside ``writer(event)`` on the publishing thread, which is
  what the engine pays per event; ``loop_p99_us`` its 99th percentile. Measured in a tight loop,
  where the writer thread competes hardest for the GIL, so it is an upper bound.
- ``publish_slowdown_pct``: the publishing loop (mutations + events) with the writer, against
  the same loop with a no-op subscriber. With ``--work-us 0`` the loop does nothing but publish,
  so this is the writer thread's whole share of the GIL (and of the CPU on a busy machine);
  ``--work-us N`` adds N µs of busy work per event, standing in for the engine's own work.
- ``--commit-interval-ms`` sets ``StoreWriter(commit_interval_s=...)`` to compare cadences.

Single-threaded, the writer needs ~5 µs of Python (GIL held) and ~10 µs in SQLite (GIL
released) per event on a slow 2-core VM; the rest of what the metrics show is contention.

The bench checks itself: after the flush the database must hold every node (DONE), every status
change and every call, or it raises ``BenchError``. It never asserts timings.

To put the writer into another benchmark (e.g. the engine's), open a store with
:func:`temp_store` and pass it to ``ProfiledSentientAgent.arun(..., store=store)``.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from loguru import logger

from sentient.events import AgentCallFinished, Event, NodeCreated, NodeStatusChanged, snapshot
from sentient.graph.node import NodeType, Source, TaskNode, TaskType
from sentient.graph.plan import SubTask
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.store import ProjectStore, StoreWriter

PROJECT = "store-bench"
LIFECYCLE = (
    TaskStatus.PLANNING,
    TaskStatus.ATOMIZATION,
    TaskStatus.PLAN_DONE,
    TaskStatus.AGGREGATING,
    TaskStatus.DONE,
)
_PROMPT = "Research the following goal and answer with citations. " * 36  # ≈ 2 KB
_RESPONSE = "A paragraph of findings with a citation [1]. " * 23  # ≈ 1 KB


class BenchError(AssertionError):
    """The database does not hold what was published (a writer bug, not slowness)."""


@contextmanager
def temp_store() -> Iterator[ProjectStore]:
    """A store in a fresh temp folder with the bench's project created; removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="sentient-store-bench-") as folder:
        store = ProjectStore.open(Path(folder))
        try:
            store.create_project(PROJECT, "store benchmark", "bench", {})
            yield store
        finally:
            store.close()


def build_graph(nodes: int) -> TaskGraph:
    """Root, 99 subtasks (or fewer), and the remaining nodes spread evenly under them."""
    graph = TaskGraph()
    graph.add_root("Benchmark the project store", TaskType.WRITE, NodeType.PLAN)
    middle = min(99, max(0, nodes - 1))
    leaves = max(0, nodes - 1 - middle)

    def plan(parent: str, count: int, label: str) -> list[TaskNode]:
        subtasks = [SubTask(goal=f"{label} {parent}.{i}", task_type=TaskType.SEARCH) for i in range(count)]
        return graph.add_children(parent, subtasks, [NodeType.PLAN] * count)

    subtasks = plan("root", middle, "Subtask")
    for i, sub in enumerate(subtasks):
        share = leaves // middle + (1 if i < leaves % middle else 0)
        plan(sub.task_id, share, "Leaf")
    return graph


def publish_run(
    graph: TaskGraph, subscriber: Callable[[Event], None], calls_per_node: int, work_us: float = 0.0
) -> list[float]:
    """Drive every node through its lifecycle; returns the seconds spent in each ``subscriber`` call.

    ``work_us`` of busy work (pure Python, holding the GIL) follow each event, standing in for
    the engine's own work between two events.
    """
    timings: list[float] = []
    clock = time.perf_counter
    work_s = work_us / 1e6

    def publish(event: Event) -> None:
        start = clock()
        subscriber(event)
        end = clock()
        timings.append(end - start)
        while clock() - end < work_s:
            pass

    sources = [Source(ref="docs/asyncio.md", title="Asyncio", snippet="event loop"), Source(ref="docs/tasks.md")]
    for node in list(graph):
        publish(NodeCreated(snapshot(node)))
        for target in LIFECYCLE:
            if target is TaskStatus.DONE:
                node.result = _RESPONSE
                node.sources = list(sources)
            old = node.move_to(target)
            publish(NodeStatusChanged(snapshot(node), old, node.history[-1].at))
            if target is TaskStatus.PLANNING:
                for _ in range(calls_per_node):
                    now = time.time()
                    node.agent_calls += 1
                    node.input_tokens += 600
                    node.output_tokens += 250
                    publish(
                        AgentCallFinished(
                            node.task_id,
                            "planner",
                            "bench_planner",
                            "scripted",
                            _PROMPT,
                            {"goal": node.goal, "siblings": [], "knowledge": []},
                            _RESPONSE,
                            None,
                            1,
                            600,
                            250,
                            now,
                            0.0,
                            node=snapshot(node),
                        )
                    )
    return timings


def run_once(nodes: int, calls_per_node: int, work_us: float = 0.0, **writer_options: Any) -> dict[str, Any]:
    baseline_graph = build_graph(nodes)
    gc.collect()
    started = time.perf_counter()
    publish_run(baseline_graph, lambda event: None, calls_per_node, work_us)
    baseline_s = time.perf_counter() - started

    graph = build_graph(nodes)
    with temp_store() as store:
        writer = StoreWriter(store, PROJECT, **writer_options)
        gc.collect()
        started = time.perf_counter()
        timings = publish_run(graph, writer, calls_per_node, work_us)
        published = time.perf_counter()
        writer.flush()
        flushed = time.perf_counter()
        writer.close()
        _check(Path(store.location), len(graph), calls_per_node)
        db_mb = sum(p.stat().st_size for p in store.results_dir.glob("sentient.db*")) / 1e6

    changes = len(graph) * len(LIFECYCLE)
    timings.sort()
    return {
        "nodes": len(graph),
        "status_changes": changes,
        "events": len(timings),
        "status_changes_per_s": changes / (flushed - started),
        "events_per_s": len(timings) / (flushed - started),
        "total_s": flushed - started,
        "flush_lag_ms": (flushed - published) * 1000,
        "loop_us_per_event": statistics.fmean(timings) * 1e6,
        "loop_p99_us": timings[int(len(timings) * 0.99)] * 1e6,
        "publish_slowdown_pct": ((published - started) / baseline_s - 1) * 100,
        "db_mb": db_mb,
    }


def _check(path: Path, nodes: int, calls_per_node: int) -> None:
    conn = sqlite3.connect(path)
    try:
        counts = {
            "nodes": conn.execute("SELECT COUNT(*) FROM nodes WHERE status = 'DONE'").fetchone()[0],
            "status_changes": conn.execute("SELECT COUNT(*) FROM status_changes").fetchone()[0],
            "calls": conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0],
        }
    finally:
        conn.close()
    expected = {
        "nodes": nodes,
        "status_changes": nodes * len(LIFECYCLE),
        "calls": nodes * calls_per_node,
    }
    if counts != expected:
        raise BenchError(f"stored {counts}, expected {expected}")


def engine_comparison(repeat: int, as_json: bool) -> int:
    """T2 of bench/engine_bench.py (100 parallel leaves, 132 agent calls) with and without the store.

    Runs alternate (off, on, off, on…) so machine noise hits both sides alike; the target is a
    slowdown of at most 10 % of the median makespan.
    """
    sys.path.insert(0, str(Path(__file__).parent))
    import engine_bench

    scenario = engine_bench.SCENARIOS["T2"]
    off: list[float] = []
    on: list[float] = []
    with tempfile.TemporaryDirectory(prefix="sentient-store-bench-") as tmp:
        workdir = Path(tmp)
        engine_bench.run_once(scenario, workdir)  # warm-up: imports, schemas, agno
        for i in range(repeat):
            off.append(engine_bench.run_once(scenario, workdir).wall_s)
            with ProjectStore.open(workdir / f"store-{i}") as store:
                on.append(engine_bench.run_once(scenario, workdir, store=store).wall_s)
    result = {
        "scenario": "T2",
        "repeat": repeat,
        "makespan_off_s": statistics.median(off),
        "makespan_on_s": statistics.median(on),
        "slowdown_pct": 100 * (statistics.median(on) / statistics.median(off) - 1),
        "off_runs_s": [round(x, 3) for x in off],
        "on_runs_s": [round(x, 3) for x in on],
    }
    if as_json:
        print(json.dumps(result))
    else:
        print(
            f"T2 makespan, median of {repeat}: store off {result['makespan_off_s']:.3f} s, "
            f"on {result['makespan_on_s']:.3f} s, slowdown {result['slowdown_pct']:+.1f} % (target <= 10 %)"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--calls-per-node", type=int, default=1)
    parser.add_argument(
        "--work-us", type=float, default=0.0, help="busy work after each event, standing in for the engine (µs)"
    )
    parser.add_argument("--commit-interval-ms", type=float, help="StoreWriter commit_interval_s, in ms")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument(
        "--engine",
        action="store_true",
        help="instead: the engine benchmark's T2 with the store on vs off (paired runs, medians)",
    )
    args = parser.parse_args(argv)
    logger.remove()  # the writer logs failures; a failing bench raises BenchError anyway
    if args.engine:
        return engine_comparison(args.repeat, args.json)

    options = {} if args.commit_interval_ms is None else {"commit_interval_s": args.commit_interval_ms / 1000}
    runs = [run_once(args.nodes, args.calls_per_node, args.work_us, **options) for _ in range(args.repeat)]
    keys = [k for k in runs[0] if k not in ("nodes", "status_changes", "events")]
    result: dict[str, Any] = {
        "nodes": runs[0]["nodes"],
        "status_changes": runs[0]["status_changes"],
        "events": runs[0]["events"],
        "calls_per_node": args.calls_per_node,
        "work_us": args.work_us,
        "repeat": args.repeat,
        **{k: statistics.median(r[k] for r in runs) for k in keys},
        "status_changes_per_s_runs": [round(r["status_changes_per_s"]) for r in runs],
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "machine": f"{platform.machine()} {platform.processor() or platform.system()}",
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"{result['nodes']} nodes, {result['status_changes']} status changes, {result['events']} events "
        f"({args.calls_per_node} call/node), median of {args.repeat}"
    )
    for key in keys:
        print(f"  {key:<24} {result[key]:>12,.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
