"""What runs projects and serves their rooms, wired once for a web process and for a worker alike.

A web process (:func:`sentient_server.create_app`) puts Flask and Socket.IO's server in front of
it; a ``sentient worker`` (:mod:`sentient_server.queue_worker`) puts an arq worker in front of
it and publishes through a write-only Socket.IO server on the Redis message queue. Behind both are
the same store, project service, engine loop, broadcaster, review broker, owner relay and run
manager, so a project's diffs, announcements, snapshots and review wake-ups are made by one code
path wherever it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self

from loguru import logger

from sentient.agents.models.gates import ProviderGates
from sentient.exceptions import ConfigError
from sentient.projects import ProjectService
from sentient.store import ProjectStore

from .bridge import EngineLoop
from .config import ServerSettings
from .events import Broadcaster
from .hub import Hub, Inline
from .jobqueue import QUEUE_ENV, ProjectQueue
from .relay import OwnerRelay
from .reviews import ReviewBroker
from .runs import RunManager


@dataclass
class Core:
    """The engine side of a process. ``queue`` is set in a web process that queues its projects;
    ``hub`` is where its Socket.IO connections live (:mod:`sentient_server.hub`)."""

    config: ServerSettings
    store: ProjectStore
    engine: EngineLoop
    broadcaster: Broadcaster
    reviews: ReviewBroker
    runs: RunManager
    relay: OwnerRelay | None
    queue: ProjectQueue | None
    hub: Hub = field(default_factory=Inline, kw_only=True)
    closed: bool = field(default=False, init=False)

    @classmethod
    def open(
        cls,
        config: ServerSettings,
        socket_server: Any,
        *,
        store: ProjectStore | None = None,
        queue_projects: bool = False,
        hub: Hub | None = None,
        **extra: Any,
    ) -> Self:
        """Wire the parts; ``socket_server`` is the python-socketio server the broadcaster emits on,
        and ``hub`` where its connections live (:mod:`sentient_server.hub`; threads by default).

        With ``queue_projects`` (a web process given ``SENTIENT_QUEUE_URL``), starting a project
        queues it for the workers. ``extra`` are the fields of a subclass. ConfigError (naming the
        variable) when a shared service does not answer.
        """
        settings = config.sentient
        if settings.queue_url and not settings.redis_url:
            raise ConfigError(
                f"{QUEUE_ENV} is set but SENTIENT_REDIS_URL is not: the processes that run queued projects"
                " send their live updates, and take cancels and review answers, through it.",
                field="SENTIENT_REDIS_URL",
                fix="set it too (it may be the same Redis).",
            )
        gates = ProviderGates.from_settings(settings)
        gates.check()  # SENTIENT_REDIS_URL set and Redis not answering: refuse now, naming it
        store = store or ProjectStore.open(settings.results_dir, settings.database_url, lease_s=settings.lease_s)
        engine = EngineLoop()
        hub = hub or Inline()
        broadcaster = Broadcaster(socket_server, hub)
        queue: ProjectQueue | None = None
        relay: OwnerRelay | None = None
        try:
            if queue_projects and settings.queue_url:
                queue = engine.submit(ProjectQueue.connect(settings.queue_url)).result()
            relay = OwnerRelay(settings.redis_url, store.owner.token) if settings.redis_url else None
            service = ProjectService(store, settings, gates=gates)
            reviews = ReviewBroker(service, engine, broadcaster, relay)
            runs = RunManager(config, service, engine, broadcaster, reviews, relay, queue)
            if relay is not None:
                relay.start(runs.serve_forwarded)
        except BaseException:
            if relay is not None:
                relay.close()
            if queue is not None:
                engine.submit(queue.close()).result(timeout=5)
            engine.stop()
            broadcaster.stop()
            store.close()
            raise
        return cls(config, store, engine, broadcaster, reviews, runs, relay, queue, hub=hub, **extra)

    def close(self) -> None:
        """Stop the runs (they resume at the next start, or on another worker), then the threads and the store."""
        if self.closed:
            return
        self.closed = True
        if self.relay is not None:
            self.relay.close()
        self.runs.shutdown()
        closing = [self.runs.service.gates.aclose()]  # the engine loop's Redis connections, if any
        if self.queue is not None:
            closing.append(self.queue.close())
        for coroutine in closing:
            try:
                self.engine.submit(coroutine).result(timeout=5)
            except Exception as exc:
                logger.warning("closing a connection to Redis failed: {}", exc)
        self.broadcaster.flush()
        self.engine.stop()
        self.broadcaster.stop()
        self.hub.close()
        self.store.close()
