"""Run the server in production: gunicorn, one process, every connection a greenlet.

Flask-SocketIO keeps its rooms and the engine loop in one process, so there is exactly one
worker: gunicorn's gevent worker, unpatched (:mod:`sentient_server.worker`). Connections, idle,
half-sent or WebSockets, are greenlets on its hub; requests run on ``threads`` native threads
(:mod:`sentient_server.hub`); the engine loop, the store and model calls keep their own threads.
A client that sends its request slowly is dropped, and one address's share of such connections
is capped. The app is built inside the worker, after gunicorn forks, so the engine thread lives
where the requests are served. When the worker stops, running projects are marked
``interrupted`` and resumed by the next start.

    python -m sentient_server.serve --port 5000        # same as: sentient serve --port 5000
"""

from __future__ import annotations

import argparse
import resource
import signal
import sys
from dataclasses import replace
from typing import Any

import gevent
from flask import Flask
from gunicorn.app.base import BaseApplication
from loguru import logger

from sentient.cli.serve import add_connection_limits, connection_limits
from sentient.engine.memory import freeze_startup_objects
from sentient.exceptions import ConfigError
from sentient.store import ProjectStore, StoreError
from sentient.tools.sandbox import hide_process_memory

from .app import create_app, shutdown
from .config import ServerSettings
from .worker import Front


class SentientGunicorn(BaseApplication):
    """gunicorn, configured in code, serving :func:`sentient_server.create_app`."""

    def __init__(self, config: ServerSettings, *, log_level: str = "info") -> None:
        self._config = replace(config, async_mode="gevent")
        self._log_level = log_level
        self.app: Flask | None = None
        self.front: Front | None = None
        super().__init__()

    def load_config(self) -> None:
        host = self._config.host
        bind_host = f"[{host}]" if ":" in host and not host.startswith("[") else host

        def post_worker_init(worker: Any) -> None:
            hide_process_memory()  # the worker holds the keys and runs the Python sandbox
            freeze_startup_objects()  # the app just loaded lives as long as the worker
            # On SIGTERM gunicorn waits (graceful_timeout) for open connections, and a WebSocket
            # never ends on its own: stop the runs and close the connections so the worker exits now.
            graceful_exit = worker.handle_exit

            def handle_exit(sig: int, frame: Any) -> None:
                graceful_exit(sig, frame)
                if self.app is not None and self.front is not None:
                    gevent.spawn(close_connections, self.app, self.front)

            signal.signal(signal.SIGTERM, handle_exit)

        def worker_exit(server: Any, worker: Any) -> None:
            if self.app is not None:
                shutdown(self.app)

        options = {
            "bind": f"{bind_host}:{self._config.port}",
            "workers": 1,  # Socket.IO rooms and the engine loop live in one process
            "worker_class": "sentient_server.worker.SentientGeventWorker",
            "worker_connections": self._config.max_connections,
            "timeout": 60,
            "graceful_timeout": 20,
            "keepalive": 5,  # must not be 0: the worker's request deadlines apply on keep-alive reads
            "loglevel": self._log_level,
            "accesslog": None,
            "errorlog": "-",
            "post_worker_init": post_worker_init,
            "worker_exit": worker_exit,
            "proc_name": "sentient-server",
            "control_socket_disable": True,  # gunicorn >= 23: no second, local control surface
        }
        for key, value in options.items():
            if key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self) -> Any:
        self.app = create_app(self._config)  # in the worker, on the thread that runs its hub
        self.front = Front(self.app, self.app.extensions["sentient"].hub, self._config)
        return self.front


def close_connections(app: Flask, front: Front) -> None:
    """Stop the runs (they become ``interrupted``), then close every connection (on the hub)."""
    services = app.extensions["sentient"]
    services.hub.offload(services.runs.shutdown)
    server = services.socketio.server
    for sid, _ in list(server.manager.get_participants("/", None)):
        server.disconnect(sid, namespace="/")
    front.partial.drop_all()


def raise_open_files_limit(wanted: int) -> None:
    """Lift the soft limit on open files towards ``wanted`` (each connection is one), within the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def serve(config: ServerSettings, *, log_level: str = "info") -> int:
    """Check the settings, then serve until interrupted. Returns an exit code."""
    config.check()  # refuse an exposed bind without a token before gunicorn starts
    # An unreachable SENTIENT_DATABASE_URL is one clear line now, not a traceback in the worker.
    ProjectStore.open(config.sentient.results_dir, config.sentient.database_url).close()
    hide_process_memory()  # sandboxed snippets must not read the keys from /proc/<pid>/environ
    raise_open_files_limit(config.max_connections + 1024)  # the store, models and the sandbox open files too
    logger.info("serving on http://{}:{}", config.host, config.port)
    SentientGunicorn(config, log_level=log_level).run()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sentient_server.serve", description="Run the Sentient server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    add_connection_limits(parser)
    args = parser.parse_args(argv)
    logger.enable("sentient")  # the library is silent until an application enables it
    logger.remove()  # the library never configures sinks; the server does
    logger.add(sys.stderr, level="INFO")
    try:
        return serve(ServerSettings.from_env(host=args.host, port=args.port, **connection_limits(args)))
    except (ConfigError, StoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
