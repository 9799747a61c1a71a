"""Hostile load on a loopback server: slow partial requests and idle WebSockets, while authorised
clients are timed.

The server runs as in production (``python -m sentient_server.serve``) in a child process with
the scripted fake model, or is one already running (``--url``). A second child process holds the
load, all of it from 127.0.0.1:

- ``--slow`` sockets (400) that each send half a request head, then one more header byte every
  ``--trickle`` seconds, and never finish it. One the server drops is opened again after
  ``--reopen-delay``.
- ``--idle`` WebSockets (128) that open an engine.io session and then send nothing, not even the
  Socket.IO CONNECT. One the server closes or refuses is opened again after ``--reopen-delay``.

Meanwhile the bench process times authorised clients, as a user's browser would be:

- ``GET /api/projects`` and ``GET /api/health``, each on a new connection, one after the other,
  every ``--interval`` seconds, with a 10 s timeout: p50, p99 and max latency, and failures.
- every ``--socket-every`` seconds, a dashboard-like Socket.IO client (polling, then the
  WebSocket upgrade, as socket.io-client does) that connects, calls ``join_project`` and waits
  for its acknowledgement, then disconnects: how many connected, and how long that took.

    .venv/bin/python bench/slowloris_bench.py                   # 400 slow + 128 idle, 30 s, a table
    .venv/bin/python bench/slowloris_bench.py --url http://127.0.0.1:5000 --json
    .venv/bin/python bench/slowloris_bench.py --serve-arg=--max-partial-per-client --serve-arg=512

Also reported: what the load held and how often it was dropped (``load``), and the threads, resident
memory and CPU (cores busy while measured) of the server it started, before and under the load.

Targets: authorised REST p99 <= 500 ms with no failure, and every socket attempt connects. The
bench reports and never asserts timings; it exits 1 when the targets are missed. Loopback only:
it refuses a ``--url`` that is not a loopback address. Bounded: at most 1,000 slow sockets and 500
WebSockets, ``--duration`` at most 300 s; everything it started is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import ipaddress
import json
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import socketio

REPO = Path(__file__).resolve().parent.parent
TOKEN = "slowloris-bench-token-0123456789"
MAX_SLOW, MAX_IDLE, MAX_DURATION_S = 1_000, 500, 300.0
REST_TIMEOUT_S = 10.0
TARGET_P99_MS = 500.0


class BenchError(RuntimeError):
    """The bench could not run (no server, a bad option)."""


# -- the load (child process) ----------------------------------------------------------------------


class Load:
    """Slow partial requests and idle engine.io WebSockets on one asyncio loop, reopened when dropped."""

    def __init__(self, host: str, port: int, args: argparse.Namespace) -> None:
        self.host, self.port, self.args = host, port, args
        self.counts = {"slow_open": 0, "slow_opened": 0, "slow_dropped": 0, "idle_open": 0, "idle_opened": 0}
        self.counts |= {"idle_closed": 0, "idle_refused": 0, "connect_errors": 0}
        self.samples: list[tuple[int, int]] = []  # (slow open, idle open), once a second
        self.stopping = asyncio.Event()

    async def run(self, duration_s: float) -> dict[str, Any]:
        tasks = [asyncio.create_task(self.slow(i)) for i in range(self.args.slow)]
        tasks += [asyncio.create_task(self.idle(i)) for i in range(self.args.idle)]
        tasks.append(asyncio.create_task(self.sample()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), duration_s)
        self.stopping.set()
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=5)  # 3.11's wait_for may swallow a cancel: do not wait for all
        held = self.samples[len(self.samples) // 4 :] or [(0, 0)]  # past the ramp
        return self.counts | {
            "slow_held_mean": round(statistics.mean(s for s, _ in held), 1),
            "idle_held_mean": round(statistics.mean(i for _, i in held), 1),
        }

    async def sample(self) -> None:
        while True:
            self.samples.append((self.counts["slow_open"], self.counts["idle_open"]))
            await asyncio.sleep(1.0)

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        try:
            return await asyncio.wait_for(asyncio.open_connection(self.host, self.port), 10)
        except (OSError, TimeoutError):
            self.counts["connect_errors"] += 1
            await asyncio.sleep(max(self.args.reopen_delay, 0.1))
            return None

    async def slow(self, index: int) -> None:
        while not self.stopping.is_set():
            opened = await self._open()
            if opened is None:
                continue
            reader, writer = opened
            self.counts["slow_opened"] += 1
            self.counts["slow_open"] += 1
            try:
                writer.write(f"GET /api/health HTTP/1.1\r\nHost: {self.host}\r\nX-Slow-{index}: ".encode())
                await writer.drain()
                await self._trickle(reader, writer)
            except OSError:
                pass
            finally:
                self.counts["slow_open"] -= 1
                self.counts["slow_dropped"] += 1
                writer.close()
            await asyncio.sleep(self.args.reopen_delay)

    async def _trickle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Send one more header byte every ``--trickle`` seconds until the server closes the socket."""
        while not self.stopping.is_set():
            try:
                data = await asyncio.wait_for(reader.read(4096), self.args.trickle)
            except TimeoutError:
                writer.write(b"a")
                await writer.drain()
                continue
            if not data:
                return

    async def idle(self, index: int) -> None:
        key = "dGhlIHNhbXBsZSBub25jZQ=="
        while not self.stopping.is_set():
            opened = await self._open()
            if opened is None:
                continue
            reader, writer = opened
            try:
                writer.write(
                    f"GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                    f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                    "Sec-WebSocket-Version: 13\r\n\r\n".encode()
                )
                await writer.drain()
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
                if not head.startswith(b"HTTP/1.1 101"):
                    self.counts["idle_refused"] += 1
                else:
                    self.counts["idle_opened"] += 1
                    self.counts["idle_open"] += 1
                    try:
                        while not self.stopping.is_set() and await reader.read(4096):
                            pass  # the OPEN packet, pings: never answered
                    finally:
                        self.counts["idle_open"] -= 1
                        self.counts["idle_closed"] += 1
            except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                self.counts["idle_refused"] += 1
            finally:
                writer.close()
            await asyncio.sleep(self.args.reopen_delay)


