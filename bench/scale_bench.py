"""Scale-out benchmark: throughput, live-update latency and recovery with 1, 2 and 4 workers.

    python bench/scale_bench.py                                  # the table: 1, 2, 4 workers
    python bench/scale_bench.py --workers 1 2 --projects 10 --clients 5 --json

Each row starts a fresh real Redis and PostgreSQL (in temporary folders, as the tests do), ``--webs``
web processes (``sentient serve`` with ``SENTIENT_QUEUE_URL``: they queue projects and run none) and N
``sentient worker`` processes (the same entry point, with the scripted model of
``server_bench.py``: plans of ``--fanout`` subtasks, ``--depth`` layers). Two kinds of load:

- ``cpu``: no model latency (L = 0), so the engine, the store writes and the event fan-out are the
  whole work: this is where more workers should add throughput, up to the machine's cores;
- ``io``: ``--latency`` seconds per agent call, as when waiting on a provider.

``--clients`` Socket.IO clients join every project before the projects start; their processes
(``--client-procs``) connect to the web processes in turn, and the projects are created and
executed through the first, so with two web processes most clients see every update through
the other one (Flask-SocketIO's Redis message queue).
Reported per row: projects completed, projects per minute (first execute to last
``project_completed``), status latency p50 / p99 (the worker's change time to the client's
receipt, same clock), lost events (a client whose graph, rebuilt from its snapshot and diffs,
differs from the stored graph, or that never saw ``project_completed``: must be 0).

Recovery (``--recovery``, default on): two workers, ``--lease`` seconds of lease, projects
running; one worker is killed with SIGKILL. Reported: seconds from the kill until the other worker
has taken every project the killed one held (from its log), until all projects complete, and how
many nodes that were finished at the kill ran again (must be 0).

It never asserts timings; it fails (BenchError) only if events were lost, projects did not
complete or a finished node ran again.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from logging import WARNING
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fakes.postgres import PostgresServer, postgres_bindir  # noqa: E402
from fakes.redis_server import RedisServer  # noqa: E402
from server_bench import (  # noqa: E402
    _FANOUT_TAG,
    BenchError,
    create_project,
    fanout_model,
    free_port,
    run_watched,
    spawn_clients,
)

_RUNNING = re.compile(r"project (\S+): running")


@dataclass
class Process:
    """A child process whose output lines are kept with the time each arrived."""

    name: str
    proc: subprocess.Popen[str]
    lines: list[tuple[float, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.time(), line.rstrip()))

    def took(self) -> dict[str, float]:
        """The projects this process started running, with when it logged each first."""
        taken: dict[str, float] = {}
        for at, line in list(self.lines):
            if found := _RUNNING.search(line):
                taken.setdefault(found.group(1), at)
        return taken

    def stop(self, signum: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


class Cluster:
    """Web processes and workers on a fresh Redis and PostgreSQL, torn down on close."""

    def __init__(self, stack: ExitStack, workdir: Path, latency: float, jobs: int, lease_s: float) -> None:
        self.workdir = workdir
        self.latency = latency
        self.jobs = jobs
        (workdir / "redis").mkdir()
        redis = self.redis = RedisServer(workdir / "redis")
        stack.callback(redis.stop)
        bindir = postgres_bindir()
        if bindir is None:
            raise BenchError("PostgreSQL not found (no initdb): apt-get install -y postgresql")
        postgres = self.postgres = PostgresServer(bindir)
        stack.callback(postgres.stop)
        postgres.start()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SENTIENT_")}
        env.update(
            SENTIENT_MODEL="scripted",
            SENTIENT_OFFLINE="1",
            SENTIENT_RESULTS_DIR=str(workdir / "results"),
            SENTIENT_CACHE_DIR=str(workdir / "cache"),
            SENTIENT_DOCS_ROOTS=str(workdir),
            SENTIENT_DATABASE_URL=postgres.new_database(),
            SENTIENT_REDIS_URL=redis.url,
            SENTIENT_QUEUE_URL=redis.url,
            SENTIENT_LEASE_S=str(lease_s),
            PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        )
        self.env = env
        self.docs = workdir / "docs"
        self.docs.mkdir()
        (self.docs / "bench.md").write_text("# Bench\n\nThe event loop runs coroutines, tasks and callbacks.\n")
        self.processes: list[Process] = []
        stack.callback(self.close)
        self.urls: list[str] = []

    def _spawn(self, name: str, args: list[str]) -> Process:
        folder = self.workdir / name
        folder.mkdir()
        proc = subprocess.Popen(
            args, env=self.env, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        process = Process(name, proc)
        self.processes.append(process)
        return process

    @property
    def url(self) -> str:
        """The first web process: projects are created and executed through it."""
        return self.urls[0]

    def web(self, threads: int) -> None:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        cli = [sys.executable, "-m", "sentient.cli.main", "serve", "--port", str(port), "--threads", str(threads)]
        web = self._spawn(f"web{len(self.urls)}", cli)
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                    self.urls.append(url)
                    return
            except httpx.HTTPError:
                pass
            if web.proc.poll() is not None or time.monotonic() > deadline:
                raise BenchError("the web process did not start:\n" + "\n".join(line for _, line in web.lines[-20:]))
            time.sleep(0.1)

    def worker(self, name: str) -> Process:
        args = [sys.executable, __file__, "--worker-child", "--latency", str(self.latency), "--jobs", str(self.jobs)]
        return self._spawn(name, args)

    def wait_workers(self, count: int) -> None:
        """Wait until ``count`` workers log that they take jobs."""
        deadline = time.monotonic() + 60
        while sum(any("worker ready" in line for _, line in p.lines) for p in self.processes) < count:
            if time.monotonic() > deadline:
                raise BenchError("the workers did not start")
            time.sleep(0.1)

    def close(self) -> None:
        for process in reversed(self.processes):
            process.stop()

    def cpu_seconds(self) -> dict[str, Any]:
        """CPU seconds used so far by each part: the web process, each worker, Redis and
        PostgreSQL (each with its child processes), to tell which one a row was bound by."""
        table = _process_table()  # read once: every part at the same instant
        postgres = self.postgres.process.pid if self.postgres.process is not None else None
        return {
            "web": [_tree_cpu_s(p.proc.pid, table) for p in self.processes if p.name.startswith("web")],
            "workers": [_tree_cpu_s(p.proc.pid, table) for p in self.processes if p.name.startswith("worker")],
            "redis": _tree_cpu_s(self.redis.pid, table),
            "postgres": _tree_cpu_s(postgres, table) if postgres is not None else None,
        }


def _used_since(before: Any, after: Any) -> Any:
    """``after - before`` for numbers, and item by item in lists and dicts."""
    if isinstance(after, dict):
        return {key: _used_since(before[key], value) for key, value in after.items()}
    if isinstance(after, list):
        return [_used_since(b, a) for b, a in zip(before, after, strict=True)]
    return None if after is None else round(after - before, 2)


def _process_table() -> dict[int, tuple[int, float]]:
    """Every live process: its parent's pid and its user and system CPU seconds (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    table: dict[int, tuple[int, float]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended while the folder was read
        table[int(stat.parent.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    return table


def _tree_cpu_s(pid: int, table: dict[int, tuple[int, float]]) -> float:
    """CPU seconds of ``pid`` and its live descendants in ``table`` (:func:`_process_table`)."""
    tree, grew = {pid}, True
    while grew:
        more = {child for child, (parent, _) in table.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return round(sum(table[p][1] for p in tree if p in table), 2)


def worker_main(args: argparse.Namespace) -> int:
    """``sentient worker`` with the fan-out scripted model (the child of a Cluster)."""
    from loguru import logger

    from sentient_server import ServerSettings
    from sentient_server.queue_worker import work

    logger.enable("sentient")  # the library is silent until an application enables it
    logger.remove()
    # The Cluster reads the worker's own lines ("worker ready", "project X: running"); a line per
    # agent call, which `sentient worker` does not log either (warnings only, unless -v), would
    # cost the worker 7 % of its CPU here.
    logger.add(sys.stdout, level="INFO", format="{message}", filter=_worker_lines)
    config = ServerSettings.from_env(model=fanout_model(args.latency), flush_interval_s=0.05)
    return work(config, jobs=args.jobs)


def _worker_lines(record: Any) -> bool:
    return bool(record["level"].no >= WARNING or record["name"].endswith("queue_worker"))


def project_config(args: argparse.Namespace, docs: Path) -> dict[str, Any]:
    return {
        "docs": str(docs),
        "max_depth": args.depth,
        "skip_atomization": True,
        "max_subtasks": 12,
        "review": "none",
    }


def throughput(args: argparse.Namespace, kind: str, workers: int) -> dict[str, Any]:
    """One row: projects/min, status latency and lost events for ``workers`` workers (and ``--webs``)."""
    latency = 0.0 if kind == "cpu" else args.latency
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sentient-scale-")))
        cluster = Cluster(stack, workdir, latency, args.jobs, args.lease)
        for _ in range(args.webs):
            cluster.web(threads=max(64, 2 * args.clients + 16))
        for i in range(workers):
            cluster.worker(f"worker{i}")
        cluster.wait_workers(workers)
        time.sleep(1.0)  # a worker polls the queue a moment after it starts
        http = stack.enter_context(httpx.Client(base_url=cluster.url, timeout=30))
        config = project_config(args, cluster.docs)
        project_ids = [
            create_project(http, f"Project {i} {_FANOUT_TAG}{args.fanout}", config) for i in range(args.projects)
        ]
        watchers = spawn_clients(cluster.urls, args.clients, args.client_procs, project_ids, args.timeout)
        before = cluster.cpu_seconds()
        start, reports = run_watched(http, watchers, project_ids)
        end = max(r["last_completed"] for r in reports)
        statuses = [http.get(f"/api/projects/{pid}").json()["status"] for pid in project_ids]
        latencies = sorted(lat for r in reports for lat in r["latencies"])
        took = [p.took() for p in cluster.processes if p.name.startswith("worker")]
        cpu = _used_since(before, cluster.cpu_seconds())
        row = {
            "kind": kind,
            "workers": workers,
            "webs": args.webs,
            "projects": args.projects,
            "clients": args.clients,
            "completed": statuses.count("completed"),
            "elapsed_s": round(end - start, 2),
            "projects_per_min": round(60 * args.projects / (end - start), 1) if end > start else None,
            "latency_p50_ms": round(1000 * _percentile(latencies, 0.5), 1),
            "latency_p99_ms": round(1000 * _percentile(latencies, 0.99), 1),
            "lost": sum(r["lost"] for r in reports),
            "projects_per_worker": [len(t) for t in took],
            "cpu_s": cpu,
        }
        if row["lost"] or row["completed"] != args.projects:
            raise BenchError(f"lost events or unfinished projects: {row}")
        return row


def recovery(args: argparse.Namespace) -> dict[str, Any]:
    """Kill one of two busy workers with SIGKILL; time the takeover and check no finished node ran again."""
    from sentient.store import ProjectStore

    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sentient-scale-")))
        # Two jobs each, so that the four projects are split: with more, the worker that polls first
        # takes all four (seen on a 16-core machine, where the other had not polled yet).
        cluster = Cluster(stack, workdir, args.recovery_latency, 2, args.lease)
        cluster.web(threads=64)
        victim, survivor = cluster.worker("victim"), cluster.worker("survivor")
        cluster.wait_workers(2)
        time.sleep(1.0)
        http = stack.enter_context(httpx.Client(base_url=cluster.url, timeout=30))
        config = project_config(args, cluster.docs)
        project_ids = [create_project(http, f"Recover {i} {_FANOUT_TAG}{args.fanout}", config) for i in range(4)]
        for pid in project_ids:
            http.post(f"/api/projects/{pid}/execute").raise_for_status()
        deadline = time.monotonic() + 60
        while not (victim.took() and survivor.took()):
            if time.monotonic() > deadline:
                raise BenchError("the two workers did not both take projects")
            time.sleep(0.05)
        store = stack.enter_context(ProjectStore.open(workdir / "store", cluster.env["SENTIENT_DATABASE_URL"]))
        while not any(_done(store, pid) for pid in victim.took()):  # kill mid-run: some nodes stored finished
            if time.monotonic() > deadline:
                raise BenchError("no node of the first worker's projects finished")
            time.sleep(0.05)
        orphans = set(victim.took())
        victim.proc.kill()
        killed_at = time.time()
        done_at_kill = {pid: _done(store, pid) for pid in orphans}
        calls_at_kill = {pid: _calls(store, pid) for pid in orphans}
        deadline = time.monotonic() + args.lease * 3 + args.timeout
        while not all(http.get(f"/api/projects/{pid}").json()["status"] == "completed" for pid in project_ids):
            if time.monotonic() > deadline:
                raise BenchError("the projects did not complete after the kill")
            time.sleep(0.2)
        completed_at = time.time()
        taken = survivor.took()
        rerun = sum(
            1
            for pid in orphans
            for task in done_at_kill[pid]
            if _calls(store, pid).get(task, 0) != calls_at_kill[pid].get(task, 0)
        )
        result = {
            "lease_s": args.lease,
            "orphaned_projects": len(orphans),
            "takeover_s": round(max(taken[pid] for pid in orphans) - killed_at, 2),
            "all_completed_s": round(completed_at - killed_at, 2),
            "finished_nodes_at_kill": sum(len(d) for d in done_at_kill.values()),
            "finished_nodes_run_again": rerun,
        }
        if rerun:
            raise BenchError(f"finished nodes ran again: {result}")
        return result


def _done(store: Any, project_id: str) -> set[str]:
    return {node.task_id for node in store.load_graph(project_id) if node.status.value == "DONE"}


def _calls(store: Any, project_id: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for call in store.calls(project_id):
        counts[call["task_id"]] = counts.get(call["task_id"], 0) + 1
    return counts


def _percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, round(q * (len(values) - 1)))] if values else float("nan")


def print_table(result: dict[str, Any]) -> None:
    print(
        "| load | webs | workers | projects x clients | completed | projects/min | status p50 ms | p99 ms | lost"
        " | CPU s: web | workers | redis | postgres |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for row in result["rows"]:
        cpu = row["cpu_s"]
        print(
            f"| {row['kind']} | {row['webs']} | {row['workers']} | {row['projects']} x {row['clients']} | {row['completed']} | "
            f"{row['projects_per_min']} | {row['latency_p50_ms']} | {row['latency_p99_ms']} | {row['lost']} | "
            f"{' + '.join(map(str, cpu['web']))} | {' + '.join(map(str, cpu['workers']))} | {cpu['redis']} | {cpu['postgres']} |"
        )
    if "recovery" in result:
        r = result["recovery"]
        print(
            f"\nRecovery (lease {r['lease_s']} s): {r['orphaned_projects']} projects of the killed worker taken over"
            f" after {r['takeover_s']} s, all complete after {r['all_completed_s']} s;"
            f" {r['finished_nodes_run_again']} of {r['finished_nodes_at_kill']} finished nodes ran again."
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--kinds", nargs="+", choices=("cpu", "io"), default=["cpu", "io"])
    parser.add_argument("--webs", type=int, default=1, help="web processes; clients are spread over them")
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--client-procs", type=int, default=2, help="processes the clients are spread over")
    parser.add_argument("--fanout", type=int, default=3, help="subtasks per plan")
    parser.add_argument("--depth", type=int, default=2, help="max_depth: layers of planning")
    parser.add_argument("--latency", type=float, default=0.05, help="io load: seconds per agent call")
    parser.add_argument("--jobs", type=int, default=20, help="projects one worker runs at once")
    parser.add_argument("--lease", type=float, default=5.0, help="SENTIENT_LEASE_S")
    parser.add_argument("--recovery-latency", type=float, default=0.5, help="seconds per call in the recovery run")
    parser.add_argument("--no-recovery", dest="recovery", action="store_false")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker_child:
        return worker_main(args)
    if args.client_procs < args.webs:
        parser.error("--client-procs must be at least --webs: each web process needs clients of its own")
    result: dict[str, Any] = {"cores": os.cpu_count(), "fanout": args.fanout, "depth": args.depth, "rows": []}
    for kind in args.kinds:
        for workers in args.workers:
            result["rows"].append(throughput(args, kind, workers))
            print(f"# {result['rows'][-1]}", file=sys.stderr)
    if args.recovery:
        result["recovery"] = recovery(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
