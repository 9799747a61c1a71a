"""The production server's worker: gunicorn's ``gthread`` with deadlines on slow requests.

gunicorn hands a connection to a thread as soon as its first bytes arrive, and the thread then
reads the request headers with a blocking read and no time limit: a client that sends half a
header line and stops (slowloris) holds a thread for good, and ~130 of them took every thread.
Here every request gets a deadline when its thread picks it up: ``header_timeout_s`` until the
headers are in, then ``request_timeout_s`` for the rest of an ordinary request. A socket past
its deadline is shut down, which ends the blocked read. Engine.io requests (WebSockets, long
polls) are released from the deadline once their headers are in: they are meant to last, and
:class:`sentient_server.guard.HandshakeGuard` caps how many there are.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from gunicorn.workers.gthread import ThreadWorker
from loguru import logger

from .guard import SOCKET_PATH


class RequestDeadlines:
    """Shuts down sockets whose request is late, checked by one thread every ``tick_s``."""

    def __init__(self, tick_s: float = 0.5) -> None:
        self._tick_s = tick_s
        self._lock = threading.Lock()
        self._due: dict[int, tuple[float, socket.socket]] = {}
        self._stop = threading.Event()
        self.expired = 0
        self._thread = threading.Thread(target=self._main, name="sentient-deadlines", daemon=True)
        self._thread.start()

    def watch(self, sock: socket.socket, timeout_s: float) -> None:
        """Shut ``sock`` down unless released within ``timeout_s`` (replaces an earlier deadline)."""
        with self._lock:
            self._due[id(sock)] = (time.monotonic() + timeout_s, sock)

    def release(self, sock: socket.socket) -> None:
        with self._lock:
            self._due.pop(id(sock), None)

    def _main(self) -> None:
        while not self._stop.wait(self._tick_s):
            now = time.monotonic()
            with self._lock:
                late = [key for key, (due, _) in self._due.items() if due <= now]
                socks = [self._due.pop(key)[1] for key in late]
            for sock in socks:
                self.expired += 1
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)  # the blocked read returns; gunicorn closes it
            if socks:
                logger.info("dropped {} connection(s) whose request did not arrive in time", len(socks))

    def stop(self) -> None:
        self._stop.set()


def with_deadlines(
    app: Callable[..., Iterable[bytes]], deadlines: RequestDeadlines, request_timeout_s: float
) -> Callable[..., Iterable[bytes]]:
    """Wrap the WSGI app: its headers are in, so lift or extend the request's deadline."""

    def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        sock = environ.get("gunicorn.socket")
        if sock is not None:
            path = environ.get("PATH_INFO", "")
            if path == SOCKET_PATH or path.startswith(SOCKET_PATH + "/"):
                deadlines.release(sock)
            else:
                deadlines.watch(sock, request_timeout_s)
        return app(environ, start_response)

    return wsgi


class SentientThreadWorker(ThreadWorker):
    """``gthread`` whose requests have deadlines; ``self.app`` is :class:`sentient_server.serve.SentientGunicorn`."""

    def handle(self, conn: Any) -> Any:
        deadlines: RequestDeadlines | None = getattr(self.app, "deadlines", None)
        if deadlines is None:
            return super().handle(conn)
        sock = conn.sock
        deadlines.watch(sock, self.app.header_timeout_s)
        try:
            return super().handle(conn)
        finally:
            deadlines.release(sock)
