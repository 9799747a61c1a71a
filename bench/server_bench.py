"""Server benchmark: N concurrent projects, M Socket.IO clients on loopback, no lost events.

The server runs as in production (``sentient_server.serve``: gunicorn, one gevent worker) in a child
process, with the scripted fake model (fixed latency per agent call) so the numbers are the
server's and the engine's own. The parent creates the projects over REST, connects M real
python-socketio clients (WebSocket), has every client join every project, starts all projects
at once and waits until each client has seen each project complete.

    python bench/server_bench.py                          # 20 projects x 50 clients, a table
    python bench/server_bench.py --projects 5 --clients 10 --json

Reported: projects completed, events delivered per second, median and
p99 latency of status changes (engine timestamp -> client receipt, same clock), bytes per node
entry and per ``node_update`` for a small and a large graph (a diff must not grow with the
graph), the server's peak RSS, and lost events: a client whose graph, rebuilt from its snapshot
and diffs, differs from the stored graph, or that never saw ``project_completed``.
It never asserts timings; it fails only if events were lost or projects did not complete.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import socketio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "server"))

from server_helpers import InOrderClient  # noqa: E402  (diffs recorded in arrival order)

_FANOUT_TAG = "fanout="


class BenchError(RuntimeError):
    """The run was not a valid measurement (lost events, unfinished projects)."""


# -- the server (child process) ------------------------------------------------------------------


def fanout_model(latency: float) -> Any:
    """The scripted model whose plans have ``fanout`` subtasks (``fanout=N`` in the goal; default 2)."""
    from sentient.agents.models.fake import FakeRequest, ScriptedModel
    from sentient.graph.node import TaskType
    from sentient.graph.plan import PlanOutput, SubTask

    def plan(request: FakeRequest) -> PlanOutput:
        tag = request.goal[request.goal.index(_FANOUT_TAG) :].split()[0] if _FANOUT_TAG in request.goal else "fanout=2"
        fanout = int(tag.split("=")[1])
        return PlanOutput(
            subtasks=[
                SubTask(goal=f"Part {i} of {request.task_id} {tag}", task_type=TaskType.SEARCH if i else TaskType.THINK)
                for i in range(fanout)
            ]
        )

    return ScriptedModel(latency=latency, script={"planner": plan, "plan_modifier": plan})


def child_main(args: argparse.Namespace) -> int:
    """Serve with gunicorn and the fan-out scripted model."""
    sys.path.insert(0, str(REPO))
    from loguru import logger

    from sentient.settings import Settings
    from sentient_server.config import ServerSettings
    from sentient_server.serve import SentientGunicorn

    model = fanout_model(args.latency)
    results = Path(args.results)
    docs = results / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "bench.md").write_text("# Bench\n\nThe event loop runs coroutines, tasks and callbacks.\n")
    logger.enable("sentient")  # the library is silent until an application enables it
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    config = ServerSettings(
        host="127.0.0.1",
        port=args.port,
        sentient=Settings(model="scripted", results_dir=results, cache_dir=results / "cache", offline=True),
        model=model,
        docs=docs,
        threads=args.threads,
        max_pending_sockets_per_client=args.threads,  # every bench client connects from 127.0.0.1, at once
        flush_interval_s=args.flush_interval,
        resume_on_start=False,
    )
    SentientGunicorn(config, log_level="warning").run()
    return 0


# -- clients -----------------------------------------------------------------------------------


@dataclass
class Client:
    sio: socketio.Client
    events: list[tuple[float, str, Any]] = field(default_factory=list)
    done: set[str] = field(default_factory=set)
    snapshots: set[str] = field(default_factory=set)
    dropped: bool = False  # the connection ended before the bench closed it
    closing: bool = False

    def record(self, name: str, data: Any = None) -> None:
        self.events.append((time.time(), name, data))  # list.append is atomic
        if name == "project_completed":
            self.done.add(data["project"]["project_id"])
        elif name == "project_snapshot":
            self.snapshots.add(data["project"]["project_id"])

    def completed(self, project_id: str) -> bool:
        return project_id in self.done


def connect_client(url: str) -> Client:
    sio = InOrderClient(reconnection=False)
    client = Client(sio)
    sio.on("*", client.record)

    def disconnected(*_: Any) -> None:
        client.dropped = client.dropped or not client.closing

    sio.on("disconnect", disconnected)
    sio.connect(url, transports=["websocket"], wait_timeout=30)
    return client


def graph_view(client: Client, project_id: str) -> dict[str, str]:
    nodes: dict[str, str] = {}
    for _, name, data in client.events:
        if name == "project_snapshot" and data["project"]["project_id"] == project_id:
            nodes = {tid: n["status"] for tid, n in data["graph"]["nodes"].items()}
        elif name == "node_update" and data["project_id"] == project_id:
            nodes.update({n["task_id"]: n["status"] for n in data["nodes"]})
            for tid in data["removed"]:
                nodes.pop(tid, None)
    return nodes


def status_latencies(client: Client) -> list[float]:
    """For each node entry that carries a new status: receipt time - the engine's change time."""
    last: dict[tuple[str, str], str] = {}
    out = []
    for received, name, data in client.events:
        if name == "project_snapshot":
            pid = data["project"]["project_id"]
            for tid, node in data["graph"]["nodes"].items():
                last[(pid, tid)] = node["status"]
        elif name == "node_update":
            pid = data["project_id"]
            for node in data["nodes"]:
                key = (pid, node["task_id"])
                if last.get(key) != node["status"] and node["history"]:
                    out.append(received - node["history"][-1]["at"])
                last[key] = node["status"]
    return out


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def client_worker(url: str, count: int, project_ids: list[str], conn: Any, timeout: float) -> None:
    """A process of ``count`` clients: join every project, report what they received."""
    cpu_start = time.process_time()
    clients = [connect_client(url) for _ in range(count)]
    for client in clients:
        for pid in project_ids:
            ack = client.sio.call("join_project", {"project_id": pid}, timeout=60)
            if not ack.get("ok"):
                raise BenchError(f"join failed: {ack}")
    # The ack says the join was taken; the client is in the room once its snapshot came.
    deadline = time.monotonic() + timeout
    while not all(client.snapshots >= set(project_ids) for client in clients):
        if time.monotonic() > deadline:
            raise BenchError("a client never got the snapshot of a project it joined")
        time.sleep(0.05)
    conn.send("ready")
    conn.recv()  # the projects started
    deadline = time.monotonic() + timeout
    while not all(c.completed(pid) for c in clients for pid in project_ids) and time.monotonic() < deadline:
        time.sleep(0.05)
    with httpx.Client(base_url=url, timeout=30) as http:
        stored = {
            pid: {tid: n["status"] for tid, n in http.get(f"/api/projects/{pid}/graph").json()["nodes"].items()}
            for pid in project_ids
        }
    lost = sum(1 for c in clients for pid in project_ids if not c.completed(pid) or graph_view(c, pid) != stored[pid])
    dropped = sum(1 for c in clients if c.dropped)
    conn.send(
        {
            "dropped": dropped,
            "delivered": sum(len(c.events) for c in clients),
            "node_entries": sum(len(d["nodes"]) for c in clients for _, n, d in c.events if n == "node_update"),
            "latencies": [lat for c in clients for lat in status_latencies(c)],
            "lost": lost,
            "last_completed": max((t for c in clients for t, n, _ in c.events if n == "project_completed"), default=0),
            "cpu_s": time.process_time() - cpu_start,
        }
    )
    for client in clients:
        client.closing = True
        client.sio.disconnect()
    conn.close()


