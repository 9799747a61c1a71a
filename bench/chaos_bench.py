"""Chaos benchmark: whole runs against a provider that misbehaves on a share of its requests.

Each run researches one goal through the public API with a hosted-model string
(``openai-compatible:http://127.0.0.1:PORT/v1:chaos``) pointing at the chaos provider of the
tests (``tests/fakes/chaos_server.py``): a loopback OpenAI-compatible server that answers valid
JSON for any schema, and with probability ``--fault-rate`` injects one fault instead: HTTP
500/429/503, a hang, a dropped connection, a body that is not JSON or is cut short, an answer
that breaks the schema, HTTP 200 with empty ``choices``, a choice without its message. Runs
are seeded (run i uses seed i), so a row can be reproduced.

Metrics (one row per run, then the totals):

- completed: the run ended ``completed`` (every node DONE).
- single-fault failures: agent calls that failed on their first and only request: one
  transient fault lost work (target 0). Calls that failed after all their retries, or at their
  deadline, are counted as failed nodes, not here.
- nodes failed: FAILED nodes over all runs.
- max wall time with hangs: the slowest run among those that got a hang, against the bound
  ``critical-path calls x 3 x --call-timeout`` (each call on the critical path is bounded by its
  deadline, 3 x the per-attempt timeout; 6 calls for ``--tree deep``, 3 for ``flat``); and the slowest single agent call, against 3 x the
  timeout (one call's deadline) plus the validation retries it may add.
- requests per agent call: requests the provider received / agent calls of the runs.

The bench checks itself (every run returns a result with every node terminal, every injected
fault is one of the known kinds) and never asserts timings.

    python bench/chaos_bench.py                          # 20 runs, 20 % faults, --call-timeout 2
    python bench/chaos_bench.py --runs 5 --fault-rate 0.5 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from fakes.chaos_server import ALL_FAULTS, Fault, chaos_server  # noqa: E402
from loguru import logger  # noqa: E402

from sentient import ProfiledSentientAgent  # noqa: E402
from sentient.events import AgentCallFinished, Event  # noqa: E402
from sentient.graph.status import TERMINAL, TaskStatus  # noqa: E402
from sentient.settings import Settings  # noqa: E402

GOAL = "How do Python lists differ from tuples, and when should each be used?"
# tree -> (profile, the atomizer's verdict, agent calls on the critical path). The chaos plans have
# no dependencies, so the critical path is one branch: deep = root atomize -> root plan -> atomize
# -> plan -> execute -> aggregate -> root aggregate -> second look (the chaos report cites nothing);
# flat = root atomize -> root plan -> execute -> root aggregate -> second look.
TREES = {"deep": ("deep_research_agent", False, 8), "flat": ("general_agent", True, 5)}


class BenchError(RuntimeError):
    """A run broke an invariant: the numbers would mean nothing."""


@dataclass
class RunRow:
    seed: int
    status: str
    wall_s: float
    nodes: int
    nodes_failed: int
    agent_calls: int
    requests: int
    faults: dict[str, int]
    single_fault_failures: int
    slowest_call_s: float
    errors: list[str] = field(default_factory=list)


async def one_run(seed: int, args: argparse.Namespace, base: Path) -> RunRow:
    calls: list[AgentCallFinished] = []

    def keep(event: Event) -> None:
        if isinstance(event, AgentCallFinished):
            calls.append(event)

    profile, atomic, _ = TREES[args.tree]
    with chaos_server(
        fault_rate=args.fault_rate, seed=seed, faults=ALL_FAULTS, width=args.width, atomic=atomic
    ) as server:
        settings = Settings(
            model=server.model(),
            cache_dir=base / "cache",
            results_dir=base / "results",
            user_config=base / "none.yaml",
            offline=True,
        )
        # Planned at once: a question is otherwise answered before it is planned, and the chaos
        # provider's answer, confirmed by no source, would add that answer and its second look.
        agent = ProfiledSentientAgent.create_with_profile(
            profile, settings=settings, docs=base / "docs", agent_timeout_s=args.call_timeout, answer_first=False
        )
        started = time.perf_counter()
        result = await agent.arun(GOAL, project_id=f"chaos-{seed}", subscribers=[keep], write_files=False)
        wall = time.perf_counter() - started
        requests = len(server.requests)
        counts = dict(server.counts)
    if any(n.status not in TERMINAL for n in result.graph):
        raise BenchError(f"seed {seed}: a node did not reach a terminal status")
    unknown = set(counts) - {f.value for f in Fault} - {"ok"}
    if unknown:
        raise BenchError(f"seed {seed}: unknown faults {unknown}")
    failed_calls = [c for c in calls if c.error]
    # One request, one fault, a lost call: what the retries must prevent. A failure after all its
    # retries says "after N attempts"; a deadline says "deadline"; a schema failure "after 3 attempt(s)".
    single = [c for c in failed_calls if " after " not in c.error and "deadline" not in c.error]  # type: ignore[operator]
    return RunRow(
        seed=seed,
        status=result.status,
        wall_s=round(wall, 2),
        nodes=len(result.graph),
        nodes_failed=sum(1 for n in result.graph if n.status is TaskStatus.FAILED),
        agent_calls=len(calls),
        requests=requests,
        faults={k: v for k, v in sorted(counts.items()) if k != "ok"},
        single_fault_failures=len(single),
        slowest_call_s=round(max((c.latency_s for c in calls), default=0.0), 2),
        errors=[c.error or "" for c in failed_calls],
    )


def summarise(rows: list[RunRow], args: argparse.Namespace) -> dict[str, Any]:
    hung = [r for r in rows if r.faults.get(Fault.HANG.value)]
    agent_calls = sum(r.agent_calls for r in rows)
    return {
        "runs": len(rows),
        "tree": args.tree,
        "fault_rate": args.fault_rate,
        "call_timeout_s": args.call_timeout,
        "runs_completed": sum(r.status == "completed" for r in rows),
        "runs_by_status": {s: sum(r.status == s for r in rows) for s in sorted({r.status for r in rows})},
        "single_fault_failures": sum(r.single_fault_failures for r in rows),
        "nodes_failed": sum(r.nodes_failed for r in rows),
        "agent_calls_failed": sum(len(r.errors) for r in rows),  # their nodes may have been replanned
        "failed_call_errors": sorted({e[:120] for r in rows for e in r.errors}),
        "nodes": sum(r.nodes for r in rows),
        "faults_injected": sum(sum(r.faults.values()) for r in rows),
        "runs_with_hangs": len(hung),
        "max_wall_s_with_hangs": max((r.wall_s for r in hung), default=None),
        "wall_bound_s": TREES[args.tree][2] * 3 * args.call_timeout,
        "slowest_call_s": max((r.slowest_call_s for r in rows), default=0.0),
        "call_deadline_s": 3 * args.call_timeout,
        "requests_per_agent_call": round(sum(r.requests for r in rows) / agent_calls, 3) if agent_calls else None,
        "max_wall_s": max(r.wall_s for r in rows),
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    rows: list[RunRow] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        docs = base / "docs"
        docs.mkdir()
        (docs / "tuples.md").write_text("# Tuples\n\nA tuple is an immutable sequence; tuples can be dict keys.\n")
        (docs / "lists.md").write_text("# Lists\n\nA list is a mutable sequence; append adds an item.\n")
        for seed in range(args.runs):
            row = await one_run(seed, args, base)
            rows.append(row)
            if not args.json:
                print(
                    f"seed {seed:2d}  {row.status:24s} {row.wall_s:6.2f}s  nodes {row.nodes:2d}"
                    f" (failed {row.nodes_failed})  calls {row.agent_calls:2d}  requests {row.requests:2d}"
                    f"  faults {row.faults}",
                    file=sys.stderr,
                )
    summary = summarise(rows, args)
    summary["rows"] = [asdict(r) for r in rows]
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--call-timeout", type=float, default=2.0, help="per-attempt timeout (s)")
    parser.add_argument("--tree", choices=sorted(TREES), default="deep", help="deep: 2 levels (default)")
    parser.add_argument("--width", type=int, default=3, help="subtasks per plan")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout (rows included)")
    args = parser.parse_args()
    logger.enable("sentient")  # the library is silent until an application enables it
    logger.remove()
    logger.add(sys.stderr, level="ERROR")
    logging.getLogger("agno").setLevel(logging.CRITICAL)
    summary = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(summary))
        return
    for key, value in summary.items():
        if key != "rows":
            print(f"{key:26s} {value}")


if __name__ == "__main__":
    main()
