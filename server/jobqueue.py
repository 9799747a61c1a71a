"""The job queue between web processes and ``sentient worker`` processes: arq on Redis.

With ``SENTIENT_QUEUE_URL`` set, a web process runs no project itself: executing or resuming one
stores what is to be done (the project, reset or not, stays in the shared store) and enqueues one
``run_project`` job naming it. A worker takes the job and runs the project under its lease
(:mod:`sentient_server.queue_worker`).

A job says only *which* project to move forward, never how: the worker reads the project's state
when it takes the job and executes it (never started), resumes it (stopped or interrupted) or
drops the job (completed, or held by another live process). The store's claim, not the queue,
is what lets one worker at a time run a project, so a job delivered twice (arq re-delivers a job
whose worker died, once its in-progress mark expires) or a project queued twice runs it once.

Queued and not yet taken, a project can still be cancelled: queueing also marks it in the Redis
hash ``sentient:queued``, and whoever removes the mark first wins. A worker removes it as it takes
a job (a job that finds no mark drops: the project was cancelled, or another job of it was taken
already); a cancel removes it and stores the project ``cancelled``, so no worker runs it later.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any, cast

from arq.connections import ArqRedis, RedisSettings, create_pool
from redis.exceptions import RedisError

from sentient.exceptions import ConfigError, SentientError

QUEUE_ENV = "SENTIENT_QUEUE_URL"
QUEUE_NAME = "sentient:projects"
RUN_PROJECT = "run_project"
QUEUED = "sentient:queued"  # project id -> when it was last queued (a hash)
# A job waits this long for a worker (arq's default is a day, after which the project would stay
# queued for good with nobody to run it).
WAITS_S = 30 * 24 * 3600


class QueueUnavailableError(SentientError):
    """The job queue did not take a job (Redis is unreachable): the server answers 503."""


def queue_settings(url: str) -> RedisSettings:
    """arq's connection settings for ``SENTIENT_QUEUE_URL``; ConfigError naming it when malformed."""
    try:
        settings = RedisSettings.from_dsn(url)
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(
            f"'{url.split('@')[-1]}' is not a Redis URL ({exc}).",
            field=QUEUE_ENV,
            fix="use redis://HOST:6379/0 (or rediss:// for TLS).",
        ) from exc
    settings.conn_retries = 0  # an unreachable queue is reported at once, not after five seconds
    return settings


async def open_pool(url: str) -> ArqRedis:
    """A connection pool to the queue at ``url``; ConfigError naming ``SENTIENT_QUEUE_URL`` when Redis does not answer."""
    try:
        return await create_pool(queue_settings(url), default_queue_name=QUEUE_NAME)
    except (OSError, RedisError, TimeoutError) as exc:
        raise ConfigError(
            f"the job queue at {url.split('@')[-1]} does not answer: {exc}",
            field=QUEUE_ENV,
            fix="start Redis there, or unset the variable to run projects in this process.",
        ) from exc


class ProjectQueue:
    """Enqueues ``run_project`` jobs on the shared arq queue (web processes, and the workers' sweep)."""

    def __init__(self, pool: ArqRedis) -> None:
        self._pool = pool

    @classmethod
    async def connect(cls, url: str) -> ProjectQueue:
        return cls(await open_pool(url))

    async def submit(self, project_id: str, *, job_id: str | None = None) -> bool:
        """Queue a job that moves ``project_id`` forward; False when the job ``job_id`` is queued already.

        QueueUnavailableError when Redis does not take it.
        """
        async with _answering(f"project '{project_id}' could not be queued"):
            # The mark first: a worker that takes the job at once must find it.
            await cast("Awaitable[int]", self._pool.hset(QUEUED, project_id, str(time.time())))
            job: Any = await self._pool.enqueue_job(
                RUN_PROJECT, project_id, marked=True, _job_id=job_id, _expires=WAITS_S
            )
        return job is not None

    async def take(self, project_id: str) -> bool:
        """Remove the project's queued mark: True when it was there, so that this caller, and no
        one else, decides what becomes of the queued project (a worker taking its job runs it; a
        cancel stores it cancelled). QueueUnavailableError when Redis does not answer."""
        async with _answering(f"project '{project_id}' could not be taken from the queue"):
            return bool(await cast("Awaitable[int]", self._pool.hdel(QUEUED, project_id)))

    async def close(self) -> None:
        await self._pool.close(close_connection_pool=True)


@contextlib.asynccontextmanager
async def _answering(failure: str) -> AsyncIterator[None]:
    """Bound a queue operation to 5 s; Redis errors and timeouts become QueueUnavailableError."""
    try:
        async with asyncio.timeout(5):
            yield
    except (OSError, RedisError, TimeoutError) as exc:
        raise QueueUnavailableError(f"{failure}: the job queue does not answer ({exc}).") from exc
