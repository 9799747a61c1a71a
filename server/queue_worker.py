"""``sentient worker``: runs the projects that web processes queue (arq on ``SENTIENT_QUEUE_URL``).

A worker is the engine side of a web process (:class:`~sentient_server.core.Core`) without Flask:
the same run manager runs each project under its lease in the shared store, and the same
broadcaster sends its diffs, announcements and the snapshots of joining clients, here through a
write-only Socket.IO server on the Redis message queue (Flask-SocketIO's "emit from an external
process"), so a client of any web process follows the project. Cancels and review answers made on
a web process reach the worker through the owner relay, like joins.

arq's worker runs on the engine loop, so a job is a coroutine beside the runs it starts:

- ``run_project(project_id)`` takes the project (:meth:`~sentient_server.runs.RunManager.take`)
  and waits for its run to end. A project this worker cannot take (completed, or another live
  process holds it) ends the job at once.
- ``sweep_leases``, which one worker runs at each tick (every half lease: the worker that takes the
  tick's lock in Redis), queues a resume of every project marked running whose holder is gone: its
  lease expired, or its process
  on this machine died. That is how a worker killed with SIGKILL loses nothing: arq would
  re-deliver its job only once the job's timeout has passed (its in-progress mark is not renewed),
  and a run may rightly last longer than any timeout, whereas the store's lease is renewed while
  the run lives. The resumed run keeps every finished node.

SIGTERM (or Ctrl-C): the worker stops taking jobs, stops its runs as a server shutting down does
(in-flight nodes are cancelled, the project is stored ``interrupted`` and its lease released), and
each job queues a new one for its project before it ends, for another worker to resume it.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from typing import Any

from arq.connections import ArqRedis
from arq.worker import Worker, func
from flask_socketio import SocketIO
from loguru import logger
from redis.exceptions import RedisError

from sentient.exceptions import ConfigError

from .config import ServerSettings
from .core import Core
from .jobqueue import QUEUE_ENV, QUEUE_NAME, RUN_PROJECT, ProjectQueue, QueueUnavailableError, open_pool
from .runs import RunManager, ShuttingDownError

# arq cancels a job past its timeout: far above any run's length, since a worker that died is
# found through its project's lease, not through this timeout.
JOB_TIMEOUT_S = 7 * 24 * 3600.0
SWEEP_LOCK = "sentient:lease-sweep"  # held for most of a tick by the worker that sweeps in it


async def run_project(ctx: dict[str, Any], project_id: str, marked: bool = False) -> str:
    """Run the project here until its run ends; hand it back to the queue when the worker stops.

    ``marked``: the project was marked queued with the job (every job but those queued by a web
    process older than the mark); a job whose mark is gone drops (see :mod:`.jobqueue`).
    """
    runs: RunManager = ctx["runs"]
    if marked and not await ProjectQueue(ctx["redis"]).take(project_id):
        logger.info("worker: project {}: not run: cancelled while queued, or taken with another job", project_id)
        return "withdrawn"
    try:
        run = await asyncio.to_thread(runs.take, project_id)
    except ShuttingDownError:  # taken as the worker began to stop
        return await _hand_back(ctx, project_id)
    if run is None:
        return "nothing to run"
    logger.info("worker: project {}: running", project_id)
    await asyncio.shield(asyncio.wrap_future(run.ended))
    if run.stopping == "shutdown":  # stored interrupted: another worker resumes it
        return await _hand_back(ctx, project_id)
    return "ended"


async def _hand_back(ctx: dict[str, Any], project_id: str) -> str:
    """Queue a new job for the project. A new one, not arq's ``Retry`` of this one: a job's data
    expires a day after it was queued, and a run may have lasted longer."""
    await ProjectQueue(ctx["redis"]).submit(project_id)
    return "handed back"


async def sweep_leases(runs: RunManager, queue: ProjectQueue) -> int:
    """Queue a resume of every project whose holder is gone; returns how many."""
    stale = await asyncio.to_thread(runs.store.stale_running)
    for record in stale:
        # One job per lost lease: a sweep that finds the project again before a worker took it adds none.
        await queue.submit(record.project_id, job_id=f"resume:{record.project_id}:{record.lease_expires_at}")
    if stale:
        logger.info("worker: queued {} project(s) whose holder is gone", len(stale))
    return len(stale)


async def _sweep_every(runs: RunManager, pool: ArqRedis, every_s: float) -> None:
    """Sweep at each tick that this worker wins. Not an arq cron job: that would take one of the
    ``--jobs`` slots (arq counts cron runs among its jobs), so a worker would run a project fewer
    than asked while sweeping, or one more than asked otherwise."""
    queue = ProjectQueue(pool)
    while True:
        await asyncio.sleep(every_s)
        try:
            if await pool.set(SWEEP_LOCK, "1", nx=True, px=max(1, int(every_s * 900))):
                await sweep_leases(runs, queue)
        except (OSError, RedisError, QueueUnavailableError) as exc:
            logger.warning("worker: lease sweep skipped this time: {}", exc)


def work(config: ServerSettings, *, jobs: int = 10) -> int:
    """Take queued projects until SIGTERM or SIGINT, then hand the running ones back. Returns an exit code."""
    settings = config.sentient
    if not settings.queue_url:
        raise ConfigError(
            "a worker takes its projects from a job queue, and none is set.",
            field=QUEUE_ENV,
            fix="set it to the redis://… URL that `sentient serve` queues projects on.",
        )
    # Write-only: it publishes on the message queue, and the web processes deliver to their clients.
    socketio = SocketIO(message_queue=settings.redis_url, async_mode="threading")  # emits only, from threads
    core = Core.open(config, socketio.server)
    stop = threading.Event()
    try:
        pool = core.engine.submit(open_pool(settings.queue_url)).result()
        worker = core.engine.call(lambda: _arq_worker(core.runs, pool, jobs))
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        running = core.engine.submit(worker.async_run())
        sweeping = core.engine.submit(_sweep_every(core.runs, pool, max(1.0, min(30.0, settings.lease_s / 2))))
        logger.info("worker ready: taking up to {} projects at a time", jobs)
        while not stop.wait(0.2) and not running.done():
            pass
        if running.done():
            running.result()  # arq stopped on its own: its error ends the worker
        logger.info("worker: stopping; handing back {} running project(s)", core.runs.running_count)
        sweeping.cancel()
        core.engine.call(lambda: setattr(worker, "allow_pick_jobs", False))
        core.runs.shutdown()
        core.engine.submit(_drain(worker)).result(timeout=30)
        core.engine.submit(worker.close()).result(timeout=10)
    finally:
        core.close()
    return 0


def _arq_worker(runs: RunManager, pool: Any, jobs: int) -> Worker:
    """arq's worker, built on the engine loop (it binds to the loop it is created on)."""
    return Worker(
        functions=[func(run_project, name=RUN_PROJECT, timeout=JOB_TIMEOUT_S)],
        redis_pool=pool,
        queue_name=QUEUE_NAME,
        ctx={"runs": runs},
        max_jobs=jobs,
        poll_delay=0.1,
        keep_result=0,  # the project's outcome is in the store
        handle_signals=False,  # the main thread handles them
    )


async def _drain(worker: Worker) -> None:
    """Wait for the jobs under way to end (handed back ones are then queued again)."""
    await asyncio.gather(*worker.tasks.values(), return_exceptions=True)
