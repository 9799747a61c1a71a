"""Connection guards in front of Socket.IO: who may open a session, how many, for how long.

Flask-SocketIO checks the token in the namespace ``connect`` handler, which runs only after the
engine.io handshake has opened a session; a client that never connects to a namespace (or is
refused there) kept its session, and in the production server each WebSocket holds a thread.
So, before python-engineio sees a request:

- :class:`HandshakeGuard` (WSGI middleware on ``/socket.io/``) refuses a foreign ``Host`` (403),
  a foreign browser ``Origin`` (403) and, when a token is configured, a new session without the
  token (401; ``Authorization: Bearer <token>`` or the ``token`` query parameter, the only one
  a browser WebSocket can send). It caps the engine.io requests in progress (WebSockets and
  long polls, each a thread) in all and per client address (503 beyond).
- :class:`IdleSessionReaper` closes engine.io sessions that have not joined the Socket.IO
  namespace within ``connect_timeout_s`` (never sent CONNECT, or were refused).

Slow request headers (slowloris) are the production server's part: see :mod:`sentient_server.worker`.
"""

from __future__ import annotations

import contextlib
import json
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
        on_socket_request: called with the environ of every admitted engine.io request before it
            is served (the production server lifts its header deadline for long-lived sockets).
    """

    def __init__(
        self, app: WSGIApp, config: ServerSettings, on_socket_request: Callable[[dict[str, Any]], None] | None = None
    ) -> None:
        self.app = app
        self.config = config
        self.on_socket_request = on_socket_request
        self.max_sockets = config.socket_capacity()
        self.max_per_client = min(config.max_sockets_per_client, self.max_sockets)
        self._lock = threading.Lock()
        self._in_progress = 0
        self._per_client: dict[str, int] = {}

    @property
    def in_progress(self) -> int:
        """engine.io requests being served now (open WebSockets, pending long polls)."""
        with self._lock:
            return self._in_progress

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path != SOCKET_PATH and not path.startswith(SOCKET_PATH + "/"):
            return self.app(environ, start_response)
        refusal = self._refusal(environ)
        if refusal is not None:
            return _error(start_response, *refusal)
        client = str(environ.get("REMOTE_ADDR") or "?")
        with self._lock:
            if self._in_progress >= self.max_sockets:
                full = "the server has no room for another live connection; try again shortly."
            elif self._per_client.get(client, 0) >= self.max_per_client:
                full = f"too many live connections from {client}; close some and try again."
            else:
                full = None
                self._in_progress += 1
                self._per_client[client] = self._per_client.get(client, 0) + 1
        if full is not None:
            logger.warning("refused a Socket.IO request from {}: {}", client, full)
            return _error(start_response, 503, "unavailable", full)
        try:
            if self.on_socket_request is not None:
                self.on_socket_request(environ)
            # engine.io answers with a list (or an empty one after a WebSocket): served by now.
            return list(self.app(environ, start_response))
        finally:
            with self._lock:
                self._in_progress -= 1
                left = self._per_client[client] - 1
                if left:
                    self._per_client[client] = left
                else:
                    del self._per_client[client]

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


def _disconnect(eio: Any, eio_sid: str, sock: socket.socket | None, linger_s: float) -> None:
    if sock is not None:
        # A client that never reads the close would keep its thread (and this one, which waits
        # for the close to be sent): end the TCP connection too. A socket closed by then raises,
        # harmlessly: a closed Python socket no longer holds its fd.
        timer = threading.Timer(linger_s, _shutdown, args=(sock,))
        timer.daemon = True
        timer.start()
    try:
        eio.disconnect(eio_sid)
    except Exception:  # already gone
        logger.opt(exception=True).debug("closing session {} failed", eio_sid)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class IdleSessionReaper:
    """Closes engine.io sessions that have not connected to the Socket.IO namespace in time.

    Args:
        server: the python-socketio ``Server``.
        timeout_s: how long a session may stay without a namespace connection.
        interval_s: how often sessions are checked (a session lives at most about
            ``timeout_s + interval_s`` without connecting).
        linger_s: how long a closed session's client has to read the close before its TCP
            connection is shut down.
    """

    def __init__(self, server: Any, timeout_s: float, interval_s: float = 0.5, linger_s: float = 1.0) -> None:
        self._server = server
        self._linger_s = linger_s
        self._timeout_s = timeout_s
        self._interval_s = interval_s
        self._first_seen: dict[str, float] = {}
        self._stop = threading.Event()
        self.closed = 0
        self._thread = threading.Thread(target=self._main, name="sentient-session-reaper", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self.sweep()
            except Exception:
                logger.opt(exception=True).error("idle session sweep failed")

    def sweep(self, now: float | None = None) -> int:
        """Close the sessions idle too long; returns how many were closed."""
        now = time.monotonic() if now is None else now
        eio = self._server.eio
        live = list(eio.sockets)  # a copy: sessions come and go on other threads
        seen = self._first_seen
        for gone in set(seen) - set(live):
            del seen[gone]
        closed = 0
        for eio_sid in live:
            first = seen.setdefault(eio_sid, now)
            if now - first < self._timeout_s:
                continue
            if self._server.manager.sid_from_eio_sid(eio_sid, "/") is not None:
                continue
            logger.info("closing engine.io session {}: no Socket.IO connect within {:g}s", eio_sid, self._timeout_s)
            seen.pop(eio_sid, None)
            environ = self._server.environ.get(eio_sid) or {}
            sock = environ.get("gunicorn.socket") or environ.get("werkzeug.socket")
            # Closing waits for the session's writer to send the close packet: not on this thread.
            threading.Thread(
                target=_disconnect,
                args=(eio, eio_sid, sock, self._linger_s),
                name="sentient-session-close",
                daemon=True,
            ).start()
            closed += 1
        self.closed += closed
        return closed

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
