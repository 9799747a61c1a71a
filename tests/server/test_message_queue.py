"""Two real server processes sharing Redis (the Socket.IO message queue) and PostgreSQL (the store):
a client on one process follows, in order and in full, a project that the other one runs."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import socketio
from fakes.postgres import PostgresServer
from fakes.redis_server import RedisServer
from server_helpers import InOrderClient, Recorder, free_port, serve_env, wait_for, wait_healthy

# A slow scripted model, so that a client can join while the project runs, and a store that
# lags the live diffs by a second (its writer waits that long before a commit), so that a
# snapshot read from the store would miss diffs already sent.
LAUNCH = """
import sys
from loguru import logger
from sentient.agents.models.fake import ScriptedModel
from sentient.store.writer import StoreWriter
StoreWriter.__init__.__kwdefaults__["linger_s"] = 1.0
from sentient_server import ServerSettings
from sentient_server.serve import serve
logger.enable("sentient")  # the library is silent until an application enables it
logger.remove()
logger.add(sys.stderr, level="WARNING")
config = ServerSettings.from_env(port=int(sys.argv[1]), model=ScriptedModel(latency=0.1), flush_interval_s=0.05)
sys.exit(serve(config))
"""


class Web:
    """A ``sentient_server.serve`` process (gunicorn) on a free loopback port."""

    def __init__(self, name: str, env: dict[str, str], cwd: Path) -> None:
        self.name = name
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, str(port)],
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, self.url + path, timeout=10, **kwargs)

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        output, _ = self.proc.communicate(timeout=30)
        return output


@pytest.fixture
def two_webs(
    tmp_path: Path, redis_server: RedisServer, postgres: PostgresServer
) -> Iterator[Callable[[], tuple[Web, Web]]]:
    """``start()`` two server processes on one Redis and one PostgreSQL database."""
    webs: list[Web] = []
    database = postgres.new_database()

    def start() -> tuple[Web, Web]:
        for name in ("a", "b"):
            folder = tmp_path / name
            folder.mkdir()
            env = serve_env(folder, SENTIENT_REDIS_URL=redis_server.url, SENTIENT_DATABASE_URL=database)
            env["SENTIENT_DOCS_ROOTS"] = str(tmp_path)
            webs.append(Web(name, env, folder))
        for web in webs:
            wait_healthy(web.url, web.proc)
        return webs[0], webs[1]

    yield start
    outputs = [(web, web.stop()) for web in webs]
    for web, output in outputs:
        assert web.proc.returncode == 0, f"web {web.name}:\n{output}"  # stopped cleanly, Redis threads too


@pytest.fixture
def clients() -> Iterator[Callable[[str], tuple[socketio.Client, Recorder]]]:
    made: list[socketio.Client] = []

    def connect(url: str) -> tuple[socketio.Client, Recorder]:
        sio = InOrderClient(reconnection=False)
        received = Recorder()
        sio.on("*", received)
        sio.connect(url, transports=["websocket"])
        made.append(sio)
        return sio, received

    yield connect
    for sio in made:
        if sio.connected:
            sio.disconnect()


def replay(snapshot: dict[str, Any], diffs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The graph a client has after ``snapshot`` and then ``diffs``."""
    nodes = dict(snapshot["graph"]["nodes"])
    for diff in diffs:
        nodes.update({node["task_id"]: node for node in diff["nodes"]})
        for task_id in diff["removed"]:
            nodes.pop(task_id, None)
    return nodes


def join(sio: socketio.Client, project_id: str) -> None:
    ack = sio.call("join_project", {"project_id": project_id}, timeout=10)
    assert ack["ok"], ack


def test_a_client_on_another_process_gets_every_update_in_order_and_a_late_one_a_snapshot_then_the_rest(
    two_webs: Callable[[], tuple[Web, Web]],
    clients: Callable[[str], tuple[socketio.Client, Recorder]],
    docs_folder: Path,
) -> None:
    web_a, web_b = two_webs()
    config = {"max_subtasks": 4, "docs": str(docs_folder)}
    body = {"goal": "Explain how asyncio schedules tasks", "profile": "general_agent", "config": config}
    created = web_a.api("POST", "/api/projects", json=body)
    assert created.status_code == 201, created.text
    project_id = created.json()["project_id"]

    on_a, seen_on_a = clients(web_a.url)
    on_b, seen_on_b = clients(web_b.url)
    join(on_a, project_id)
    join(on_b, project_id)  # not running yet: web B serves the join from the shared store
    wait_for(lambda: seen_on_b.of("project_snapshot") and seen_on_a.of("project_snapshot"), what="snapshots")
    assert web_a.api("POST", f"/api/projects/{project_id}/execute").status_code == 202
    wait_for(lambda: len(seen_on_b.of("node_update")) >= 2, what="diffs on web B")

    late, seen_late = clients(web_b.url)
    join(late, project_id)  # running on web A: the join goes there, the snapshot comes from its run
    for seen in (seen_on_a, seen_on_b, seen_late):
        wait_for(lambda s=seen: s.completed(project_id), timeout=60, what="project_completed")  # type: ignore[misc]

    # Web B's client got exactly what web A's own client got, in the same order: every status
    # and every diff, none lost, none repeated, and the end.
    events_a, events_b = list(seen_on_a.events), list(seen_on_b.events)
    assert events_a[0][0] == events_b[0][0] == "project_snapshot"
    assert events_b[1:] == events_a[1:]
    assert events_b[1][0] == "project_status" and events_b[-1][0] == "project_completed"
    assert seen_on_b.completed(project_id)["project"]["status"] == "completed"
    diffs = seen_on_b.of("node_update")
    assert len(diffs) >= 3 and all(d["project_id"] == project_id for d in diffs)
    stored = web_b.api("GET", f"/api/projects/{project_id}/graph").json()["nodes"]
    view_b = seen_on_b.graph_view(project_id)
    assert {k: n["status"] for k, n in view_b.items()} == {k: n["status"] for k, n in stored.items()}
    assert all(n["status"] == "DONE" for n in view_b.values())

    # The late client: the running project's snapshot first, then every later diff, none
    # missing, none it already had; it ends with the graph the first clients built.
    names = seen_late.names()
    assert names[0] == "project_snapshot" and names[-1] == "project_completed"
    snapshot = seen_late.of("project_snapshot")
    assert len(snapshot) == 1 and snapshot[0]["project"]["status"] == "running"
    assert any(node["status"] != "DONE" for node in snapshot[0]["graph"]["nodes"].values())
    late_diffs = seen_late.of("node_update")
    assert late_diffs and late_diffs == diffs[len(diffs) - len(late_diffs) :]
    # The snapshot holds every diff sent before it (the diffs it missed would be lost for good).
    before = replay(seen_on_b.of("project_snapshot")[0], diffs[: len(diffs) - len(late_diffs)])
    late_nodes = snapshot[0]["graph"]["nodes"]
    assert before and set(before) <= set(late_nodes)
    assert all(len(late_nodes[k]["history"]) >= len(node["history"]) for k, node in before.items())
    assert seen_late.graph_view(project_id) == view_b == seen_on_a.graph_view(project_id)
