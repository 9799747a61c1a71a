"""From engine events to Socket.IO messages, per project room.

Two pieces keep the engine's loop quick and the clients consistent:

- :class:`Broadcaster` owns one thread that makes every Socket.IO emit and room change, in the
  order they were queued. The engine loop only enqueues; a slow client never slows a run. The
  calls themselves run where the connections live (:mod:`sentient_server.hub`): on this thread
  with a threaded server, posted to the gevent hub in production, in the same order.
- :class:`ProjectFeed` is a run's event subscriber. It keeps its own copy of the graph, built
  from the events alone (:class:`sentient.replica.GraphReplica`), notes which nodes changed and,
  at most ``interval`` seconds after the first change, sends just those nodes in one
  ``node_update``. Bytes per update depend on the nodes that changed, never on the size of the
  graph.

A client joining a running project gets its snapshot through the same queue, taken on the
loop thread, so it sees the snapshot first and then every later diff, none missing. Across web
processes (Redis message queue) the process running the project does the same for clients of
the others: see :mod:`sentient_server.relay`.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any

from loguru import logger
from pydantic import BaseModel

from sentient.events import AgentCallFinished, Event, NodeCreated, NodesRemoved, NodeStatusChanged
from sentient.replica import GraphReplica

from .hub import Hub, Inline
from .responses import Graph, NodeUpdate


def room_of(project_id: str) -> str:
    return f"project:{project_id}"


class SocketOps:
    """The python-socketio calls the broadcaster makes, run where the connections live.

    Args:
        server: the python-socketio ``Server`` (``SocketIO.server``).
        hub: where its sessions live (:class:`~sentient_server.hub.GeventHub` in production).
    """

    def __init__(self, server: Any, hub: Hub) -> None:
        self._server = server
        self._hub = hub

    def emit(self, event: str, data: Any, to: str, namespace: str = "/") -> None:
        self._hub.post(lambda: self._server.emit(event, data, to=to, namespace=namespace))

    def enter_room(self, sid: str, room: str, namespace: str = "/") -> None:
        self._hub.post(self._server.enter_room, sid, room, namespace)

    def leave_room(self, sid: str, room: str, namespace: str = "/") -> None:
        self._hub.post(self._server.leave_room, sid, room, namespace)


class Broadcaster:
    """Runs Socket.IO operations on one thread, first in, first out.

    Args:
        server: the python-socketio ``Server`` (``SocketIO.server``).
        hub: where its sessions live; by default the broadcast thread calls it directly.
    """

    def __init__(self, server: Any, hub: Hub | None = None) -> None:
        self._hub = hub or Inline()
        self._server = SocketOps(server, self._hub)
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._main, name="sentient-broadcast", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                job()
            except Exception:
                logger.opt(exception=True).error("broadcast job failed")

    @property
    def server(self) -> SocketOps:
        """Emits and room changes for jobs running on the broadcast thread (in their order)."""
        return self._server

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` on the broadcast thread after everything queued before it."""
        self._queue.put(job)

    def emit(self, event: str, payload: BaseModel, to: str) -> None:
        """Send ``event`` to a room or a client id; ``payload`` is turned into JSON on the broadcast thread."""
        self._queue.put(lambda: self._server.emit(event, payload.model_dump(mode="json"), to=to))

    def enter_room(self, sid: str, room: str) -> None:
        self._queue.put(lambda: self._server.enter_room(sid, room))

    def leave_room(self, sid: str, room: str) -> None:
        self._queue.put(lambda: self._server.leave_room(sid, room))

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far has been sent."""
        done = threading.Event()
        self._queue.put(lambda: self._hub.post(done.set))
        return self._hub.wait(done, timeout)

    def stop(self, timeout: float = 5.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout)


class ProjectFeed:
    """A run's subscriber: batches changed nodes into ``node_update`` diffs for the project's room.

    Create it on the engine loop (it schedules its flushes there) and subscribe it before the
    run starts: it reads nothing but the run's events.
    """

    def __init__(self, project_id: str, broadcaster: Broadcaster, interval_s: float = 0.1) -> None:
        self.project_id = project_id
        self.room = room_of(project_id)
        self.graph = GraphReplica()
        self._broadcaster = broadcaster
        self._interval = interval_s
        self._loop = asyncio.get_running_loop()
        self._dirty: dict[str, None] = {}  # an ordered set: creation order is kept in a diff
        self._removed: dict[str, None] = {}
        self._timer: asyncio.TimerHandle | None = None
        self.updates_sent = 0

    def __call__(self, event: Event) -> None:
        self.graph(event)
        if isinstance(event, NodeCreated | NodeStatusChanged | AgentCallFinished):
            self._removed.pop(event.task_id, None)
            self._dirty[event.task_id] = None
        elif isinstance(event, NodesRemoved):
            for task_id in event.task_ids:
                self._dirty.pop(task_id, None)
                self._removed[task_id] = None
        else:
            return
        if self._timer is None:
            self._timer = self._loop.call_later(self._interval, self.flush)

    def flush(self) -> None:
        """Send what changed since the last flush (on the loop thread)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        graph = self.graph
        if not (self._dirty or self._removed):
            return
        nodes = [graph.snapshot(task_id).to_node() for task_id in self._dirty if task_id in graph]
        removed = [task_id for task_id in self._removed if task_id not in graph]
        self._dirty.clear()
        self._removed.clear()
        if nodes or removed:
            self.updates_sent += 1
            update = NodeUpdate(project_id=self.project_id, nodes=nodes, removed=removed)
            self._broadcaster.emit("node_update", update, self.room)

    def snapshot(self) -> Graph | None:
        """The graph (on the loop thread), or None before the run started."""
        return Graph.of(node.to_node() for node in self.graph.snapshots()) if self.graph.started else None

    def close(self) -> None:
        self.flush()
