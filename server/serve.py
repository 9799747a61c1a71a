"""Run the server in production: gunicorn, one process, many threads (``gthread``).

Flask-SocketIO in ``threading`` mode keeps its rooms and the engine loop in one process, so
there is exactly one worker; WebSocket connections (simple-websocket on gunicorn's socket) each
hold a thread, hence ``threads``. The worker is gthread with request deadlines
(:mod:`sentient_server.worker`): a client that sends its headers slowly is dropped, not waited for. The app is built inside the worker, after gunicorn forks,
so the engine thread lives where the requests are served. When the worker stops, running
projects are marked ``interrupted`` and resumed by the next start.

    python -m sentient_server.serve --port 5000        # same as: sentient serve --port 5000
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from loguru import logger

from sentient.exceptions import ConfigError
from sentient.store import ProjectStore, StoreError
from sentient.tools.sandbox import hide_process_memory

from .app import create_app, shutdown
from .config import ServerSettings
from .worker import RequestDeadlines, with_deadlines


class SentientGunicorn(BaseApplication):
    """gunicorn, configured in code, serving :func:`sentient_server.create_app`."""

    request_timeout_s = 60.0  # an ordinary request (not a socket) once its headers are in

    def __init__(self, config: ServerSettings, *, log_level: str = "info") -> None:
        self._config = config
        self._log_level = log_level
        self.app: Flask | None = None
        self.deadlines: RequestDeadlines | None = None
        self.header_timeout_s = config.header_timeout_s
        super().__init__()

    def load_config(self) -> None:
        host = self._config.host
        bind_host = f"[{host}]" if ":" in host and not host.startswith("[") else host

        def post_worker_init(worker: Any) -> None:
            hide_process_memory()  # the worker holds the keys and runs the Python sandbox
            # On SIGTERM gunicorn waits (graceful_timeout) for open requests, and a WebSocket
            # never ends on its own: stop the runs and close the sockets so the worker exits now.
            graceful_exit = worker.handle_exit

            def handle_exit(sig: int, frame: Any) -> None:
                graceful_exit(sig, frame)
                if self.app is not None:
                    threading.Thread(target=close_connections, args=(self.app,), daemon=True).start()

            signal.signal(signal.SIGTERM, handle_exit)

        def worker_exit(server: Any, worker: Any) -> None:
            if self.deadlines is not None:
                self.deadlines.stop()
            if self.app is not None:
                shutdown(self.app)

        options = {
            "bind": f"{bind_host}:{self._config.port}",
            "workers": 1,  # Socket.IO rooms and the engine loop live in one process
            "worker_class": "sentient_server.worker.SentientThreadWorker",
            "threads": self._config.threads,
            "timeout": 60,
            "graceful_timeout": 20,
            "keepalive": 5,
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
        self.app = create_app(self._config)
        self.deadlines = RequestDeadlines()
        return with_deadlines(self.app, self.deadlines, self.request_timeout_s)


def close_connections(app: Flask) -> None:
    """Stop the runs (they become ``interrupted``), then disconnect every Socket.IO client."""
    services = app.extensions["sentient"]
    services.runs.shutdown()
    server = services.socketio.server
    for sid, _ in list(server.manager.get_participants("/", None)):
        server.disconnect(sid, namespace="/")


def serve(config: ServerSettings, *, log_level: str = "info") -> int:
    """Check the settings, then serve until interrupted. Returns an exit code."""
    config.check()  # refuse an exposed bind without a token before gunicorn starts
    # An unreachable SENTIENT_DATABASE_URL is one clear line now, not a traceback in the worker.
    ProjectStore.open(config.sentient.results_dir, config.sentient.database_url).close()
    hide_process_memory()  # sandboxed snippets must not read the keys from /proc/<pid>/environ
    logger.info("serving on http://{}:{}", config.host, config.port)
    SentientGunicorn(config, log_level=log_level).run()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sentient_server.serve", description="Run the Sentient server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=128, help="server threads; each WebSocket holds one")
    args = parser.parse_args(argv)
    logger.enable("sentient")  # the library is silent until an application enables it
    logger.remove()  # the library never configures sinks; the server does
    logger.add(sys.stderr, level="INFO")
    try:
        return serve(ServerSettings.from_env(host=args.host, port=args.port, threads=args.threads))
    except (ConfigError, StoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
