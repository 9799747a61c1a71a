"""Connection guards in front of Socket.IO: who may open a session, how many, for how long.

Flask-SocketIO checks the token in the namespace ``connect`` handler, which runs only after the
engine.io handshake has opened a session; a client that never connects to a namespace (or is
refused there) kept its session. So, before python-engineio sees a request:

- :class:`HandshakeGuard` (WSGI middleware on ``/socket.io/``) refuses a foreign ``Host`` (403),
  a foreign browser ``Origin`` (403) and, when a token is configured, a new session without the
  token (401; ``Authorization: Bearer <token>`` or the ``token`` query parameter, the only one
  a browser WebSocket can send). It caps the engine.io requests in progress (WebSockets and
  long polls) at ``max_sockets`` (503 beyond).
- :class:`IdleSessionReaper` closes engine.io sessions that have not joined the Socket.IO
  namespace within ``connect_timeout_s`` (never sent CONNECT, or were refused), and, beyond
  ``max_pending_sockets_per_client`` such sessions from one client address, the address's oldest
  once past ``cap_grace_s``. A dashboard that connects at once so gets in even from the address
  (loopback) of a process that holds idle sockets.

In production no connection holds a thread (:mod:`sentient_server.hub`); slow and partial
requests are the worker's part: see :mod:`sentient_server.worker`.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

from loguru import logger

from .auth import bearer, host_allowed, origin_allowed, token_ok
from .config import ServerSettings

SOCKET_PATH = "/socket.io"
StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class HandshakeGuard:
    """WSGI middleware: host, origin, token and capacity checks on engine.io requests.

    Args:
        app: the WSGI app behind it (Flask's ``wsgi_app``).
        config: the server settings.
    """

    def __init__(self, app: WSGIApp, config: ServerSettings) -> None:
        self.app = app
        self.config = config
        self.max_sockets = config.max_sockets
        self._lock = threading.Lock()
        self._in_progress = 0

    @property
    def in_progress(self) -> int:
        """engine.io requests being served now (open WebSockets, pending long polls)."""
        with self._lock:
            return self._in_progress

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if not is_socket_path(path):
            return self.app(environ, start_response)
        refusal = self._refusal(environ)
        if refusal is not None:
            return _error(start_response, *refusal)
        with self._lock:
            full = self._in_progress >= self.max_sockets
            if not full:
                self._in_progress += 1
        if full:
            client = environ.get("REMOTE_ADDR") or "?"
            logger.warning("refused a Socket.IO request from {}: {} live connections already", client, self.max_sockets)
            return _error(
                start_response,
                503,
                "unavailable",
                "the server has no room for another live connection; try again shortly.",
            )
        try:
            # engine.io answers with a list (or an empty one after a WebSocket): served by now.
            return list(self.app(environ, start_response))
        finally:
            with self._lock:
                self._in_progress -= 1

    def _refusal(self, environ: dict[str, Any]) -> tuple[int, str, str] | None:
        config = self.config
        host = environ.get("HTTP_HOST")
        if not host_allowed(config, host):
            return 403, "forbidden", "this server only accepts connections addressed to localhost."
        origin = environ.get("HTTP_ORIGIN")
        own = f"{environ.get('wsgi.url_scheme', 'http')}://{host or ''}"
        if not origin_allowed(config, origin, own):
            return 403, "forbidden", f"connections from origin {origin} are not allowed."
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        if config.api_token and "sid" not in query:  # a new session: it must prove the token now
            presented = bearer(environ.get("HTTP_AUTHORIZATION")) or (query.get("token") or [None])[0]
            if not token_ok(config, presented):
                return 401, "unauthorized", "connect with the API token (query 'token' or 'Authorization: Bearer')."
        return None


def _error(start_response: StartResponse, status: int, code: str, message: str) -> list[bytes]:
    reasons = {401: "UNAUTHORIZED", 403: "FORBIDDEN", 503: "SERVICE UNAVAILABLE"}
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    start_response(
        f"{status} {reasons[status]}",
        [("Content-Type", "application/json"), ("Content-Length", str(len(body))), ("Connection", "close")],
    )
    return [body]


def is_socket_path(path: str) -> bool:
    """Whether a request path is engine.io's (``/socket.io/...``)."""
    return path == SOCKET_PATH or path.startswith(SOCKET_PATH + "/")


class IdleSessionReaper:
    """Closes engine.io sessions that have not connected to the Socket.IO namespace in time, and
    those beyond ``max_per_client`` such sessions from one client address (its oldest first).

    It runs as python-socketio's own background task: a thread with a threaded server, a greenlet
    on the hub in production, where python-socketio's sessions live.

    Args:
        server: the python-socketio ``Server``.
        timeout_s: how long a session may stay without a namespace connection.
        max_per_client: most such sessions one client address keeps past ``grace_s``.
        grace_s: how long a session is safe from being closed for its address's share.
        interval_s: how often sessions are checked (a session lives at most about
            ``timeout_s + interval_s`` without connecting).
        linger_s: how long a closed session's client has to read the close before its TCP
            connection is shut down.
    """

    def __init__(
        self,
        server: Any,
        timeout_s: float,
        max_per_client: int,
        grace_s: float,
        interval_s: float = 0.25,
        linger_s: float = 1.0,
    ) -> None:
        self._server = server
        self._grace_s = grace_s
        self._linger_s = linger_s
        self._timeout_s = timeout_s
        self._max_per_client = max_per_client
        self._interval_s = interval_s
        self._first_seen: dict[str, float] = {}
        self._closing: dict[str, float] = {}  # when each close began
        self._stopped = False
        self.closed = 0
        server.start_background_task(self._main)

    def _main(self) -> None:
        while not self._stopped:
            self._server.sleep(self._interval_s)
            try:
                self.sweep()
            except Exception:
                logger.opt(exception=True).error("idle session sweep failed")

    def sweep(self, now: float | None = None) -> int:
        """Close the sessions idle too long or beyond their address's share; returns how many."""
        now = time.monotonic() if now is None else now
        server = self._server
        live = list(server.eio.sockets)  # a copy, in the order the sessions opened
        seen = self._first_seen
        for gone in set(seen) - set(live):
            del seen[gone]
        for gone in set(self._closing) - set(live):
            del self._closing[gone]
        # A close that has not ended after the linger (its writer stuck) is made again: a second
        # disconnect drops the session at once.
        retry_after = self._linger_s + 1.0
        pending: dict[str, list[str]] = {}
        late: list[str] = []
        for eio_sid in live:
            first = seen.setdefault(eio_sid, now)
            if now - self._closing.get(eio_sid, -retry_after) < retry_after:
                continue
            if server.manager.sid_from_eio_sid(eio_sid, "/") is not None:
                continue
            if now - first >= self._timeout_s:
                late.append(eio_sid)
            else:
                client = str((server.environ.get(eio_sid) or {}).get("REMOTE_ADDR") or "?")
                pending.setdefault(client, []).append(eio_sid)
        crowded: list[str] = []
        for sids in pending.values():
            over = sids[: max(0, len(sids) - self._max_per_client)]  # the oldest
            crowded += [sid for sid in over if now - seen[sid] >= self._grace_s]
        if late:
            logger.info(
                "closing {} engine.io session(s): no Socket.IO connect within {:g}s", len(late), self._timeout_s
            )
        if crowded:
            logger.info(
                "closing {} engine.io session(s): over {} not connected from one address",
                len(crowded),
                self._max_per_client,
            )
        for eio_sid in late + crowded:
            self._close(eio_sid, now)
        self.closed += len(late) + len(crowded)
        return len(late) + len(crowded)

    def _close(self, eio_sid: str, now: float) -> None:
        self._closing[eio_sid] = now
        environ = self._server.environ.get(eio_sid) or {}
        sock = environ.get("gunicorn.socket") or environ.get("werkzeug.socket")
        if sock is not None:
            # A client that never reads the close would keep its session (and the task closing
            # it, which waits for the close to be sent): end the TCP connection too.
            self._server.start_background_task(self._shut_down_later, sock)
        # Closing waits for the session's writer to send the close packet: not on this task.
        self._server.start_background_task(_disconnect, self._server.eio, eio_sid)

    def _shut_down_later(self, sock: socket.socket) -> None:
        self._server.sleep(self._linger_s)
        shut_down(sock)

    def stop(self) -> None:
        self._stopped = True


def shut_down(sock: socket.socket) -> None:
    """End a client's TCP connection; whoever reads it sees the end, whoever writes an error.

    Through a duplicate of its descriptor: gevent's own ``shutdown`` fails a greenlet waiting on
    the socket with EBADF (logged as an error by gunicorn) instead of letting it read the end.
    """
    with contextlib.suppress(OSError):  # already closed: a closed socket no longer holds its fd
        duplicate = socket.socket(fileno=os.dup(sock.fileno()))
        try:
            duplicate.shutdown(socket.SHUT_RDWR)
        finally:
            duplicate.close()


def _disconnect(eio: Any, eio_sid: str) -> None:
    try:
        eio.disconnect(eio_sid)
    except Exception:  # already gone
        logger.opt(exception=True).debug("closing session {} failed", eio_sid)
