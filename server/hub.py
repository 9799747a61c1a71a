"""Where the live connections are served, and how the server's threads reach them.

In production (:mod:`sentient_server.serve`) every connection, whether idle, half-sent or slow to
read, is a greenlet on one gevent hub (the worker's main thread), not an OS thread. Nothing is
monkey-patched: the engine loop, the store writers, the owner relay, the broadcaster and model
calls stay real threads, and blocking calls stay blocking. Two rules keep the hub responsive and
python-socketio's objects consistent:

- Blocking work (the store, the engine bridge, files) never runs on the hub. A greenlet hands
  it to a native thread pool with :meth:`GeventHub.offload` and waits without blocking the hub.
- python-socketio's sessions, rooms and queues belong to the hub. Another thread reaches them
  with :meth:`GeventHub.post`, which runs a call on the hub, in the order the calls were posted.

Werkzeug's threaded server (the tests' live servers) and a ``sentient worker`` serve Socket.IO
with threads: :class:`Inline` runs both kinds of call where they are made.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from loguru import logger

T = TypeVar("T")


class Hub(Protocol):
    """How code reaches the thread pool and the connections' side (see the module docstring)."""

    def offload(self, fn: Callable[..., T], *args: Any) -> T: ...

    def post(self, fn: Callable[..., Any], *args: Any) -> None: ...

    def wait(self, event: threading.Event, timeout: float) -> bool: ...

    def close(self) -> None: ...


class Inline:
    """Socket.IO served by threads: every caller already is a thread of its own."""

    def offload(self, fn: Callable[..., T], *args: Any) -> T:
        return fn(*args)

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        fn(*args)

    def wait(self, event: threading.Event, timeout: float) -> bool:
        return event.wait(timeout)

    def close(self) -> None:
        pass


class GeventHub:
    """The gevent hub of the thread that builds it, with a pool of ``threads`` native threads.

    Build it on the thread that will run the hub (gunicorn's worker builds the app there).
    """

    def __init__(self, threads: int) -> None:
        import gevent
        import gevent.queue
        import gevent.threadpool

        self._gevent = gevent
        self._hub = gevent.get_hub()
        self._thread_ident = threading.get_ident()
        self._pool = gevent.threadpool.ThreadPool(threads)
        self._jobs: Any = gevent.queue.SimpleQueue()
        self._runner = gevent.spawn(self._run)
        self._closed = False

    def offload(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on a pool thread; the calling greenlet waits, the hub does not."""
        return self._pool.apply(fn, args)

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the hub, after every call posted before it (from any thread)."""
        self._hub.loop.run_callback_threadsafe(self._jobs.put, (fn, args))

    def wait(self, event: threading.Event, timeout: float) -> bool:
        """Wait for ``event``; on the hub's own thread, let the hub run meanwhile."""
        if threading.get_ident() != self._thread_ident:
            return event.wait(timeout)
        deadline = time.monotonic() + timeout
        while not event.is_set() and time.monotonic() < deadline:
            self._gevent.sleep(0.005)
        return event.is_set()

    def _run(self) -> None:
        while True:
            fn, args = self._jobs.get()
            if fn is _STOP:
                return
            try:
                fn(*args)
            except Exception:
                logger.opt(exception=True).error("a call posted to the hub failed")

    def close(self) -> None:
        """Stop running posted calls (after those posted so far) and the pool's threads."""
        if not self._closed:
            self._closed = True
            self.post(_STOP)
            self._pool.kill()


def _stop() -> None:
    """Posted last: the hub's runner ends on it."""


_STOP = _stop