def spawn_clients(urls: list[str], clients: int, procs: int, project_ids: list[str], timeout: float) -> list[Any]:
    """Start ``clients`` clients spread over ``procs`` processes (one Python process cannot decode
    50 sockets' traffic), the processes connecting to ``urls`` in turn; returns (process, pipe)
    pairs once every client is in every project's room."""
    procs = max(1, min(procs, clients))
    context = multiprocessing.get_context("fork")
    watchers = []
    for i in range(procs):
        count = clients // procs + (1 if i < clients % procs else 0)
        parent_end, child_end = context.Pipe()
        url = urls[i % len(urls)]
        process = context.Process(target=client_worker, args=(url, count, project_ids, child_end, timeout), daemon=True)
        process.start()
        watchers.append((process, parent_end))
    for _, pipe in watchers:
        if pipe.recv() != "ready":
            raise BenchError("a client process failed to join")
    return watchers


def run_watched(http: httpx.Client, watchers: list[Any], project_ids: list[str]) -> tuple[float, list[dict[str, Any]]]:
    """Execute every project and wait for the client processes' reports; returns (start time, reports)."""
    start = time.time()
    for pid in project_ids:
        response = http.post(f"/api/projects/{pid}/execute")
        if response.status_code != 202:
            raise BenchError(f"execute failed: {response.text}")
    for _, pipe in watchers:
        pipe.send("go")
    reports = [pipe.recv() for _, pipe in watchers]
    for process, _ in watchers:
        process.join(30)
    return start, reports


