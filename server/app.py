"""The application factory: Flask app, Socket.IO, engine loop, store and run manager, wired once."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

from flask import Flask
from flask_socketio import SocketIO
from loguru import logger

from sentient.exceptions import ConfigError
from sentient.store import ProjectStore

from . import auth, headers, sockets
from .config import ServerSettings
from .core import Core
from .errors import register_error_handlers
from .guard import HandshakeGuard, IdleSessionReaper
from .hub import GeventHub, Hub, Inline
from .message_queue import message_queue
from .routes import meta, projects, reviews
from .routes.dashboard import dashboard_blueprint


@dataclass
class Services(Core):
    """What the routes and handlers use, reachable as ``app.extensions["sentient"]``."""

    socketio: SocketIO = field(kw_only=True)
    guard: HandshakeGuard = field(kw_only=True)
    reaper: IdleSessionReaper = field(kw_only=True)

    def close(self) -> None:
        """Stop the runs (they resume at the next start), the loop, the broadcaster, the store."""
        if not self.closed:
            self.reaper.stop()
        super().close()


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
    redis_url = config.sentient.redis_url
    hub: Hub = GeventHub(config.threads) if config.async_mode == "gevent" else Inline()
    # With Redis, every emit and room change goes through its message queue (server/relay.py).
    queue = {"client_manager": message_queue(redis_url, hub)} if redis_url else {}
    socketio = SocketIO(
        app,
        async_mode=config.async_mode,
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
    # In front of Socket.IO's own WSGI app: refused handshakes never open an engine.io session.
    guard = HandshakeGuard(app.wsgi_app, config)
    app.wsgi_app = guard  # type: ignore[method-assign]
    reaper = IdleSessionReaper(
        socketio.server, config.connect_timeout_s, config.max_pending_sockets_per_client, config.cap_grace_s
    )
    try:
        services = Services.open(
            config,
            socketio.server,
            store=store,
            queue_projects=True,
            hub=hub,
            socketio=socketio,
            guard=guard,
            reaper=reaper,
        )
    except BaseException:
        reaper.stop()
        hub.close()
        raise
    app.extensions["sentient"] = services
    if redis_url:
        try:
            _listen_to_queue(socketio)
        except BaseException:
            services.close()
            raise

    register_error_handlers(app)
    auth.install(app, config)
    headers.install(app)
    for blueprint in (meta.bp, projects.bp, reviews.bp):
        app.register_blueprint(blueprint)
    if (config.dashboard_dir / "index.html").is_file():
        app.register_blueprint(dashboard_blueprint(config.dashboard_dir))
    sockets.register(socketio, services)

    if config.resume_on_start:
        services.runs.resume_interrupted()
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
