"""A web process that queues its projects (SENTIENT_QUEUE_URL) and ``sentient worker`` processes that
run them, on a real Redis and a real PostgreSQL: every project runs on exactly one worker; cancels
and review answers made on the web process reach the worker; a worker killed with SIGKILL or
stopped with SIGTERM loses nothing, and another worker finishes its project without re-running a
finished node."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import socketio
from fakes.postgres import PostgresServer
from fakes.redis_server import RedisServer
from server_helpers import Recorder, free_port, serve_env, wait_for, wait_healthy

from sentient.store import ProjectStore
from sentient_server.relay import CHANNEL_PREFIX

# A worker whose scripted model answers after ``latency`` seconds, so that a test can act mid-run;
# the same entry point as `sentient worker`.
LAUNCH_WORKER = """
import sys
from loguru import logger
from sentient.agents.models.fake import ScriptedModel
from sentient_server import ServerSettings
from sentient_server.queue_worker import work
logger.remove()
logger.add(sys.stderr, level="INFO")
config = ServerSettings.from_env(model=ScriptedModel(latency=float(sys.argv[1])), flush_interval_s=0.05)
sys.exit(work(config, jobs=int(sys.argv[2])))
"""
CLI = [sys.executable, "-m", "sentient.cli.main"]


@dataclass
class Process:
    name: str
    proc: subprocess.Popen[str]

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 30) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        output, _ = self.proc.communicate(timeout=timeout)
        return output


class Cluster:
    """One web process and its workers on one Redis (queue, Socket.IO, relay) and one PostgreSQL database."""

    def __init__(self, tmp_path: Path, redis_url: str, database_url: str, lease_s: float) -> None:
        self.tmp_path = tmp_path
        self.database_url = database_url
        self.env = serve_env(
            tmp_path,
            SENTIENT_REDIS_URL=redis_url,
            SENTIENT_QUEUE_URL=redis_url,
            SENTIENT_DATABASE_URL=database_url,
            SENTIENT_LEASE_S=str(lease_s),
        )
        self.docs = tmp_path / "docs"
        self.docs.mkdir()
        (self.docs / "asyncio.md").write_text("# Asyncio\n\nThe event loop runs coroutines and tasks.\n")
        self.processes: list[Process] = []
        self.clients: list[socketio.Client] = []
        self.url = ""

    def _spawn(self, name: str, args: list[str], **env: str) -> Process:
        folder = self.tmp_path / name
        folder.mkdir()
        proc = subprocess.Popen(
            args, env={**self.env, **env}, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        process = Process(name, proc)
        self.processes.append(process)
        return process

    def web(self) -> str:
        """Start a web process; returns its URL (the first one's is ``url``, where requests go by default)."""
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        web = self._spawn(f"web{port}", [*CLI, "serve", "--port", str(port)])
        wait_healthy(url, web.proc)
        self.url = self.url or url
        return url

    def worker(self, name: str, latency_s: float = 0.2, jobs: int = 4) -> Process:
        return self._spawn(name, [sys.executable, "-c", LAUNCH_WORKER, str(latency_s), str(jobs)])

    def wait_listening(self, processes: int) -> None:
        """Wait until ``processes`` processes listen for their projects' commands (the owner relay)."""
        client = redis.Redis.from_url(self.env["SENTIENT_REDIS_URL"])
        try:
            wait_for(lambda: len(client.pubsub_channels(CHANNEL_PREFIX + "*")) >= processes, timeout=30)
        finally:
            client.close()
        time.sleep(1)  # a worker polls the queue a moment after it subscribes

    def api(self, method: str, path: str, on: str | None = None, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, (on or self.url) + path, timeout=10, **kwargs)

    def create(self, goal: str, **config: Any) -> str:
        body = {"goal": goal, "profile": "general_agent", "config": {"docs": str(self.docs), **config}}
        created = self.api("POST", "/api/projects", json=body)
        assert created.status_code == 201, created.text
        project_id: str = created.json()["project_id"]
        return project_id

    def execute(self, project_id: str) -> None:
        executed = self.api("POST", f"/api/projects/{project_id}/execute")
        assert executed.status_code == 202, executed.text

    def submit(self, goal: str, **config: Any) -> str:
        project_id = self.create(goal, **config)
        self.execute(project_id)
        return project_id

    def client(self, project_id: str, on: str | None = None) -> tuple[socketio.Client, Recorder]:
        """A Socket.IO client of a web process (the first one by default), in the project's room."""
        sio = socketio.Client(reconnection=False)
        received = Recorder()
        sio.on("*", received)
        sio.connect(on or self.url, transports=["websocket"])
        self.clients.append(sio)
        ack = sio.call("join_project", {"project_id": project_id}, timeout=10)
        assert ack["ok"], ack
        return sio, received

    def status(self, project_id: str) -> str:
        status: str = self.api("GET", f"/api/projects/{project_id}").json()["status"]
        return status

    def wait_status(self, project_id: str, status: str, timeout: float = 30) -> None:
        wait_for(lambda: self.status(project_id) == status, timeout, f"project {project_id} to be {status}")

    def store(self) -> ProjectStore:
        return ProjectStore.open(self.tmp_path / "store", self.database_url)


@pytest.fixture
def cluster(tmp_path: Path, redis_server: RedisServer, postgres: PostgresServer) -> Iterator[Callable[..., Cluster]]:
    made: list[Cluster] = []

    def make(lease_s: float = 30) -> Cluster:
        made.append(Cluster(tmp_path, redis_server.url, postgres.new_database(), lease_s))
        return made[0]

    yield make
    for built in made:
        for sio in built.clients:
            sio.disconnect()
        for process in built.processes:
            if process.proc.poll() is None:
                process.stop(signal.SIGKILL)


def calls_per_task(store: ProjectStore, project_id: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for call in store.calls(project_id):
        counts[call["task_id"]] = counts.get(call["task_id"], 0) + 1
    return counts


def done_nodes(store: ProjectStore, project_id: str) -> set[str]:
    return {node.task_id for node in store.load_graph(project_id) if node.status.value == "DONE"}


def ran(output: str, project_id: str) -> bool:
    return f"project {project_id}: running" in output


def test_projects_queued_on_the_web_process_all_complete_each_on_exactly_one_worker(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    built.web()
    workers = [built.worker(name, latency_s=0.2, jobs=1) for name in ("w1", "w2")]
    built.wait_listening(3)  # the web process and both workers: none takes every job before the other is up
    projects = [built.submit(f"How does asyncio schedule tasks? ({n})", max_subtasks=2) for n in range(4)]
    for project_id in projects:
        built.wait_status(project_id, "completed", timeout=45)
    outputs = [worker.stop() for worker in workers]
    assert [worker.proc.returncode for worker in workers] == [0, 0], outputs
    for project_id in projects:
        assert sum(ran(output, project_id) for output in outputs) == 1, f"{project_id} did not run exactly once"
    assert all(any(ran(output, p) for p in projects) for output in outputs), "both workers took projects"
    web = built.processes[0]
    web.stop()
    assert web.proc.returncode == 0


def test_a_cancel_made_on_the_web_process_stops_the_project_on_its_worker_within_two_seconds(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    built.web()
    built.worker("w1", latency_s=0.5)
    project_id = built.submit("How does asyncio schedule tasks?", max_subtasks=4)
    built.wait_status(project_id, "running")
    asked = time.monotonic()
    cancelled = built.api("POST", f"/api/projects/{project_id}/cancel")
    assert cancelled.status_code == 202, cancelled.text
    built.wait_status(project_id, "cancelled", timeout=2)
    assert time.monotonic() - asked < 2


def test_a_review_answered_on_the_web_process_wakes_the_project_on_its_worker_whose_updates_reach_clients(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    built.web()
    built.worker("w1", latency_s=0.05)
    project_id = built.create("How does asyncio schedule tasks?", max_subtasks=2, review="root")
    _, early = built.client(project_id)  # not running yet: the web process serves the join from the store
    built.execute(project_id)

    def pending() -> list[dict[str, Any]]:
        reviews: list[dict[str, Any]] = built.api("GET", f"/api/projects/{project_id}/reviews").json()["reviews"]
        return reviews

    (review,) = wait_for(pending, timeout=30, what="the root plan's review")
    _, late = built.client(project_id)  # running on the worker: the join is forwarded there
    time.sleep(0.5)  # the run waits on the review, and would wait for good without the wake-up
    assert built.status(project_id) == "running"
    answered = built.api("POST", f"/api/reviews/{review['review_id']}", json={"action": "approve"})
    assert answered.status_code == 200, answered.text
    built.wait_status(project_id, "completed", timeout=30)

    # The worker's announcements and diffs reached the web process's clients, through Redis.
    for seen in (early, late):
        wait_for(lambda s=seen: s.completed(project_id), what="project_completed")  # type: ignore[misc]
    assert [r["review"]["review_id"] for r in early.of("hitl_request")] == [review["review_id"]]
    (snapshot,) = late.of("project_snapshot")
    assert snapshot["project"]["status"] == "running" and late.names()[-1] == "project_completed"
    stored = built.api("GET", f"/api/projects/{project_id}/graph").json()["nodes"]
    assert len(stored) > 1 and all(node["status"] == "DONE" for node in stored.values())
    for seen in (early, late):
        assert {k: n["status"] for k, n in seen.graph_view(project_id).items()} == {
            k: n["status"] for k, n in stored.items()
        }


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_a_worker_that_dies_or_is_stopped_mid_run_loses_nothing_and_another_finishes_its_project(
    cluster: Callable[..., Cluster], stop: int
) -> None:
    built = cluster(lease_s=2)
    built.web()
    first = built.worker("w1", latency_s=0.3)
    project_id = built.submit("How does asyncio schedule tasks?", max_subtasks=4)
    store = built.store()
    try:
        wait_for(lambda: len(done_nodes(store, project_id)) >= 2, timeout=30, what="finished nodes")
        second = built.worker("w2", latency_s=0.05)  # only now: the first one took the project
        finished = done_nodes(store, project_id)
        calls_before = calls_per_task(store, project_id)
        started = time.monotonic()
        output = first.stop(stop)
        if stop == signal.SIGTERM:
            assert first.proc.returncode == 0, output
            assert time.monotonic() - started < 10, "a stopped worker hands its project back at once"
        built.wait_status(project_id, "completed", timeout=40)
        calls_after = calls_per_task(store, project_id)
        assert {task: calls_after[task] for task in finished} == {task: calls_before[task] for task in finished}
        assert finished <= done_nodes(store, project_id)
        assert ran(second.stop(), project_id), "the other worker resumed the project"
    finally:
        store.close()


def test_a_worker_without_a_reachable_queue_stops_at_once_with_one_line_naming_the_variable(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    env = serve_env(tmp_path, SENTIENT_REDIS_URL=redis_server.url)
    missing = subprocess.run([*CLI, "worker"], env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "SENTIENT_QUEUE_URL" in missing.stderr, missing.stderr
    env["SENTIENT_QUEUE_URL"] = f"redis://127.0.0.1:{free_port()}/0"
    unreachable = subprocess.run([*CLI, "worker"], env=env, capture_output=True, text=True, timeout=60)
    assert unreachable.returncode == 2 and "SENTIENT_QUEUE_URL" in unreachable.stderr, unreachable.stderr
    assert "does not answer" in unreachable.stderr and "Traceback" not in unreachable.stderr


def test_a_project_that_a_worker_cannot_run_fails_saying_why_instead_of_waiting_forever(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    built.web()
    # The web process checks the project with its own settings; this worker has a hosted model and no key.
    built._spawn("w1", [*CLI, "worker"], SENTIENT_MODEL="openai:gpt-4o-mini", OPENAI_API_KEY="")
    project_id = built.submit("How does asyncio schedule tasks?")
    built.wait_status(project_id, "failed")
    error = built.api("GET", f"/api/projects/{project_id}").json()["error"]
    assert "cannot run it" in error and "OPENAI_API_KEY" in error, error


def test_with_two_web_processes_clients_of_both_get_the_same_updates_and_either_takes_cancels_and_answers(
    cluster: Callable[..., Cluster],
) -> None:
    built = cluster()
    web_a, web_b = built.web(), built.web()
    built.worker("w1", latency_s=0.1)
    built.worker("w2", latency_s=0.1)
    reviewed = built.create("How does asyncio schedule tasks?", max_subtasks=2, review="root")
    _, on_a = built.client(reviewed, on=web_a)
    _, on_b = built.client(reviewed, on=web_b)
    built.execute(reviewed)  # through web A
    cancelled = built.submit("What does the GIL serialise?", max_subtasks=4)

    (review,) = wait_for(
        lambda: built.api("GET", f"/api/projects/{reviewed}/reviews", on=web_b).json()["reviews"],
        timeout=30,
        what="the root plan's review",
    )
    answered = built.api("POST", f"/api/reviews/{review['review_id']}", on=web_b, json={"action": "approve"})
    assert answered.status_code == 200, answered.text
    built.wait_status(cancelled, "running")
    asked = time.monotonic()
    assert built.api("POST", f"/api/projects/{cancelled}/cancel", on=web_b).status_code == 202
    built.wait_status(cancelled, "cancelled", timeout=2)
    assert time.monotonic() - asked < 2
    built.wait_status(reviewed, "completed", timeout=30)

    # Both clients got every update of the worker's run, in the same order, after their own snapshot.
    for seen in (on_a, on_b):
        wait_for(lambda s=seen: s.completed(reviewed), what="project_completed")  # type: ignore[misc]
    assert on_a.names()[0] == on_b.names()[0] == "project_snapshot"
    assert on_a.events[1:] == on_b.events[1:]
    assert len(on_b.of("node_update")) >= 2 and on_b.names()[-1] == "project_completed"
    stored = built.api("GET", f"/api/projects/{reviewed}/graph", on=web_b).json()["nodes"]
    assert {k: n["status"] for k, n in on_b.graph_view(reviewed).items()} == {k: n["status"] for k, n in stored.items()}
