"""Live updates across processes: Socket.IO through Redis, and commands sent to a project's owner.

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
process (a PUBLISH on its channel, ``sentient:owner:<owner token>``), which serves it exactly as it
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

**Commands.** The owner's channel carries the few requests that only the process running a project
can act on, made on whichever process a client reached: ``join`` (above), ``cancel`` (stop the
run) and ``review_answered`` (wake the run waiting on a plan review whose answer was just stored).
The process that forwards one announces nothing of it: the holder does (``project_completed``,
``hitl_resolved``), since what a process emits reaches its own clients at once, ahead of the
holder's messages still on their way to it.
Web processes and ``sentient worker`` processes listen alike: the holder of a project may be either.
A command published while nobody listens on the channel (the owner is gone) reports it, so the
sender can answer from the store instead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

import redis
from loguru import logger
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from sentient.exceptions import ConfigError

CHANNEL_PREFIX = "sentient:owner:"


class _Command(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    project_id: str


class Join(_Command):
    """Put the client ``sid`` (of any web process) in the project's room and send it the snapshot."""

    command: Literal["join"] = "join"
    sid: str


class Cancel(_Command):
    """Stop the project's run; it ends ``cancelled``."""

    command: Literal["cancel"] = "cancel"


class Delete(_Command):
    """Stop the project's run, wait for it to end, and delete the project."""

    command: Literal["delete"] = "delete"


class ReviewAnswered(_Command):
    """The answer of the project's review ``review_id`` is stored: wake the run waiting on it."""

    command: Literal["review_answered"] = "review_answered"
    review_id: str


Command = Annotated[Join | Cancel | Delete | ReviewAnswered, Field(discriminator="command")]
_COMMAND: TypeAdapter[Join | Cancel | Delete | ReviewAnswered] = TypeAdapter(Command)

CommandHandler = Callable[[Join | Cancel | Delete | ReviewAnswered], None]
"""Serves a command forwarded to this process."""


def channel_of(owner_token: str) -> str:
    """The Redis channel on which the process claiming projects as ``owner_token`` takes commands."""
    return CHANNEL_PREFIX + owner_token


class OwnerRelay:
    """Forwards commands to the process that runs a project, and serves those forwarded here.

    Args:
        redis_url: the Redis that every process shares (``SENTIENT_REDIS_URL``).
        owner_token: this process's store owner token (``ProjectStore.owner.token``): the
            projects it claims name it, so other processes know where to forward their commands.
    """

    def __init__(self, redis_url: str, owner_token: str) -> None:
        self.channel = channel_of(owner_token)
        self._client: Any = redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5)
        self._pubsub: Any = self._client.pubsub()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, handler: CommandHandler, timeout_s: float = 5.0) -> None:
        """Subscribe to this process's channel, wait until Redis confirms it, then serve commands on a thread."""
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
        self._thread = threading.Thread(target=self._main, args=(handler,), name="sentient-owner-relay", daemon=True)
        self._thread.start()

    def _subscribed(self) -> bool:
        message = self._pubsub.get_message(timeout=0.5)
        return bool(message and message.get("type") == "subscribe")

    def forward(self, owner_token: str, command: Join | Cancel | Delete | ReviewAnswered) -> bool:
        """Send ``command`` to the process ``owner_token``; False when no process listens there."""
        try:
            receivers = self._client.publish(channel_of(owner_token), command.model_dump_json())
        except redis.RedisError as exc:
            logger.warning("project {}: cannot forward {} to its owner: {}", command.project_id, command.command, exc)
            return False
        return int(receivers) > 0

    def _main(self, handler: CommandHandler) -> None:
        while not self._stopping.is_set():
            try:
                message = self._pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
            except redis.RedisError as exc:  # the connection resubscribes on the next read
                logger.warning("owner relay: Redis failed: {}", exc)
                self._stopping.wait(1.0)
                continue
            if not message or message.get("type") != "message":
                continue
            try:
                command = _COMMAND.validate_json(message["data"])
            except (ValidationError, KeyError, TypeError):
                logger.warning("owner relay: ignored a malformed command on {}", self.channel)
                continue
            try:
                handler(command)
            except Exception:  # a bug: log it, and keep serving the other commands
                logger.opt(exception=True).error(
                    "owner relay: project {}: {} failed", command.project_id, command.command
                )

    def close(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(5)
        self._pubsub.close()
        self._client.close()