def load_main(host: str, port: int, args: argparse.Namespace, duration_s: float, pipe: Connection) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it

    async def main() -> None:
        load = Load(host, port, args)

        async def stop_when_told() -> None:
            while not pipe.poll():
                await asyncio.sleep(0.2)
            load.stopping.set()

        told = asyncio.create_task(stop_when_told())
        pipe.send(await load.run(duration_s))  # now: the parent stops this process if the loop lingers
        told.cancel()

    asyncio.run(main())


# -- the authorised clients (this process) ---------------------------------------------------------


def timed_get(host: str, port: int, path: str, token: str | None) -> float | None:
    """Seconds for one GET on a new connection, or None when it failed or was not a 200."""
    started = time.perf_counter()
    conn = http.client.HTTPConnection(host, port, timeout=REST_TIMEOUT_S)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        response = conn.getresponse()
        response.read()
        return time.perf_counter() - started if response.status == 200 else None
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def rest_clients(host: str, port: int, token: str | None, interval: float, until: float) -> dict[str, Any]:
    timings: dict[str, list[float]] = {"/api/projects": [], "/api/health": []}
    failures = dict.fromkeys(timings, 0)
    while time.monotonic() < until:
        for path, seen in timings.items():
            took = timed_get(host, port, path, token)
            if took is None:
                failures[path] += 1
            else:
                seen.append(took)
        time.sleep(interval)
    return {
        path: {
            "requests": len(seen) + failures[path],
            "failed": failures[path],
            "p50_ms": ms(percentile(seen, 0.50)),
            "p99_ms": ms(percentile(seen, 0.99)),
            "max_ms": ms(max(seen, default=float("nan"))),
        }
        for path, seen in timings.items()
    }


def socket_client(url: str, token: str | None) -> float | None:
    """Seconds to connect and get a ``join_project`` acknowledgement, or None when it failed."""
    started = time.perf_counter()
    sio = socketio.Client(reconnection=False)
    try:
        sio.connect(
            url,
            headers={"Authorization": f"Bearer {token}"} if token else {},
            auth={"token": token} if token else None,
            wait_timeout=10,
        )
        ack = sio.call("join_project", {"project_id": "no-such-project"}, timeout=10)
        ok = isinstance(ack, dict) and ack.get("error", {}).get("code") == "not_found"
        return time.perf_counter() - started if ok else None
    except (socketio.exceptions.SocketIOError, OSError, ValueError):
        return None
    finally:
        with contextlib.suppress(Exception):
            sio.disconnect()


def socket_clients(url: str, token: str | None, every: float, until: float) -> dict[str, Any]:
    took: list[float] = []
    attempts = 0
    while time.monotonic() < until:
        attempts += 1
        seconds = socket_client(url, token)
        if seconds is not None:
            took.append(seconds)
        time.sleep(every)
    return {
        "attempts": attempts,
        "connected": len(took),
        "p50_ms": ms(percentile(took, 0.5)),
        "max_ms": ms(max(took, default=float("nan"))),
    }


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


# -- the server --------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(workdir: Path, token: str | None, extra: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SENTIENT_")}
    env.update(
        SENTIENT_MODEL="scripted",
        SENTIENT_RESULTS_DIR=str(workdir / "results"),
        SENTIENT_CACHE_DIR=str(workdir / "cache"),
        SENTIENT_OFFLINE="1",
        PYTHONPATH=str(REPO),
    )
    if token:
        env["SENTIENT_API_TOKEN"] = token
    log = (workdir / "server.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sentient_server.serve", "--port", str(port), *extra],
        env=env,
        cwd=workdir,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while timed_get("127.0.0.1", port, "/api/health", token) is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise BenchError(f"the server did not start; see {workdir / 'server.log'}")
        time.sleep(0.2)
    return proc, url


