"""The production server's worker: gunicorn's gevent worker, without monkey-patching.

Every connection is a greenlet on the worker's hub (:mod:`sentient_server.hub`): a client that
sends its request slowly, or keeps a connection open and idle, costs a socket and a few kilobytes,
never a thread (with ``gthread``, 400 half-sent requests kept authorised ones waiting for 28 s).
What is cheap is also bounded:

- A request head must arrive within ``header_timeout_s`` of the connection opening, or of the
  previous answer on a kept-alive connection; the connection is dropped otherwise. A body must
  arrive within ``body_timeout_s`` of its head (408 otherwise).
- :class:`PartialRequests`: one client address keeps at most ``max_partial_requests_per_client``
  connections whose request has not all arrived (or that idle between two requests); beyond,
  its oldest are dropped, none before ``cap_grace_s``.
- ``max_connections`` connections in all; more wait in the listen backlog.

:class:`Front` reads a request's body on the hub, then runs the app on a thread of the hub's pool
and writes the answer back on the hub, so a client slow to read its answer holds no thread either.
engine.io requests stay on the hub, where python-engineio serves them (``async_mode="gevent"``).
"""

from __future__ import annotations

import io
import socket
import time
from collections.abc import Callable, Iterable
from typing import Any

import gevent
from gunicorn.http.errors import NoMoreData
from gunicorn.workers.ggevent import GeventWorker
from loguru import logger

from .config import ServerSettings
from .guard import is_socket_path, shut_down
from .hub import GeventHub

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class PartialRequests:
    """The connections of each client address whose request has not all arrived, oldest first.

    Beyond ``per_client`` such connections, an address's oldest are dropped, but none in its first
    ``grace_s``: a client that sends its request promptly is never dropped for sharing an address
    with a slow one, and a slow client that reconnects at once is dropped at most every
    ``grace_s``, not as fast as it can reconnect. Only the hub's thread uses it.

    Args:
        per_client: most such connections one address keeps past their grace.
        grace_s: how long a connection is safe from being dropped for its address's share.
    """

    def __init__(self, per_client: int, grace_s: float) -> None:
        self.per_client = per_client
        self.grace_s = grace_s
        self._by_client: dict[str, dict[socket.socket, float]] = {}  # oldest first
        self._client_of: dict[socket.socket, str] = {}
        self.dropped = 0  # since the last report
        self.timed_out = 0

    def waiting(self, sock: socket.socket, client: str, now: float | None = None) -> None:
        """``sock`` waits for a request (or the rest of one): it is the address's newest."""
        now = time.monotonic() if now is None else now
        self.done(sock)
        socks = self._by_client.setdefault(client, {})
        socks[sock] = now
        self._client_of[sock] = client
        self._trim(socks, now)

    def sweep(self, now: float | None = None) -> None:
        """Drop the connections beyond each address's share whose grace has passed."""
        now = time.monotonic() if now is None else now
        for socks in list(self._by_client.values()):
            self._trim(socks, now)

    def _trim(self, socks: dict[socket.socket, float], now: float) -> None:
        while len(socks) > self.per_client:
            oldest, since = next(iter(socks.items()))
            if now - since < self.grace_s:
                return
            self.done(oldest)
            self.dropped += 1
            shut_down(oldest)  # its pending read ends; gunicorn closes it

    def done(self, sock: socket.socket) -> None:
        """``sock``'s request has all arrived, or the connection is closed."""
        client = self._client_of.pop(sock, None)
        if client is not None:
            socks = self._by_client[client]
            del socks[sock]
            if not socks:
                del self._by_client[client]

    def report(self) -> None:
        """Log the connections dropped since the last report, if any."""
        timed_out, self.timed_out = self.timed_out, 0
        dropped, self.dropped = self.dropped, 0
        if timed_out:
            logger.info("dropped {} connection(s) whose request did not arrive in time", timed_out)
        if dropped:
            logger.info("dropped {} connection(s): over {} waiting requests from one address", dropped, self.per_client)

    def drop_all(self) -> None:
        """Drop every waiting connection (the worker is stopping)."""
        for sock in list(self._client_of):
            self.done(sock)
            shut_down(sock)


