"""The one bridge between Flask's threads and the engine's asyncio loop.

The engine runs on a single event loop in a background thread. Request handlers and Socket.IO
handlers (ordinary threads) reach it only through :class:`EngineLoop`: ``submit`` schedules a
coroutine and returns a :class:`concurrent.futures.Future`, ``call`` runs a plain function on
the loop thread (to read engine state consistently) and waits for its result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from loguru import logger

T = TypeVar("T")


class EngineLoop:
    """An asyncio event loop running forever in a daemon thread."""

    def __init__(self, name: str = "sentient-engine") -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._ready.set)
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._loop.is_closed()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; the future resolves with its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the loop thread, without waiting."""
        self._loop.call_soon_threadsafe(fn, *args)

    def call(self, fn: Callable[[], T], timeout: float = 10.0) -> T:
        """Run ``fn()`` on the loop thread and return its result (or raise its exception)."""
        if self.in_loop_thread():
            return fn()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return future.result(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Cancel whatever still runs on the loop, then stop it and join the thread."""
        if not self.running:
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self.submit(cancel_all()).result(timeout)
        except (concurrent.futures.TimeoutError, RuntimeError):
            logger.warning("engine loop: tasks did not finish within {}s of cancellation", timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