# -- the parent --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def peak_rss_mb(pid: int) -> dict[str, float]:
    """VmHWM of the gunicorn master and its worker(s), from /proc (Linux)."""
    out: dict[str, float] = {}
    pids = [pid]
    with contextlib.suppress(OSError):
        pids += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    for i, p in enumerate(pids):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    out["master" if i == 0 else f"worker_{p}"] = int(line.split()[1]) / 1024
        except OSError:
            continue
    return out


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its children's threads (Linux /proc)."""
    pids = [pid]
    with contextlib.suppress(OSError):
        pids += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    total = 0.0
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            continue
    return total


def create_project(http: httpx.Client, goal: str, config: dict[str, Any]) -> str:
    response = http.post("/api/projects", json={"goal": goal, "profile": "general_agent", "config": config})
    if response.status_code != 201:
        raise BenchError(f"create failed: {response.text}")
    return str(response.json()["project_id"])


def run_projects(
    http: httpx.Client, clients: list[Client], project_ids: list[str], timeout: float
) -> tuple[float, float]:
    """Join every client to every project, start them all; returns (start, end) wall times."""
    for client in clients:
        for pid in project_ids:
            ack = client.sio.call("join_project", {"project_id": pid}, timeout=30)
            if not ack.get("ok"):
                raise BenchError(f"join failed: {ack}")
    start = time.time()
    for pid in project_ids:
        response = http.post(f"/api/projects/{pid}/execute")
        if response.status_code != 202:
            raise BenchError(f"execute failed: {response.text}")
    deadline = time.monotonic() + timeout
    while not all(c.completed(pid) for c in clients for pid in project_ids):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    end = max(
        (t for c in clients for t, n, _ in c.events if n == "project_completed"),
        default=time.time(),
    )
    return start, end


def size_probe(http: httpx.Client, url: str, fanout: int, depth: int) -> dict[str, float]:
    """One project of a given shape watched by one client: bytes per node entry and per message."""
    client = connect_client(url)
    try:
        config = {"max_depth": depth, "skip_atomization": True, "max_subtasks": 12, "review": "none"}
        pid = create_project(http, f"Size probe {_FANOUT_TAG}{fanout}", config)
        run_projects(http, [client], [pid], timeout=120)
        updates = [d for _, n, d in client.events if n == "node_update"]
        entries = sum(len(u["nodes"]) for u in updates)
        message_bytes = [len(json.dumps(u, separators=(",", ":"))) for u in updates]
        final = http.get(f"/api/projects/{pid}/graph").json()
        return {
            "nodes": len(final["nodes"]),
            "node_updates": len(updates),
            "bytes_per_node_entry": sum(message_bytes) / max(entries, 1),
            "median_bytes_per_message": statistics.median(message_bytes) if message_bytes else 0,
            "full_graph_bytes": len(json.dumps(final, separators=(",", ":"))),
        }
    finally:
        client.sio.disconnect()