class Front:
    """The WSGI app gunicorn's worker calls: reads the body on the hub, runs the app on a thread.

    Args:
        app: the Flask app.
        hub: its hub (``app.extensions["sentient"].hub``).
        config: the server settings (body size and time limits, the per-address cap).
    """

    def __init__(self, app: WSGIApp, hub: GeventHub, config: ServerSettings) -> None:
        self.app = app
        self.hub = hub
        self.max_body = config.max_request_bytes
        self.body_timeout_s = config.body_timeout_s
        self.header_timeout_s = config.header_timeout_s
        self.partial = PartialRequests(config.max_partial_requests_per_client, config.cap_grace_s)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        sock = environ.get("gunicorn.socket")
        if is_socket_path(environ.get("PATH_INFO", "")):
            self._served(sock)
            return self.app(environ, start_response)  # python-engineio, on the hub
        try:
            self._buffer_body(environ)
        except gevent.Timeout:
            return _timed_out(start_response)
        self._served(sock)
        return self.hub.offload(self._run, environ, start_response)

    def _served(self, sock: socket.socket | None) -> None:
        if sock is not None:
            self.partial.done(sock)

    def _buffer_body(self, environ: dict[str, Any]) -> None:
        """Read the body here, within ``body_timeout_s``: the app's thread then never waits on the client.

        A body over ``max_request_bytes`` is cut one byte past it, so that the app answers 413.
        """
        declared = environ.get("CONTENT_LENGTH")
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if not chunked and not declared:
            return
        with gevent.Timeout(self.body_timeout_s):
            body = environ["wsgi.input"].read(self.max_body + 1)
        if declared and declared.isdigit() and len(body) < min(int(declared), self.max_body + 1):
            raise NoMoreData(body)  # the client went away mid-body
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("HTTP_TRANSFER_ENCODING", None)

    def _run(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        answer = self.app(environ, start_response)
        try:
            return list(answer)
        finally:
            close = getattr(answer, "close", None)
            if close is not None:
                close()


def _timed_out(start_response: StartResponse) -> list[bytes]:
    body = b'{"error": {"code": "request_timeout", "message": "the request body did not arrive in time."}}'
    start_response("408 REQUEST TIMEOUT", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


class SentientGeventWorker(GeventWorker):
    """gunicorn's gevent worker, unpatched, with request deadlines and per-address caps.

    ``self.app`` is :class:`sentient_server.serve.SentientGunicorn`; its ``front`` is set once the
    app is loaded.
    """

    def patch(self) -> None:
        # gunicorn's patch() monkey-patches the whole standard library, which would turn the engine
        # loop, the store writers and model calls into greenlets on this hub. Only the listening
        # sockets need to be gevent's.
        from gevent import socket as gsocket

        listeners: list[Any] = self.sockets  # type: ignore[has-type]
        self.sockets = [gsocket.socket(s.FAMILY, gsocket.SOCK_STREAM, fileno=s.sock.detach()) for s in listeners]

    def run(self) -> None:
        sweeper = gevent.spawn(self._sweep_and_report)
        try:
            super().run()
        finally:
            sweeper.kill(block=False)
            self.front.partial.report()

    @property
    def front(self) -> Front:
        front: Front = self.app.front
        return front

    def timeout_ctx(self) -> Any:
        return _HeadDeadline(self.front)

    def handle(self, listener: Any, client: socket.socket, addr: Any) -> None:
        partial = self.front.partial
        partial.waiting(client, _address(addr))
        try:
            super().handle(listener, client, addr)
        finally:
            partial.done(client)

    def handle_request(self, listener_name: Any, req: Any, sock: socket.socket, addr: Any) -> Any:
        try:
            return super().handle_request(listener_name, req, sock, addr)
        finally:  # kept alive: it waits for its next request
            self.front.partial.waiting(sock, _address(addr))

    def _sweep_and_report(self) -> None:
        partial = self.front.partial
        while True:
            for _ in range(4):
                gevent.sleep(0.25)
                partial.sweep()
            partial.report()


def _address(addr: Any) -> str:
    """The client address of a peer name: the host of an IP one (a UNIX socket has no other)."""
    return str(addr[0]) if isinstance(addr, tuple) else str(addr)


class _HeadDeadline:
    """gunicorn reads each request head inside this: past ``header_timeout_s`` it gives up quietly
    (gunicorn then closes the connection), and the drop is counted."""

    def __init__(self, front: Front) -> None:
        self._front = front
        self._timeout = gevent.Timeout(front.header_timeout_s)

    def __enter__(self) -> None:
        self._timeout.start()

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> bool:
        self._timeout.close()
        if value is self._timeout:
            self._front.partial.timed_out += 1
            return True
        return False
