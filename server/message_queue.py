"""Socket.IO's Redis message queue, wherever the connections live (:mod:`sentient_server.hub`).

With ``SENTIENT_REDIS_URL`` every emit and room change goes through Redis (see
:mod:`sentient_server.relay`). python-socketio's ``RedisManager`` reads the queue on one of its
background tasks; under gevent it demands a monkey-patched ``socket`` module, which this server
does not use, and its blocking read would stall the hub. So on the hub the queue is read by a
thread of its own, and what it reads (emits, room changes, disconnects) is applied on the hub, in
the order it arrived. Publishing from the hub is one short Redis round trip.
"""

from __future__ import annotations

import threading
from typing import Any

import socketio

from .hub import Hub, Inline

CHANNEL = "flask-socketio"  # Flask-SocketIO's default, on which a `sentient worker` publishes


def message_queue(url: str, hub: Hub) -> socketio.RedisManager:
    """The client manager of a web process on the Redis at ``url``."""
    if isinstance(hub, Inline):
        return socketio.RedisManager(url, channel=CHANNEL)
    return HubRedisManager(url, hub)


class HubRedisManager(socketio.RedisManager):
    """A ``RedisManager`` whose listener is a thread and whose deliveries run on the hub."""

    def __init__(self, url: str, hub: Hub) -> None:
        super().__init__(url, channel=CHANNEL)
        self._hub = hub

    def initialize(self) -> None:
        # Not RedisManager's (the monkey-patch check) nor PubSubManager's (a task on the hub).
        socketio.Manager.initialize(self)
        self.thread = threading.Thread(target=self._thread, name="sentient-socketio-queue", daemon=True)
        self.thread.start()

    def _handle_emit(self, message: Any) -> None:
        self._hub.post(super()._handle_emit, message)

    def _handle_callback(self, message: Any) -> None:
        self._hub.post(super()._handle_callback, message)

    def _handle_disconnect(self, message: Any) -> None:
        self._hub.post(super()._handle_disconnect, message)

    def _handle_enter_room(self, message: Any) -> None:
        self._hub.post(super()._handle_enter_room, message)

    def _handle_leave_room(self, message: Any) -> None:
        self._hub.post(super()._handle_leave_room, message)

    def _handle_close_room(self, message: Any) -> None:
        self._hub.post(super()._handle_close_room, message)