def tree_usage(pid: int) -> dict[str, float]:
    """OS threads and resident MB of a process and its descendants (gunicorn's master and worker)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, grown = {pid}, True
    while grown:
        more = {child for child, parent in parents.items() if parent in tree} - tree
        tree |= more
        grown = bool(more)
    threads, rss_kb, ticks = 0, 0, 0
    for member in tree:
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("Threads:"):
                    threads += int(line.split()[1])
                elif line.startswith("VmRSS:"):
                    rss_kb += int(line.split()[1])
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime + stime
    cpu_s = ticks / os.sysconf("SC_CLK_TCK")
    return {"threads": threads, "rss_mb": round(rss_kb / 1024, 1), "cpu_s": round(cpu_s, 2)}


# -- the run -----------------------------------------------------------------------------------------


def bench(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="sentient-slowloris-bench-"))
    server: subprocess.Popen[bytes] | None = None
    token = TOKEN if args.token else None
    if args.url:
        url = args.url.rstrip("/")
        token = os.environ.get("SENTIENT_API_TOKEN") if args.token else None
    else:
        server, url = start_server(workdir, token, args.serve_arg)
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 80
    if not _is_loopback(host):
        raise BenchError(f"{url} is not a loopback address; this bench attacks only its own machine.")
    idle_usage = tree_usage(server.pid) if server is not None else None
    parent_end, child_end = multiprocessing.Pipe()
    load = multiprocessing.Process(
        target=load_main, args=(host, port, args, args.ramp + args.duration + 30, child_end), daemon=True
    )
    try:
        load.start()
        time.sleep(args.ramp)  # the slow sockets and WebSockets open
        until = time.monotonic() + args.duration
        socket_result: dict[str, Any] = {}
        sockets = threading.Thread(
            target=lambda: socket_result.update(socket_clients(url, token, args.socket_every, until)), daemon=True
        )
        sockets.start()
        usage: dict[str, Any] = {}
        if server is not None:
            pid = server.pid
            started = tree_usage(pid)
            measure = threading.Timer(args.duration / 2, lambda: usage.update(tree_usage(pid)))
            measure.start()
        load_started = tree_usage(load.pid or 0)["cpu_s"]
        rest = rest_clients(host, port, token, args.interval, until)
        load_cores = round((tree_usage(load.pid or 0)["cpu_s"] - load_started) / args.duration, 2)
        if server is not None:
            spent = tree_usage(server.pid)["cpu_s"] - started["cpu_s"]
            usage["cores_busy"] = round(spent / args.duration, 2)  # CPU seconds per second measured
        sockets.join(60)
        parent_end.send("stop")
        load_counts = parent_end.recv() if parent_end.poll(60) else {}
        load_counts["cores_busy"] = load_cores
    finally:
        if load.is_alive():
            load.terminate()
        load.join(10)
        if server is not None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
    worst_p99 = max(r["p99_ms"] for r in rest.values())
    failed = sum(r["failed"] for r in rest.values())
    return {
        "server": url if args.url else " ".join(["python -m sentient_server.serve (this tree)", *args.serve_arg]),
        "token": bool(token),
        "duration_s": args.duration,
        "load": load_counts,
        "server_before_load": idle_usage,  # threads and RSS of the server's processes
        "server_under_load": usage or None,  # the same, mid-run
        "rest": rest,
        "socket": socket_result,
        "targets_met": bool(
            worst_p99 <= TARGET_P99_MS
            and failed == 0
            and socket_result.get("attempts")
            and socket_result.get("connected") == socket_result.get("attempts")
        ),
    }


def _is_loopback(host: str) -> bool:
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="attack this running loopback server instead of starting one")
    parser.add_argument("--slow", type=int, default=400, help="slow partial-request sockets (default 400)")
    parser.add_argument("--idle", type=int, default=128, help="idle engine.io WebSockets (default 128)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds measured (default 30)")
    parser.add_argument("--ramp", type=float, default=5.0, help="seconds of load before measuring (default 5)")
    parser.add_argument("--interval", type=float, default=0.1, help="pause between authorised GET pairs")
    parser.add_argument("--socket-every", type=float, default=2.0, help="pause between dashboard socket attempts")
    parser.add_argument("--trickle", type=float, default=3.0, help="a slow socket sends a byte this often")
    parser.add_argument("--reopen-delay", type=float, default=0.05, help="pause before a dropped socket reopens")
    parser.add_argument("--token", action="store_true", help="serve with an API token (the load never sends it)")
    parser.add_argument(
        "--serve-arg", action="append", default=[], help="an option for the server it starts (repeat: one per word)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (0 <= args.slow <= MAX_SLOW and 0 <= args.idle <= MAX_IDLE and 0 < args.duration <= MAX_DURATION_S):
        parser.error(f"--slow is 0..{MAX_SLOW}, --idle 0..{MAX_IDLE}, --duration 0..{MAX_DURATION_S:g}")
    try:
        result = bench(args)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:26} {value}")
    if not result["targets_met"]:
        print("targets missed: authorised REST p99 <= 500 ms with no failure, every socket connects", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
