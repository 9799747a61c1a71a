"""Helpers of the server tests: waiting for conditions, what a Socket.IO client received, and the
environment of a server subprocess."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import engineio
import httpx
import socketio
from flask.testing import FlaskClient


def wait_for(condition: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


class _InOrderEngineIO(engineio.Client):
    def _trigger_event(self, event: str, *args: Any, **kwargs: Any) -> Any:
        if event == "message":
            kwargs["run_async"] = False
        return super()._trigger_event(event, *args, **kwargs)


class InOrderClient(socketio.Client):
    """A python-socketio client that handles messages in the order they arrive, as a browser does.

    python-engineio's client runs each message's handler on a new thread, so two messages that
    arrive a moment apart (a project's last diff, then its ``project_completed``) may be handled,
    and recorded, the other way round. This one runs every handler on the connection's read
    thread, in arrival order: a handler must be quick and must not wait for another message.
    """

    def _engineio_client_class(self) -> type[engineio.Client]:
        return _InOrderEngineIO


@dataclass
class Recorder:
    """Every event a Socket.IO client received, in order, as (name, payload)."""

    events: list[tuple[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, name: str, data: Any = None) -> None:
        with self.lock:
            self.events.append((name, data))

    def of(self, name: str) -> list[Any]:
        with self.lock:
            return [data for event, data in self.events if event == name]

    def names(self) -> list[str]:
        with self.lock:
            return [event for event, _ in self.events]

    def completed(self, project_id: str) -> Any:
        return next((d for d in self.of("project_completed") if d["project"]["project_id"] == project_id), None)

    def graph_view(self, project_id: str) -> dict[str, dict[str, Any]]:
        """The graph as a client builds it: the last snapshot, then every later node_update."""
        nodes: dict[str, dict[str, Any]] = {}
        with self.lock:
            events = list(self.events)
        for name, data in events:
            if name == "project_snapshot" and data["project"]["project_id"] == project_id:
                nodes = dict(data["graph"]["nodes"])
            elif name == "node_update" and data["project_id"] == project_id:
                for node in data["nodes"]:
                    nodes[node["task_id"]] = node
                for task_id in data["removed"]:
                    nodes.pop(task_id, None)
        return nodes


def wait_healthy(url: str, proc: subprocess.Popen[str]) -> None:
    """Wait until a server subprocess answers /api/health; fail with its output if it exits first."""

    def healthy() -> bool:
        try:
            return httpx.get(url + "/api/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            return False

    wait_for(healthy, timeout=30, what="the server to answer")


def wait_status(client: FlaskClient, project_id: str, statuses: set[str], timeout: float = 15.0) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        project = client.get(f"/api/projects/{project_id}").get_json()
        return project if project["status"] in statuses else None

    return wait_for(check, timeout, f"project {project_id} to be {statuses}")  # type: ignore[no-any-return]


REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (a server started soon after may take it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a server subprocess: the scripted model, offline, its files in ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SENTIENT_")}
    env.update(
        SENTIENT_MODEL="scripted",
        SENTIENT_RESULTS_DIR=str(tmp_path / "results"),
        SENTIENT_CACHE_DIR=str(tmp_path / "cache"),
        SENTIENT_OFFLINE="1",
        SENTIENT_DOCS_ROOTS=str(tmp_path),
        PYTHONPATH=str(REPO),
        **extra,
    )
    return env
