"""Sentient as several processes on one machine, for the scale-out tests: web processes that queue
their projects (SENTIENT_QUEUE_URL) and ``sentient worker`` processes that run them, on one real
Redis (queue, Socket.IO message queue, owner relay, provider limits) and one real PostgreSQL
database. The ``cluster`` fixture (tests/server/conftest.py) builds one and stops its processes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import redis
import socketio
from server_helpers import InOrderClient, Recorder, free_port, serve_env, wait_for, wait_healthy

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
logger.enable("sentient")  # the library is silent until an application enables it
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


def ran(output: str, project_id: str) -> bool:
    """Whether a worker's output says it ran the project."""
    return f"project {project_id}: running" in output


class Cluster:
    """Web processes and workers on one Redis (queue, Socket.IO, relay) and one PostgreSQL database."""

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

    def spawn(self, name: str, args: list[str], **env: str) -> Process:
        """Start a process in its own folder, with the cluster's environment updated by ``env``."""
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
        web = self.spawn(f"web{port}", [*CLI, "serve", "--port", str(port)])
        wait_healthy(url, web.proc)
        self.url = self.url or url
        return url

    def worker(self, name: str, latency_s: float = 0.2, jobs: int = 4) -> Process:
        """A worker whose every agent is a scripted model answering after ``latency_s``."""
        return self.spawn(name, [sys.executable, "-c", LAUNCH_WORKER, str(latency_s), str(jobs)])

    def cli_worker(self, name: str, jobs: int = 10, **env: str) -> Process:
        """``sentient -v worker --jobs N`` (``-v``: it logs the projects it runs), configured by its
        environment alone (``SENTIENT_MODEL``…)."""
        return self.spawn(name, [*CLI, "-v", "worker", "--jobs", str(jobs)], **env)

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

    def connect(self, on: str | None = None) -> tuple[socketio.Client, Recorder]:
        """A Socket.IO client of a web process (the first one by default), recording what it receives."""
        sio = InOrderClient(reconnection=False)
        received = Recorder()
        sio.on("*", received)
        sio.connect(on or self.url, transports=["websocket"])
        self.clients.append(sio)
        return sio, received

    @staticmethod
    def join(sio: socketio.Client, received: Recorder, project_id: str) -> None:
        """Join the project and wait for its snapshot.

        The ack says the join was taken, not served: the snapshot (and the room entry before it)
        is queued on the process that serves it, and a project started before then reaches the
        client with a later snapshot, after the diffs it replaces.
        """
        ack = sio.call("join_project", {"project_id": project_id}, timeout=10)
        assert ack["ok"], ack
        wait_for(
            lambda: any(s["project"]["project_id"] == project_id for s in received.of("project_snapshot")),
            what=f"the snapshot of {project_id}",
        )

    def client(self, project_id: str, on: str | None = None) -> tuple[socketio.Client, Recorder]:
        """A Socket.IO client of a web process (the first one by default), in the project's room."""
        sio, received = self.connect(on)
        self.join(sio, received, project_id)
        return sio, received

    def status(self, project_id: str) -> str:
        status: str = self.api("GET", f"/api/projects/{project_id}").json()["status"]
        return status

    def wait_status(self, project_id: str, status: str, timeout: float = 30) -> None:
        wait_for(lambda: self.status(project_id) == status, timeout, f"project {project_id} to be {status}")

    def store(self) -> ProjectStore:
        return ProjectStore.open(self.tmp_path / "store", self.database_url)

    def stop(self) -> None:
        """Disconnect the clients and kill every process still running."""
        for sio in self.clients:
            sio.disconnect()
        for process in self.processes:
            if process.proc.poll() is None:
                process.stop(signal.SIGKILL)