def bench(args: argparse.Namespace) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    workdir = Path(tempfile.mkdtemp(prefix="sentient-server-bench-"))
    child = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--child",
            "--port",
            str(port),
            "--results",
            str(workdir),
            "--latency",
            str(args.latency),
            "--threads",
            str(max(64, args.clients * 2 + 16)),
            "--flush-interval",
            str(args.flush_interval),
        ],
        cwd=REPO,
    )
    try:
        http = httpx.Client(base_url=url, timeout=30)
        deadline = time.monotonic() + 60
        while True:
            try:
                if http.get("/api/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if child.poll() is not None or time.monotonic() > deadline:
                raise BenchError("the server did not start")
            time.sleep(0.1)

        config = {"max_depth": args.depth, "skip_atomization": True, "max_subtasks": 12, "review": "none"}
        project_ids = [
            create_project(http, f"Project {i} {_FANOUT_TAG}{args.fanout}", config) for i in range(args.projects)
        ]
        watchers = spawn_clients([url], args.clients, args.client_procs, project_ids, args.timeout)
        server_cpu = cpu_s(child.pid)
        start, reports = run_watched(http, watchers, project_ids)
        server_cpu = cpu_s(child.pid) - server_cpu
        end = max(r["last_completed"] for r in reports)
        statuses = {pid: http.get(f"/api/projects/{pid}").json()["status"] for pid in project_ids}
        nodes_per_project = len(http.get(f"/api/projects/{project_ids[0]}/graph").json()["nodes"]) if project_ids else 0
        lost = sum(r["lost"] for r in reports)
        dropped = sum(r["dropped"] for r in reports)
        delivered = sum(r["delivered"] for r in reports)
        node_entries = sum(r["node_entries"] for r in reports)
        latencies = [lat for r in reports for lat in r["latencies"]]
        client_cpu = sum(r["cpu_s"] for r in reports)

        small = size_probe(http, url, fanout=2, depth=1)
        large = size_probe(http, url, fanout=8, depth=2)
        rss = peak_rss_mb(child.pid)
        elapsed = end - start
        result = {
            "projects": args.projects,
            "clients": args.clients,
            "client_processes": len(watchers),
            "nodes_per_project": nodes_per_project,
            "agent_latency_s": args.latency,
            "flush_interval_s": args.flush_interval,
            "projects_completed": sum(1 for s in statuses.values() if s == "completed"),
            "elapsed_s": round(elapsed, 3),
            "events_delivered": delivered,
            "node_entries_delivered": node_entries,
            "events_per_s": round(delivered / elapsed, 1) if elapsed > 0 else None,
            "status_latency_median_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
            "status_latency_p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
            "lost": lost,
            "dropped_clients": dropped,
            "server_cpu_s": round(server_cpu, 2),
            "bench_clients_cpu_s": round(client_cpu, 2),
            "size_small_graph": small,
            "size_large_graph": large,
            "peak_rss_mb": {k: round(v, 1) for k, v in rss.items()},
        }
        return result
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--fanout", type=int, default=3, help="subtasks per plan")
    parser.add_argument("--depth", type=int, default=2, help="max_depth: layers of planning")
    parser.add_argument("--latency", type=float, default=0.01, help="seconds per agent call")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument(
        "--client-procs", type=int, default=min(8, os.cpu_count() or 1), help="processes the clients are spread over"
    )
    parser.add_argument("--flush-interval", type=float, default=0.1, help="the server's node_update batching, s")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--results", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=128, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child_main(args)
    result = bench(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:28} {value}")
    if result["lost"] or result["projects_completed"] != args.projects:
        print("FAILED: lost events or unfinished projects", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
