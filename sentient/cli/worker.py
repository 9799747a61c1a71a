"""``sentient worker``: run the projects that ``sentient serve`` queues (``SENTIENT_QUEUE_URL``).

The server package (Flask-SocketIO, arq) is imported only when this command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from sentient.settings import Settings


def add_worker_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``worker`` command to the CLI's subparsers."""
    worker = subparsers.add_parser(
        "worker",
        help="run queued projects (SENTIENT_QUEUE_URL) for the web processes",
        description="Take projects from the job queue at SENTIENT_QUEUE_URL and run them, sending live updates "
        "through SENTIENT_REDIS_URL. SIGTERM hands the running projects back to the queue.",
    )
    worker.add_argument("--jobs", type=_positive, default=10, help="most projects run at once (default: 10)")
    return worker


def run_worker(args: argparse.Namespace, settings: Settings) -> int:
    """Run the worker until SIGTERM or SIGINT. Raises ConfigError for a missing or unreachable queue."""
    from sentient_server.config import ServerSettings
    from sentient_server.queue_worker import work

    return work(ServerSettings.from_env(sentient=settings), jobs=args.jobs)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value
