"""Live updates across web processes: Socket.IO through Redis, and joins sent to a project's owner.

With ``SENTIENT_REDIS_URL`` set, the Socket.IO server uses Flask-SocketIO's Redis message queue:
every emit and every room change of a client on another process is published on Redis, and each
process's queue listener (one thread) hands what it reads to its own clients. A client connected
to any web process is thus in its project's room wherever the project runs.

**Order.** One project's diffs, its announcements and the snapshots of clients joining it are all
made by one process, the project's lease holder, on its one
:class:`~sentient_server.events.Broadcaster` thread, one after another. Each PUBLISH is answered
before the next is sent, Redis hands a channel's messages to every subscriber in the order it ran
them, and a process's listener delivers them in that order: a client anywhere gets the holder's
messages in the order the holder sent them.

**Snapshot then diffs.** The snapshot must say which diffs it already holds. Only the holder
knows: it takes the snapshot on its engine loop and queues the client's room entry and the
snapshot behind the diffs already flushed (:meth:`~sentient_server.runs.RunManager.join`). So a
process whose client joins a project that another live process runs forwards the join to that
process (a PUBLISH on its channel, ``sentient:join:<owner token>``), which serves it exactly as it
serves its own clients; the room entry and the snapshot then reach the client through the same
ordered queue as the diffs. The protocol (``project_snapshot``, then ``node_update`` diffs, none
missing, none repeated) is the single-process one, so clients do not change.

Reading the snapshot from the shared store on the joining process instead would need the store
to say which diff it reflects: the store writer and the feed batch the same events apart, so a
stored graph may lag or lead the diffs already sent, and numbering the diffs would not help
without tying the two together.

A project that no live process serves this way (not running, run by the CLI, or by a process
gone with its lease) is joined on the client's own process from the store, as before; a run that
another process starts meanwhile is caught by a second look at the store after the snapshot is
sent (see ``RunManager._send_snapshot``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from loguru import logger

from sentient.exceptions import ConfigError

CHANNEL_PREFIX = "sentient:join:"

JoinHandler = Callable[[str, str], None]
"""Serves a forwarded join: ``handler(sid, project_id)``."""


def channel_of(owner_token: str) -> str:
    """The Redis channel on which the process claiming projects as ``owner_token`` takes joins."""
    return CHANNEL_PREFIX + owner_token


class JoinRelay:
    """Forwards joins to the process that runs the project, and serves those forwarded here.

    Args:
        redis_url: the Redis that every web process shares (``SENTIENT_REDIS_URL``).
        owner_token: this process's store owner token (``ProjectStore.owner.token``): the
            projects it claims name it, so other processes know where to forward their joins.
    """

    def __init__(self, redis_url: str, owner_token: str) -> None:
        self.channel = channel_of(owner_token)
        self._client: Any = redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5)
        self._pubsub: Any = self._client.pubsub()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, handler: JoinHandler, timeout_s: float = 5.0) -> None:
        """Subscribe to this process's channel, wait until Redis confirms it, then serve joins on a thread."""
        try:
            self._pubsub.subscribe(self.channel)
            deadline = time.monotonic() + timeout_s
            while not self._subscribed():
                if time.monotonic() > deadline:
                    raise ConfigError(f"Redis did not confirm the subscription to {self.channel}.")
        except redis.RedisError as exc:
            raise ConfigError(
                f"cannot subscribe to Redis for live updates: {exc}",
                field="SENTIENT_REDIS_URL",
                fix="check that Redis answers at that URL.",
            ) from exc
        self._thread = threading.Thread(target=self._main, args=(handler,), name="sentient-join-relay", daemon=True)
        self._thread.start()

    def _subscribed(self) -> bool:
        message = self._pubsub.get_message(timeout=0.5)
        return bool(message and message.get("type") == "subscribe")

    def forward(self, owner_token: str, sid: str, project_id: str) -> bool:
        """Ask the process ``owner_token`` to serve ``sid``'s join; False when no process listens there."""
        request = json.dumps({"sid": sid, "project_id": project_id})
        try:
            receivers = self._client.publish(channel_of(owner_token), request)
        except redis.RedisError as exc:
            logger.warning("project {}: cannot forward a join to its owner: {}", project_id, exc)
            return False
        return int(receivers) > 0

    def _main(self, handler: JoinHandler) -> None:
        while not self._stopping.is_set():
            try:
                message = self._pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
            except redis.RedisError as exc:  # the connection resubscribes on the next read
                logger.warning("join relay: Redis failed: {}", exc)
                self._stopping.wait(1.0)
                continue
            if not message or message.get("type") != "message":
                continue
            try:
                request = json.loads(message["data"])
                sid, project_id = request["sid"], request["project_id"]
            except (ValueError, KeyError, TypeError):
                logger.warning("join relay: ignored a malformed request on {}", self.channel)
                continue
            if not (isinstance(sid, str) and isinstance(project_id, str)):
                continue
            try:
                handler(sid, project_id)
            except Exception:  # a bug: log it, and keep serving the other joins
                logger.opt(exception=True).error("join relay: project {}: the join failed", project_id)

    def close(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(5)
        self._pubsub.close()
        self._client.close()
