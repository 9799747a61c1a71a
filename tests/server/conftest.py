"""Server fixtures: an app on temp dirs with the scripted model, a live server on 127.0.0.1,
real python-socketio clients that record what they receive, and a cluster of web and worker
processes on a real Redis and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import socketio
from cluster import Cluster
from fakes.postgres import PostgresServer
from fakes.redis_server import RedisServer
from flask import Flask
from flask.testing import FlaskClient
from server_helpers import InOrderClient, Recorder
from werkzeug.serving import BaseWSGIServer, make_server

from sentient.agents.models.fake import ScriptedModel
from sentient.settings import Settings
from sentient_server import ServerSettings, create_app, shutdown

LATENCY_S = 0.005


@pytest.fixture
def docs_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "asyncio.md").write_text("# Asyncio\n\nThe event loop runs coroutines and tasks.\n")
    return folder


@pytest.fixture
def server_settings(tmp_path: Path, docs_folder: Path) -> ServerSettings:
    return ServerSettings(
        sentient=Settings(
            model="scripted", results_dir=tmp_path / "results", cache_dir=tmp_path / "cache", offline=True
        ),
        model=ScriptedModel(latency=LATENCY_S),
        docs=docs_folder,
        docs_roots=(tmp_path,),
        flush_interval_s=0.05,
    )


@pytest.fixture
def make_app() -> Iterator[Callable[..., Flask]]:
    """Build apps (``make_app(settings)``); every one is shut down at the end of the test."""
    apps: list[Flask] = []

    def make(settings: ServerSettings) -> Flask:
        app = create_app(settings)
        apps.append(app)
        return app

    yield make
    for app in apps:
        shutdown(app)


@pytest.fixture
def app(make_app: Callable[..., Flask], server_settings: ServerSettings) -> Flask:
    return make_app(server_settings)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@dataclass
class LiveServer:
    app: Flask
    http: BaseWSGIServer
    thread: threading.Thread
    url: str

    def drop_clients(self) -> None:
        """Close every Socket.IO connection from the server side (a client-side close of a
        WebSocket on Werkzeug's server waits 3 s for a close frame)."""
        sio = self.app.extensions["sentient"].socketio.server
        for sid, _ in list(sio.manager.get_participants("/", None)):
            sio.disconnect(sid, namespace="/")

    def stop(self) -> None:
        self.drop_clients()
        self.http.shutdown()
        self.thread.join(5)
        shutdown(self.app)
        self.http.server_close()


@pytest.fixture
def live() -> Iterator[Callable[..., LiveServer]]:
    """Start real threaded HTTP servers on a free port (``live(settings, host="127.0.0.1")``)."""
    servers: list[LiveServer] = []

    def start(settings: ServerSettings, host: str = "127.0.0.1") -> LiveServer:
        settings = replace(settings, host=host)
        app = create_app(settings)
        http = make_server(host, 0, app, threaded=True)
        http.block_on_close = False  # type: ignore[attr-defined]  # WebSocket threads end on their own
        http.daemon_threads = True  # type: ignore[attr-defined]
        thread = threading.Thread(target=http.serve_forever, daemon=True)
        thread.start()
        server = LiveServer(app, http, thread, f"http://127.0.0.1:{http.server_port}")
        servers.append(server)
        return server

    start.servers = servers  # type: ignore[attr-defined]
    yield start
    for server in servers:
        if server.thread.is_alive():
            server.stop()


@dataclass
class SocketClient:
    sio: socketio.Client
    received: Recorder


@pytest.fixture
def connect(live: Callable[..., LiveServer]) -> Iterator[Callable[..., SocketClient]]:
    """Connect real python-socketio clients (``connect(url, token=None)``), disconnected at teardown."""
    clients: list[socketio.Client] = []

    def make(url: str, token: str | None = None, transports: list[str] | None = None) -> SocketClient:
        sio = InOrderClient(reconnection=False)
        received = Recorder()
        sio.on("*", received)
        # The token goes with the engine.io handshake (checked before a session opens) and with
        # the namespace connect.
        sio.connect(
            url,
            headers={"Authorization": f"Bearer {token}"} if token else {},
            auth={"token": token} if token else None,
            transports=transports or ["websocket"],
        )
        clients.append(sio)
        return SocketClient(sio, received)

    yield make
    for server in live.servers:  # type: ignore[attr-defined]
        if server.thread.is_alive():
            server.drop_clients()
    for sio in clients:
        if sio.connected:
            sio.disconnect()


@pytest.fixture
def cluster(tmp_path: Path, redis_server: RedisServer, postgres: PostgresServer) -> Iterator[Callable[..., Cluster]]:
    """``cluster(lease_s=30)``: a :class:`Cluster` on a fresh Redis and a new PostgreSQL database
    (one per test); its clients are disconnected and its processes killed at the end."""
    made: list[Cluster] = []

    def make(lease_s: float = 30) -> Cluster:
        made.append(Cluster(tmp_path, redis_server.url, postgres.new_database(), lease_s))
        return made[0]

    yield make
    for built in made:
        built.stop()
