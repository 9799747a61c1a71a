"""The application factory: Flask app, Socket.IO, engine loop, store and run manager, wired once."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from flask import Flask
from flask_socketio import SocketIO
from loguru import logger

from sentient.agents.models.gates import ProviderGates
from sentient.exceptions import ConfigError
from sentient.projects import ProjectService
from sentient.store import ProjectStore

from . import auth, headers, sockets
from .bridge import EngineLoop
from .config import ServerSettings
from .errors import register_error_handlers
from .events import Broadcaster
from .guard import HandshakeGuard, IdleSessionReaper
from .relay import JoinRelay
from .reviews import ReviewBroker
from .routes import meta, projects, reviews
from .routes.dashboard import dashboard_blueprint
from .runs import RunManager


@dataclass
class Services:
    """What the routes and handlers use, reachable as ``app.extensions["sentient"]``."""

    config: ServerSettings
    store: ProjectStore
    engine: EngineLoop
    socketio: SocketIO
    broadcaster: Broadcaster
    reviews: ReviewBroker
    runs: RunManager
    guard: HandshakeGuard
    reaper: IdleSessionReaper
    relay: JoinRelay | None = None
    closed: bool = False

    def close(self) -> None:
        """Stop the runs (they resume at the next start), the loop, the broadcaster, the store."""
        if self.closed:
            return
        self.closed = True
        self.reaper.stop()
        if self.relay is not None:
            self.relay.close()
        self.runs.shutdown()
        try:  # the engine loop's Redis connections, when provider limits are shared there
            self.engine.submit(self.runs.service.gates.aclose()).result(timeout=5)
        except Exception as exc:
            logger.warning("closing the provider limits' connections failed: {}", exc)
        self.broadcaster.flush()
        self.engine.stop()
        self.broadcaster.stop()
        self.store.close()


def create_app(config: ServerSettings | None = None, *, store: ProjectStore | None = None) -> Flask:
    """Build the server. Call ``app.extensions["sentient"].close()`` (or :func:`shutdown`) to stop it.

    Args:
        config: server settings; by default from the environment.
        store: the project store; by default ``<results_dir>/sentient.db``, or the PostgreSQL
            database of ``SENTIENT_DATABASE_URL``.
    """
    config = config or ServerSettings.from_env()
    config.check()
    app = Flask("sentient_server")
    app.config.update(
        SECRET_KEY=secrets.token_hex(32),
        MAX_CONTENT_LENGTH=config.max_request_bytes,
        JSON_SORT_KEYS=False,
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]
    gates = ProviderGates.from_settings(config.sentient)
    gates.check()  # SENTIENT_REDIS_URL set and Redis not answering: refuse now, naming it
    redis_url = config.sentient.redis_url
    # With Redis, every emit and room change goes through its message queue (server/relay.py).
    queue = {"message_queue": redis_url} if redis_url else {}
    socketio = SocketIO(
        app,
        async_mode="threading",
        cors_allowed_origins=auth.socket_origin_checker(config),
        max_http_buffer_size=config.max_request_bytes,
        # A client busy decoding a burst of updates may answer a ping late; with the default
        # 20 s it was dropped mid-run (and a client drops itself when no ping comes for
        # max(interval, timeout) + 5 s). Dead clients are found within 85 s instead of 45 s.
        ping_interval=25,
        ping_timeout=60,
        manage_session=False,
        logger=False,
        engineio_logger=False,
        **queue,
    )
    store = store or ProjectStore.open(
        config.sentient.results_dir, config.sentient.database_url, lease_s=config.sentient.lease_s
    )
    service = ProjectService(store, config.sentient, gates=gates)
    engine = EngineLoop()
    broadcaster = Broadcaster(socketio.server)
    review_broker = ReviewBroker(service, engine, broadcaster)
    relay = JoinRelay(redis_url, store.owner.token) if redis_url else None
    runs = RunManager(config, service, engine, broadcaster, review_broker, relay)
    if relay is not None:
        _listen_to_queue(socketio)
        relay.start(runs.serve_forwarded_join)
    # In front of Socket.IO's own WSGI app: refused handshakes never open an engine.io session.
    guard = HandshakeGuard(app.wsgi_app, config)
    app.wsgi_app = guard  # type: ignore[method-assign]
    reaper = IdleSessionReaper(socketio.server, config.connect_timeout_s)
    services = Services(config, store, engine, socketio, broadcaster, review_broker, runs, guard, reaper, relay)
    app.extensions["sentient"] = services

    register_error_handlers(app)
    auth.install(app, config)
    headers.install(app)
    for blueprint in (meta.bp, projects.bp, reviews.bp):
        app.register_blueprint(blueprint)
    if (config.dashboard_dir / "index.html").is_file():
        app.register_blueprint(dashboard_blueprint(config.dashboard_dir))
    sockets.register(socketio, services)

    if config.resume_on_start:
        runs.resume_interrupted()
    logger.info("server ready; projects in {}", config.sentient.results_dir)
    return app


def _listen_to_queue(socketio: SocketIO, timeout_s: float = 5.0) -> None:
    """Start the message queue's listener now, not at the first connection, and wait until it has
    sent its SUBSCRIBE, before this process accepts a connection: a room entry or a snapshot that
    another process sends for the first client here must find someone listening."""
    server = socketio.server
    if not server.manager_initialized:
        server.manager_initialized = True
        server.manager.initialize()
    deadline = time.monotonic() + timeout_s
    while not (server.manager.pubsub is not None and server.manager.pubsub.subscribed):
        if time.monotonic() > deadline:
            raise ConfigError(
                "the Socket.IO message queue did not subscribe to Redis.",
                field="SENTIENT_REDIS_URL",
                fix="check that Redis answers at that URL.",
            )
        time.sleep(0.01)


def shutdown(app: Flask) -> None:
    """Stop the server's runs and threads (projects still running become ``interrupted``)."""
    app.extensions["sentient"].close()
